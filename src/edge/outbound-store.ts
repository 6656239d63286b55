/**
 * Outbound jobs on disk: `outbound/jobs/<name>.json` (the job record: envelope, per-recipient
 * state; never content) and `outbound/mime/<name>.sealed` (the signed message, encrypted, only
 * until every recipient is delivered or bounced). `<name>` is the SHA-256 of the ref, so any ref
 * is a safe file name on every file system (refs differ in case; `.` and `..` are valid refs).
 *
 * Sealed MIME (issue 16 finding 10): AES-256-GCM under a key derived from the edge API token
 * (verp.ts `deriveEdgeKey`), a random 96-bit nonce per file, the ref as associated data (a file
 * moved to another job's name does not open). The file is `MIME_MAGIC ‖ nonce ‖ ciphertext ‖ tag`.
 * A `.eml` left in plaintext by an older edge is sealed at start-up.
 *
 * Every write is temp file + fsync + rename + directory fsync. A new job writes its MIME first and
 * its record last, so a record on disk always has its message.
 *
 * Crash states and what start-up does with them:
 * - `*.tmp` files: a write that never finished → removed.
 * - MIME without a record: `POST /outbound` stopped before the record (never answered) → removed.
 * - a finished record with its MIME: stopped between the last record write and the unlink → MIME removed.
 * - an unfinished record without MIME: cannot happen through the edge; the relay bounces its
 *   remaining recipients when it finds the message missing.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { ensurePrivateDir, fsyncDirectory, fsyncDirectoryAsync, removeIfPresent, writeNewFileSynced } from './durable-files.js';
import { OUTBOUND_RETENTION_MS } from './limits.js';
import { verpId } from './verp.js';

export const RecipientStatus = Type.Union([Type.Literal('queued'), Type.Literal('deferred'), Type.Literal('delivered'), Type.Literal('bounced')]);
export type RecipientStatus = Static<typeof RecipientStatus>;

export const JobStatus = Type.Union([Type.Literal('queued'), Type.Literal('delivering'), Type.Literal('done')]);
export type JobStatus = Static<typeof JobStatus>;

const Time = Type.String();

export const RecipientState = Type.Object({
  /** As the home gave it (case kept); compared lower-cased. */
  address: Type.String(),
  status: RecipientStatus,
  /** The last remote reply code, when there was one. */
  code: Type.Optional(Type.Integer()),
  /** The last remote reply (or why there was none), at most 500 characters. */
  message: Type.Optional(Type.String()),
  /** Attempts made so far. */
  attempts: Type.Integer({ minimum: 0 }),
  /** When the next attempt is due; null once final. */
  next_attempt_at: Type.Union([Time, Type.Null()]),
  /** Local delivery: the buffer key reserved before the first try, so a repeat reuses it. */
  local_key: Type.Optional(Type.String()),
});
export type RecipientState = Static<typeof RecipientState>;

export const OutboundJob = Type.Object({
  version: Type.Literal(1),
  ref: Type.String(),
  mail_from: Type.String(),
  /** Message-ID of the raw message (with brackets). Not used to match reports: every recipient knows it. */
  message_id: Type.Union([Type.String(), Type.Null()]),
  size: Type.Integer({ minimum: 0 }),
  created_at: Time,
  updated_at: Time,
  finished_at: Type.Union([Time, Type.Null()]),
  status: JobStatus,
  recipients: Type.Array(RecipientState),
});
export type OutboundJob = Static<typeof OutboundJob>;

/** What `GET /outbound/{ref}` (and a repeated `POST /outbound`) answers. */
export interface OutboundStatus {
  ref: string;
  status: JobStatus;
  recipients: { address: string; status: RecipientStatus; code?: number; message?: string }[];
}

export interface NewJob {
  ref: string;
  mailFrom: string;
  recipients: string[];
  raw: Buffer;
}

const JOB_SUFFIX = '.json';
const MIME_SUFFIX = '.sealed';
/** Plaintext messages of an edge from before sealing; sealed (or removed) at start-up. */
const LEGACY_MIME_SUFFIX = '.eml';
const TEMP_SUFFIX = '.tmp';

/** First bytes of a sealed message file: format and version. */
const MIME_MAGIC = Buffer.from('svc-outbound-mime-v1\n', 'latin1');
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** Thrown by `readMime` when the file does not open (damaged, or sealed under another token's key). */
export class SealedMimeUnreadable extends Error {
  override name = 'SealedMimeUnreadable';
}

/** Encrypts a message for the job `ref` (see the module comment for the format). */
export function sealMime(key: Buffer, ref: string, raw: Buffer): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(ref, 'utf8'));
  const body = Buffer.concat([cipher.update(raw), cipher.final()]);
  return Buffer.concat([MIME_MAGIC, nonce, body, cipher.getAuthTag()]);
}

/** Decrypts what `sealMime` made for the same key and ref; throws SealedMimeUnreadable otherwise. */
export function openMime(key: Buffer, ref: string, sealed: Buffer): Buffer {
  const head = MIME_MAGIC.length + NONCE_BYTES;
  if (sealed.length < head + TAG_BYTES || !sealed.subarray(0, MIME_MAGIC.length).equals(MIME_MAGIC)) throw new SealedMimeUnreadable('not a sealed message file');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(MIME_MAGIC.length, head));
    decipher.setAAD(Buffer.from(ref, 'utf8'));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(head, sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new SealedMimeUnreadable('the sealed message does not open with this key');
  }
}

export function jobStatus(job: OutboundJob): OutboundStatus {
  return {
    ref: job.ref,
    status: job.status,
    recipients: job.recipients.map((r) => ({
      address: r.address,
      status: r.status,
      ...(r.code !== undefined ? { code: r.code } : {}),
      ...(r.message !== undefined ? { message: r.message } : {}),
    })),
  };
}

export function isFinal(status: RecipientStatus): boolean {
  return status === 'delivered' || status === 'bounced';
}

/** The Message-ID header of a raw message (first occurrence, unfolded), or null. */
export function headerMessageId(raw: Buffer): string | null {
  const head = raw.subarray(0, Math.min(raw.length, 256 * 1024)).toString('latin1');
  const end = head.search(/\r?\n\r?\n/);
  const unfolded = (end === -1 ? head : head.slice(0, end)).replace(/\r?\n[ \t]+/g, ' ');
  const match = /^message-id[ \t]*:[ \t]*(<[^<>\s]+>)/im.exec(unfolded);
  return match ? match[1] : null;
}

export class OutboundStore {
  readonly jobsDir: string;
  readonly mimeDir: string;
  private readonly jobs = new Map<string, OutboundJob>();
  /** VERP id (verp.ts) → refs, so a report to a tagged return path finds its job. */
  private readonly refsByVerpId = new Map<string, Set<string>>();
  /** Refs whose first write is in progress: a concurrent repeat waits for it. */
  private readonly creating = new Map<string, Promise<OutboundJob>>();
  /** Per-ref chain of record writes, so the newest state is always the one on disk. */
  private readonly writes = new Map<string, Promise<void>>();

  constructor(
    outboundDir: string,
    /** AES-256 key the queued messages are sealed with (derived from the API token by the edge). */
    private readonly mimeKey: Buffer,
    private readonly now: () => number = Date.now,
  ) {
    this.jobsDir = path.join(outboundDir, 'jobs');
    this.mimeDir = path.join(outboundDir, 'mime');
  }

  open(): void {
    ensurePrivateDir(this.jobsDir);
    ensurePrivateDir(this.mimeDir);
    /** File stems of jobs that still need their message → their ref. */
    const unfinished = new Map<string, string>();
    for (const name of fs.readdirSync(this.jobsDir)) {
      const file = path.join(this.jobsDir, name);
      if (name.endsWith(TEMP_SUFFIX)) fs.rmSync(file, { force: true });
      else if (name.endsWith(JOB_SUFFIX)) {
        const job = readJob(file);
        if (!job || fileName(job.ref) !== name.slice(0, -JOB_SUFFIX.length)) continue;
        this.index(job);
        if (job.status !== 'done') unfinished.set(fileName(job.ref), job.ref);
      }
    }
    for (const name of fs.readdirSync(this.mimeDir)) {
      const file = path.join(this.mimeDir, name);
      const legacyRef = name.endsWith(LEGACY_MIME_SUFFIX) ? unfinished.get(name.slice(0, -LEGACY_MIME_SUFFIX.length)) : undefined;
      if (legacyRef !== undefined) this.sealLegacy(legacyRef, file);
      else if (!(name.endsWith(MIME_SUFFIX) && unfinished.has(name.slice(0, -MIME_SUFFIX.length)))) fs.rmSync(file, { force: true });
    }
  }

  /** Seals a plaintext `.eml` an older edge queued (temp + fsync + rename), then removes the plaintext. */
  private sealLegacy(ref: string, file: string): void {
    const target = this.mimePath(ref);
    const temp = target + TEMP_SUFFIX;
    fs.writeFileSync(temp, sealMime(this.mimeKey, ref, fs.readFileSync(file)), { mode: 0o600 });
    const fd = fs.openSync(temp, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temp, target);
    fs.rmSync(file, { force: true });
    fsyncDirectory(this.mimeDir);
  }

  get(ref: string): OutboundJob | null {
    return this.jobs.get(ref) ?? null;
  }

  /** Jobs whose ref has this VERP id (usually one; the caller checks the MAC of each). */
  byVerpId(id: string): OutboundJob[] {
    return [...(this.refsByVerpId.get(id) ?? [])].map((ref) => this.jobs.get(ref)).filter((j): j is OutboundJob => j !== undefined);
  }

  /** Jobs with recipients still to deliver. */
  unfinished(): OutboundJob[] {
    return [...this.jobs.values()].filter((j) => j.status !== 'done');
  }

  /**
   * Writes a new job durably (MIME, then record). Idempotent on the ref: an existing job (or one
   * being written) is returned with `created: false` and nothing is written.
   */
  async create(input: NewJob): Promise<{ created: boolean; job: OutboundJob }> {
    const existing = this.jobs.get(input.ref);
    if (existing) return { created: false, job: existing };
    const inFlight = this.creating.get(input.ref);
    if (inFlight) return { created: false, job: await inFlight };
    const at = new Date(this.now()).toISOString();
    const job: OutboundJob = {
      version: 1,
      ref: input.ref,
      mail_from: input.mailFrom,
      message_id: headerMessageId(input.raw),
      size: input.raw.length,
      created_at: at,
      updated_at: at,
      finished_at: null,
      status: 'queued',
      recipients: input.recipients.map((address) => ({ address, status: 'queued', attempts: 0, next_attempt_at: at })),
    };
    const writing = this.writeNew(job, input.raw).then(() => job);
    this.creating.set(input.ref, writing);
    try {
      await writing;
    } finally {
      this.creating.delete(input.ref);
    }
    this.index(job);
    return { created: true, job };
  }

  /** Persists the job's current state (serialized per job; the latest state wins). */
  save(job: OutboundJob): Promise<void> {
    job.updated_at = new Date(this.now()).toISOString();
    const previous = this.writes.get(job.ref) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.writeRecord(job, JSON.stringify(job) + '\n'));
    this.writes.set(job.ref, next);
    void next.finally(() => {
      if (this.writes.get(job.ref) === next) this.writes.delete(job.ref);
    }).catch(() => undefined);
    return next;
  }

  /** The queued message of `ref`, opened; throws when it is missing or does not open. */
  async readMime(ref: string): Promise<Buffer> {
    return openMime(this.mimeKey, ref, await fsp.readFile(this.mimePath(ref)));
  }

  /** Deletes the message of a finished job: queued mail stays on disk no longer than needed. */
  async removeMime(ref: string): Promise<void> {
    await removeIfPresent(this.mimePath(ref));
  }

  /** Drops finished records older than the retention. */
  async prune(): Promise<void> {
    const cutoff = this.now() - OUTBOUND_RETENTION_MS;
    for (const job of [...this.jobs.values()]) {
      if (job.status !== 'done' || job.finished_at === null || Date.parse(job.finished_at) >= cutoff) continue;
      await removeIfPresent(this.jobPath(job.ref));
      await removeIfPresent(this.mimePath(job.ref));
      this.unindex(job);
    }
  }

  /** Waits for record writes in flight (used on stop). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.creating.values(), ...this.writes.values()]);
  }

  private async writeNew(job: OutboundJob, raw: Buffer): Promise<void> {
    const mime = this.mimePath(job.ref);
    const temp = mime + TEMP_SUFFIX;
    try {
      await removeIfPresent(temp);
      await writeNewFileSynced(temp, sealMime(this.mimeKey, job.ref, raw));
      await fsp.rename(temp, mime);
      await fsyncDirectoryAsync(this.mimeDir);
      await this.writeRecord(job, JSON.stringify(job) + '\n');
    } catch (err) {
      await Promise.all([temp, mime, this.jobPath(job.ref)].map((f) => removeIfPresent(f).catch(() => false)));
      throw err;
    }
  }

  private async writeRecord(job: OutboundJob, text: string): Promise<void> {
    const file = this.jobPath(job.ref);
    const temp = file + TEMP_SUFFIX;
    await removeIfPresent(temp);
    await writeNewFileSynced(temp, text);
    await fsp.rename(temp, file);
    await fsyncDirectoryAsync(this.jobsDir);
  }

  private index(job: OutboundJob): void {
    this.jobs.set(job.ref, job);
    const id = verpId(job.ref);
    let refs = this.refsByVerpId.get(id);
    if (!refs) this.refsByVerpId.set(id, (refs = new Set()));
    refs.add(job.ref);
  }

  private unindex(job: OutboundJob): void {
    this.jobs.delete(job.ref);
    const id = verpId(job.ref);
    const refs = this.refsByVerpId.get(id);
    refs?.delete(job.ref);
    if (refs && refs.size === 0) this.refsByVerpId.delete(id);
  }

  private jobPath(ref: string): string {
    return path.join(this.jobsDir, fileName(ref) + JOB_SUFFIX);
  }

  private mimePath(ref: string): string {
    return path.join(this.mimeDir, fileName(ref) + MIME_SUFFIX);
  }
}

function fileName(ref: string): string {
  return createHash('sha256').update(ref).digest('hex');
}

function readJob(file: string): OutboundJob | null {
  try {
    const parsed: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
    return Value.Check(OutboundJob, parsed) ? parsed : null;
  } catch {
    return null;
  }
}
