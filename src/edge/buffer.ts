/**
 * The sealed buffer on disk: `objects/<key>.jwe` (one compact JWE per accepted message) and
 * `queue/<key>.json` (its queue entry). A message is committed — and only then answered 250 —
 * once both files are written, fsynced, renamed into place and both directories fsynced.
 *
 * Commits are grouped: concurrent SMTP sessions share one round of directory fsyncs, and keys
 * are issued per group in the order files become visible, so a listing is always a prefix of
 * key order and `after=<last key>` never skips an object — except one stored under a key reserved
 * earlier (`reserveKey`), which can land behind it; the home looks behind its cursor for those.
 *
 * Crash states and what start-up does with them:
 * - `*.tmp` files: a commit that never finished (never answered 250) → removed.
 * - a queue entry without its object: the commit stopped between the two renames, or a delete
 *   stopped between its two unlinks → the entry is removed (the object was never acknowledged
 *   or was already deleted).
 * - an object without a queue entry: the home deleted only the entry (`DELETE /queue/{key}`) → kept.
 */
import { BINARY_SEAL_MIN_BYTES, isBinarySealed, SEALED_V2_MAGIC } from './sealed.js';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Type, type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import { ensurePrivateDir, fsyncDirectoryAsync, removeIfPresent, writeNewFileSynced } from './durable-files.js';
import { isObjectKey, ObjectKeyClock } from './object-key.js';

/** A queue entry: metadata only, never message content. */
export const QueueEntry = Type.Object({
  key: Type.String(),
  /** Bytes of the sealed object. */
  size: Type.Integer({ minimum: 0 }),
  received_at: Type.String(),
  recipients: Type.Array(Type.String()),
  /** The `kid` the object was sealed to (the home's key thumbprint). */
  key_id: Type.String(),
});
export type QueueEntry = Static<typeof QueueEntry>;
const queueEntry = Compile(QueueEntry);

export interface ObjectSummary {
  key: string;
  size: number;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

interface PendingCommit {
  /** A key reserved earlier (`reserveKey`), else one is issued at write time. */
  key?: string;
  /** The compact JWE, as bytes for mail the edge sealed (no string of a large message). */
  /** The sealed object: text, bytes, or parts written one after another (src/edge/sealed.ts sealInboundInPlace). */
  jwe: string | Buffer | readonly Buffer[];
  receivedAt: string;
  recipients: string[];
  keyId: string;
  resolve: (key: string) => void;
  reject: (err: unknown) => void;
}

interface Waiter {
  resolve: (available: boolean) => void;
  timer: NodeJS.Timeout;
}

const OBJECT_SUFFIX = '.jwe';
/**
 * Sealed objects up to this size stay in memory after their commit, up to RECENT_MAX_BYTES in all
 * (oldest dropped first), so the in-process home's fetch right after (src/edge/local-handover.ts)
 * is answered without reading the file back. They are the sealed bytes the file holds: nothing
 * the edge can read. The HTTP API reads the files, as a home elsewhere gets what is on disk.
 */
const RECENT_MAX_OBJECT_BYTES = 256 * 1024;
const RECENT_MAX_BYTES = 8 * 1024 * 1024;
const ENTRY_SUFFIX = '.json';
const TEMP_SUFFIX = '.tmp';

export class SealedBuffer {
  readonly objectsDir: string;
  readonly queueDir: string;
  private readonly clock = new ObjectKeyClock();
  /** Committed objects in key order, with their sizes. */
  private readonly objectKeys: string[] = [];
  private readonly objectSizes = new Map<string, number>();
  private readonly entries = new Map<string, QueueEntry>();
  private readonly entryKeys: string[] = [];
  private pending: PendingCommit[] = [];
  private flushing: Promise<void> | null = null;
  private readonly waiters = new Set<Waiter>();
  /** Recently committed small objects by key, oldest first (see RECENT_MAX_BYTES). */
  private readonly recent = new Map<string, Buffer>();
  private recentBytes = 0;

  constructor(dataDir: string) {
    this.objectsDir = path.join(dataDir, 'objects');
    this.queueDir = path.join(dataDir, 'queue');
  }

  /** Creates the directories, applies the crash rules above and loads the index. */
  open(): void {
    ensurePrivateDir(this.objectsDir);
    ensurePrivateDir(this.queueDir);
    for (const name of fs.readdirSync(this.objectsDir)) {
      const file = path.join(this.objectsDir, name);
      if (name.endsWith(TEMP_SUFFIX)) fs.rmSync(file, { force: true });
      else if (name.endsWith(OBJECT_SUFFIX) && isObjectKey(name.slice(0, -OBJECT_SUFFIX.length))) {
        this.objectSizes.set(name.slice(0, -OBJECT_SUFFIX.length), fs.statSync(file).size);
      }
    }
    for (const name of fs.readdirSync(this.queueDir)) {
      const file = path.join(this.queueDir, name);
      const key = name.slice(0, -ENTRY_SUFFIX.length);
      if (name.endsWith(TEMP_SUFFIX)) fs.rmSync(file, { force: true });
      else if (name.endsWith(ENTRY_SUFFIX) && isObjectKey(key)) {
        const entry = readEntry(file);
        if (!this.objectSizes.has(key) || !entry || entry.key !== key) fs.rmSync(file, { force: true });
        else this.entries.set(key, entry);
      }
    }
    this.objectKeys.push(...[...this.objectSizes.keys()].sort());
    this.entryKeys.push(...[...this.entries.keys()].sort());
    const newest = this.objectKeys.at(-1);
    if (newest) this.clock.observe(newest);
  }

  /**
   * Writes one sealed object and its queue entry durably; resolves with the key once both are on
   * disk. With `key` (from `reserveKey`) the write is idempotent: an object already stored under
   * it is not written again.
   */
  commit(jwe: string | Buffer | readonly Buffer[], meta: { receivedAt: string; recipients: string[]; keyId: string; key?: string }): Promise<string> {
    if (meta.key !== undefined && this.objectSizes.has(meta.key)) return Promise.resolve(meta.key);
    return new Promise<string>((resolve, reject) => {
      this.pending.push({ jwe, ...meta, resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  /**
   * Issues a key now for a commit made later (the relay's local delivery saves it first, so a
   * repeat after a crash reuses it). Objects committed under it sort by this moment, not by the commit.
   */
  reserveKey(): string {
    return this.clock.next();
  }

  /** Waits for commits already accepted by `commit` (used on stop). */
  async settle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /**
   * Drains `pending` group by group. `flushing` is cleared in the same synchronous step as the
   * final emptiness check, so a commit arriving after it always starts a new flush.
   */
  private async flush(): Promise<void> {
    try {
      while (this.pending.length > 0) await this.commitGroup();
    } finally {
      this.flushing = null;
    }
  }

  /** One group: write and fsync temps, rename entries, fsync, rename objects, fsync, then answer. */
  private async commitGroup(): Promise<void> {
    const group = this.pending;
    this.pending = [];
    const keys = group.map((c) => c.key ?? this.clock.next());
    const files = keys.map((key) => ({
      object: this.objectPath(key),
      entry: this.entryPath(key),
      objectTemp: this.objectPath(key) + TEMP_SUFFIX,
      entryTemp: this.entryPath(key) + TEMP_SUFFIX,
    }));
    const entries: QueueEntry[] = group.map((c, i) => ({
      key: keys[i],
      size: typeof c.jwe === 'string' || Buffer.isBuffer(c.jwe) ? Buffer.byteLength(c.jwe) : c.jwe.reduce((n, part) => n + part.length, 0),
      received_at: c.receivedAt,
      recipients: c.recipients,
      key_id: c.keyId,
    }));
    try {
      await Promise.all(
        group.flatMap((c, i) => [writeNewFileSynced(files[i].objectTemp, c.jwe), writeNewFileSynced(files[i].entryTemp, JSON.stringify(entries[i]) + '\n')]),
      );
      // Entries first, objects last: an object is visible only with its entry already durable.
      // Renames inside one directory don't depend on each other; only the fsync orders them.
      await Promise.all(files.map((f) => fsp.rename(f.entryTemp, f.entry)));
      await fsyncDirectoryAsync(this.queueDir);
      await Promise.all(files.map((f) => fsp.rename(f.objectTemp, f.object)));
      await fsyncDirectoryAsync(this.objectsDir);
    } catch (err) {
      // None of the group was answered 250, so none of it may stay behind half-written.
      await Promise.all(files.flatMap((f) => [f.objectTemp, f.entryTemp, f.object, f.entry]).map((file) => removeIfPresent(file).catch(() => false)));
      for (const c of group) c.reject(err);
      return;
    }
    for (const [i, key] of keys.entries()) {
      if (!this.objectSizes.has(key)) insertSorted(this.objectKeys, key);
      this.objectSizes.set(key, entries[i].size);
      if (!this.entries.has(key)) insertSorted(this.entryKeys, key);
      this.entries.set(key, entries[i]);
      this.remember(key, group[i].jwe);
      group[i].resolve(key);
    }
    this.wakeWaiters();
  }

  /** Keeps a small object just committed in memory for the fetch that follows (RECENT_MAX_BYTES). */
  private remember(key: string, jwe: string | Buffer | readonly Buffer[]): void {
    const bytes = typeof jwe === 'string' ? null : Buffer.isBuffer(jwe) ? jwe : jwe.length === 1 ? jwe[0] : null;
    if (bytes === null || bytes.length > RECENT_MAX_OBJECT_BYTES || this.recent.has(key)) return;
    this.recent.set(key, bytes);
    this.recentBytes += bytes.length;
    for (const [old, held] of this.recent) {
      if (this.recentBytes <= RECENT_MAX_BYTES) break;
      this.recent.delete(old);
      this.recentBytes -= held.length;
    }
  }

  private forget(key: string): void {
    const held = this.recent.get(key);
    if (held === undefined) return;
    this.recent.delete(key);
    this.recentBytes -= held.length;
  }

  listObjects(after: string | null, limit: number): Page<ObjectSummary> {
    const keys = pageOf(this.objectKeys, after, limit);
    return { items: keys.items.map((key) => ({ key, size: this.objectSizes.get(key) ?? 0 })), hasMore: keys.hasMore };
  }

  listEntries(after: string | null, limit: number): Page<QueueEntry> {
    const keys = pageOf(this.entryKeys, after, limit);
    return { items: keys.items.map((key) => this.entries.get(key)!), hasMore: keys.hasMore };
  }

  hasObject(key: string): boolean {
    return this.objectSizes.has(key);
  }

  /** The sealed object's bytes as stored, or null when there is none. */
  async readObject(key: string): Promise<Buffer | null> {
    if (!this.objectSizes.has(key)) return null;
    try {
      return await fsp.readFile(this.objectPath(key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  /** The object's file opened for reading, or null when it is gone (a delete won the race). */
  private async openObjectFile(key: string): Promise<fsp.FileHandle | null> {
    try {
      return await fsp.open(this.objectPath(key), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  /** Whether the stored object is a binary (v2) one, from its first bytes; false when it is gone. */
  private async objectIsBinary(key: string): Promise<boolean> {
    const handle = await this.openObjectFile(key);
    if (handle === null) return false;
    try {
      return await startsBinary(handle);
    } finally {
      await handle.close();
    }
  }

  /**
   * The sealed object as a byte stream with its size, or null when there is none: the API sends a
   * large object from the file as it reads it instead of holding it (and a string of it) in memory
   * (issue 16, finding 9). The open file stays readable if the object is deleted meanwhile.
   */
  async openObjectStream(key: string): Promise<{ stream: fs.ReadStream; size: number; binary: boolean } | null> {
    if (!this.objectSizes.has(key)) return null;
    const handle = await this.openObjectFile(key);
    if (handle === null) return null;
    try {
      const { size } = await handle.stat();
      return { stream: handle.createReadStream({ autoClose: true, start: 0 }), size, binary: await startsBinary(handle) };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /** The keys one batch reads, in order, until their stored sizes pass `maxBytes` (the first present one always); absent keys `missing`, the rest `deferred`. */
  private chooseBySize(keys: string[], maxBytes: number): { chosen: string[]; missing: string[]; deferred: string[] } {
    const chosen: string[] = [];
    const missing: string[] = [];
    const deferred: string[] = [];
    let bytes = 0;
    for (const key of keys) {
      const size = this.objectSizes.get(key);
      if (size === undefined) missing.push(key);
      else if (chosen.length > 0 && bytes + size > maxBytes) deferred.push(key);
      else {
        chosen.push(key);
        bytes += size;
      }
    }
    return { chosen, missing, deferred };
  }

  /**
   * Several sealed objects in key order of the request, for one batch answer: objects are read
   * until their stored sizes pass `maxBytes` (the first present one is always read, so a caller
   * always makes progress); keys with no object are `missing`, keys left out for size `deferred`,
   * and binary (v2) objects, which JSON cannot carry as text, `separate`: fetch each on its own.
   */
  async readObjects(keys: string[], maxBytes: number): Promise<{ objects: { key: string; jwe: string }[]; missing: string[]; deferred: string[]; separate: string[] }> {
    const { chosen, missing, deferred } = this.chooseBySize(keys, maxBytes);
    const separate: string[] = [];
    // Only an object over BINARY_SEAL_MIN_BYTES can be v2; its first bytes say so, and it is never read whole here.
    const mayBeBinary = (key: string) => (this.objectSizes.get(key) ?? 0) > BINARY_SEAL_MIN_BYTES;
    const read = await Promise.all(
      chosen.map(async (key) => (mayBeBinary(key) && (await this.objectIsBinary(key)) ? { key, binary: true as const } : { key, binary: false as const, bytes: await this.readObject(key) })),
    );
    const objects: { key: string; jwe: string }[] = [];
    for (const o of read) {
      if (o.binary) separate.push(o.key);
      // Deleted between the index check and the read: as absent as if it had never been listed.
      else if (o.bytes === null) missing.push(o.key);
      else if (isBinarySealed(o.bytes)) separate.push(o.key);
      else objects.push({ key: o.key, jwe: o.bytes.toString('utf8') });
    }
    return { objects, missing, deferred, separate };
  }

  /**
   * Several sealed objects as stored bytes, in key order of the request, for the in-process
   * hand-over (src/edge/local-handover.ts): read until their sizes pass `maxBytes` (the first
   * present one always), keys with no object `missing`, keys left out for size `deferred`.
   */
  async readObjectBytes(keys: string[], maxBytes: number): Promise<{ objects: { key: string; bytes: Buffer }[]; missing: string[]; deferred: string[] }> {
    const { chosen, missing, deferred } = this.chooseBySize(keys, maxBytes);
    const read = await Promise.all(chosen.map(async (key) => ({ key, bytes: this.recent.get(key) ?? (await this.readObject(key)) })));
    const objects: { key: string; bytes: Buffer }[] = [];
    for (const o of read) {
      if (o.bytes === null) missing.push(o.key);
      else objects.push({ key: o.key, bytes: o.bytes });
    }
    return { objects, missing, deferred };
  }

  /** Deletes several objects with their queue entries (see deleteObject); reports which keys had an object. */
  async deleteObjects(keys: string[]): Promise<{ deleted: string[]; absent: string[] }> {
    const deleted: string[] = [];
    const absent: string[] = [];
    for (const key of keys) (this.objectSizes.has(key) ? deleted : absent).push(key);
    await Promise.all(keys.map((key) => this.deleteObject(key)));
    return { deleted, absent };
  }

  entry(key: string): QueueEntry | null {
    return this.entries.get(key) ?? null;
  }

  /**
   * Deletes an object and its queue entry; idempotent. The object goes first so an interrupted
   * delete leaves only an entry, which start-up removes. Not fsynced: a delete undone by a crash
   * shows the object again and the home, idempotent on the key, deletes it again.
   */
  async deleteObject(key: string): Promise<void> {
    this.forget(key);
    await removeIfPresent(this.objectPath(key));
    removeSorted(this.objectKeys, key);
    this.objectSizes.delete(key);
    await this.deleteEntry(key);
  }

  /** Deletes only the queue entry; the object (if any) stays listed. Idempotent. */
  async deleteEntry(key: string): Promise<void> {
    await removeIfPresent(this.entryPath(key));
    removeSorted(this.entryKeys, key);
    this.entries.delete(key);
  }

  /** The newest object key, or null when the buffer is empty. */
  get latest(): string | null {
    return this.objectKeys.at(-1) ?? null;
  }

  /**
   * True at once when an object newer than `after` exists; otherwise when any object lands (also
   * one under a reserved key that sorts before `after`: the caller then looks from the start of
   * the buffer, docs/edge.md), or false at timeout.
   */
  waitForNewer(after: string | null, timeoutMs: number, cancelled: Promise<void>): Promise<boolean> {
    const since = after ?? '';
    if ((this.latest ?? '') > since) return Promise.resolve(true);
    if (timeoutMs <= 0) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        timer: setTimeout(() => finish(false), timeoutMs),
        resolve: (available) => finish(available),
      };
      const finish = (available: boolean) => {
        if (!this.waiters.delete(waiter)) return;
        clearTimeout(waiter.timer);
        resolve(available);
      };
      this.waiters.add(waiter);
      void cancelled.then(() => finish(false));
    });
  }

  /** Answers every pending long-poll now (with "nothing new"), e.g. when the edge stops. */
  releaseWaiters(): void {
    for (const w of [...this.waiters]) w.resolve(false);
  }

  /** After a commit: every waiter learns that an object landed, newer than its `after` or not. */
  private wakeWaiters(): void {
    for (const w of [...this.waiters]) w.resolve(true);
  }

  private objectPath(key: string): string {
    return path.join(this.objectsDir, key + OBJECT_SUFFIX);
  }

  private entryPath(key: string): string {
    return path.join(this.queueDir, key + ENTRY_SUFFIX);
  }
}

function readEntry(file: string): QueueEntry | null {
  try {
    const parsed: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
    return queueEntry.Check(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/** First index whose key sorts after `after`. */
function firstAfter(keys: string[], after: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid] <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function pageOf(keys: string[], after: string | null, limit: number): Page<string> {
  const start = after === null ? 0 : firstAfter(keys, after);
  return { items: keys.slice(start, start + limit), hasMore: start + limit < keys.length };
}

/** Appends in the common case (a new newest key); a reserved, older key goes to its place. */
function insertSorted(keys: string[], key: string): void {
  if (keys.length === 0 || keys[keys.length - 1] < key) keys.push(key);
  else keys.splice(firstAfter(keys, key), 0, key);
}

function removeSorted(keys: string[], key: string): void {
  const i = firstAfter(keys, key) - 1;
  if (i >= 0 && keys[i] === key) keys.splice(i, 1);
}

/** Whether an open object file starts with the v2 magic (reads only those bytes). */
async function startsBinary(handle: fsp.FileHandle): Promise<boolean> {
  const lead = Buffer.alloc(SEALED_V2_MAGIC.length);
  const { bytesRead } = await handle.read(lead, 0, lead.length, 0);
  return isBinarySealed(lead.subarray(0, bytesRead));
}
