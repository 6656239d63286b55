/**
 * One edge object → local mail (spec §1.3, ARCHITECTURE §6): fetch, open and parse in the pool,
 * apply the receive lists and verdicts, commit, and only then delete it at the edge. Idempotent
 * on the object key: a crash between commit and delete neither loses nor duplicates mail,
 * because each recipient's commit is keyed `<object key>:<inbox>` and is skipped when present.
 */
import { domainToASCII } from 'node:url';
import { BINARY_SEAL_MIN_BYTES } from '../edge/sealed-sizes.js';
import { isBusyError, type Db } from '../db/open.js';
import { commitInbound } from '../mail/store.js';
import { senderVerdicts } from '../mail/correspondents.js';
import type { ManipulationVerdict } from '../mail/manipulation.js';
import { listVerdict } from '../mail/lists.js';
import type { InboundAuth } from '../edge/sealed.js';
import type { OpenedInbound } from '../../workers/pool/tasks.js';
import type { EdgeObjects } from './edge-client.js';
import { quarantine, quarantineByKey } from './quarantine.js';
import { recordRejection } from './rejections.js';
import { commitKey, isCommitHandled } from './commit-keys.js';
import { COLLECT_AFTER_BYTES, collectGarbageSoon } from '../core/gc.js';
import { inboxExists } from '../auth/inbox-lookup.js';
import { isSelftestRecipient, receiveSelftest } from '../domains/store.js';
import { claimSeen, contentHash, seenRecently } from './dedup.js';

export interface IngestDeps {
  db: Db;
  /** The edge this object came from: it is fetched there and acknowledged (deleted) there only. */
  edge: EdgeObjects;
  /** Opens and parses (a compact JWE as text, or its bytes); rejects with Error(message = reason code). */
  open(sealed: string | Uint8Array): Promise<OpenedInbound>;
  /** Publishes an appended event's seq after its commit. */
  publish(seq: number): void;
  /** Called between the durable commit and the edge delete (the crash window tests aim at). */
  beforeDelete?: () => void;
}

export type IngestResult =
  | { outcome: 'committed' }
  | { outcome: 'gone' }
  | { outcome: 'skipped_quarantined' }
  | { outcome: 'failed'; reason: string };

const FAILED_SPF = new Set(['fail', 'softfail', 'permerror']);

/** DMARC failed, or SPF and DKIM both failed where the domain publishes no DMARC policy (ARCHITECTURE §5). */
export function isUnauthenticated(auth: InboundAuth): boolean {
  if (auth.dmarc.result === 'fail') return true;
  return auth.dmarc.policy === null && FAILED_SPF.has(auth.spf.result) && auth.dkim.result !== 'pass';
}

/** The ASCII (punycode) form of a domain, lower-cased; '' when it is not a valid one. */
const asciiDomain = (domain: string): string => domainToASCII(domain.trim().toLowerCase().replace(/\.$/, ''));

/**
 * Whether `authenticated` vouches for `from` in DMARC's relaxed sense, approximated without the
 * public suffix list: the same domain, or one a subdomain of the other, the parent having at least
 * two labels (so `co.uk` or `test` vouches for nothing).
 */
function aligned(authenticated: string | null, from: string): boolean {
  if (!authenticated || !from) return false;
  const a = asciiDomain(authenticated);
  if (a === from) return true;
  const [parent, child] = a.length < from.length ? [a, from] : [from, a];
  return parent.includes('.') && child.endsWith(`.${parent}`);
}

/**
 * Whether the From address of a received message is authenticated: DMARC passed for its domain,
 * or, where DMARC gave no verdict (no policy, or a DNS error), a DKIM signature or SPF passed for
 * a domain aligned with it. Only such a sender becomes a known correspondent
 * (src/mail/correspondents.ts): anyone can write any From, and a forged one must not make an
 * address "known" to the guarded send policy or a domain a reference for the lookalike check
 * (docs/guarded.md).
 */
export function isAuthenticatedSender(auth: InboundAuth, fromAddress: string | null | undefined): boolean {
  const at = fromAddress ? fromAddress.lastIndexOf('@') : -1;
  const from = at >= 0 ? asciiDomain(fromAddress!.slice(at + 1)) : '';
  if (from === '') return false;
  // mailauth reports the DMARC domain as the From domain's organizational domain.
  if (auth.dmarc.result === 'pass') return aligned(auth.dmarc.domain, from);
  if (auth.dmarc.result === 'fail') return false;
  if (auth.dkim.signatures.some((s) => s.result === 'pass' && s.aligned && aligned(s.domain, from))) return true;
  return auth.spf.result === 'pass' && aligned(auth.spf.domain, from);
}

/**
 * SQLite codes that say the database could not be written right now (another writer, a full
 * disk, an I/O error), not that the message is bad. The objects stay at the edge and are
 * committed on a later pass; such a failure is never a quarantine reason.
 */
const STORAGE_TROUBLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|NOMEM|PROTOCOL|CORRUPT|NOTADB)/;

export function isStorageTrouble(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return isBusyError(err) || (typeof code === 'string' && STORAGE_TROUBLE.test(code));
}

/** The commit of a page could not be written now; its objects stay at the edge for a later pass. */
export class CommitDeferred extends Error {
  constructor(readonly reason: 'storage_busy' | 'storage_failure') {
    super(reason);
  }
}

/** One stderr line per failed commit: our reason code and a count, never content or SQLite details (docs/reliability.md). */
function logCommitFailure(reason: 'storage_busy' | 'storage_failure' | 'commit_failed', objects: number): void {
  process.stderr.write(`${JSON.stringify({ event: 'inbound.commit_failed', reason, objects })}\n`);
}

function deferral(err: unknown): CommitDeferred {
  return new CommitDeferred(isBusyError(err) ? 'storage_busy' : 'storage_failure');
}

/** The recipients' inboxes of an opened object, lower-cased, once each. */
const recipientInboxes = (opened: OpenedInbound) => new Set(opened.envelope.rcpt_to.map((r) => r.toLowerCase()));

/**
 * Each recipient inbox's manipulation verdict (the sender check against its correspondents),
 * computed before the commit's transaction: the sender's domain is a stranger's input.
 */
function verdictsOf(deps: IngestDeps, opened: OpenedInbound, known: Map<string, string[]> = new Map()): Map<string, ManipulationVerdict> {
  return senderVerdicts(deps.db, recipientInboxes(opened), opened.derived.manipulation, opened.parsed.from[0]?.address, known);
}

/**
 * What the dedup check needs of an opened object, found before the commit's transaction: its
 * content hash (linear in the message) and the recipients whose copy was already committed
 * within the window (src/inbound/dedup.ts), which the commit skips without a write.
 */
interface Seen {
  hash: string;
  already: Set<string>;
}

function seenOf(deps: IngestDeps, opened: OpenedInbound): Seen {
  const hash = contentHash(opened.raw);
  return { hash, already: new Set([...recipientInboxes(opened)].filter((inbox) => seenRecently(deps.db, hash, inbox))) };
}

/**
 * Commits every routed recipient of an opened object; returns the event seqs to publish. Throws
 * when a commit fails. A recipient whose copy of the same bytes was committed within the window
 * (another edge delivered it too) is skipped: claimed here, inside the transaction, so two edges'
 * copies racing each other commit once.
 */
function commitRecipients(deps: IngestDeps, objectKey: string, opened: OpenedInbound, verdicts: Map<string, ManipulationVerdict>, seen: Seen): number[] {
  const { db } = deps;
  const seqs: number[] = [];
  const sender = (opened.parsed.from[0]?.address ?? opened.envelope.mail_from).toLowerCase();
  const hiddenBase: ('spam' | 'unauthenticated')[] = [];
  if (opened.spam?.verdict === 'spam') hiddenBase.push('spam');
  if (isUnauthenticated(opened.auth)) hiddenBase.push('unauthenticated');
  const senderAuthenticated = isAuthenticatedSender(opened.auth, opened.parsed.from[0]?.address);

  for (const inboxId of recipientInboxes(opened)) {
    const sourceKey = commitKey(objectKey, inboxId);
    if (isCommitHandled(db, sourceKey)) continue;
    // The domain self-test (docs/domains.md) is consumed here, never stored as mail.
    if (isSelftestRecipient(inboxId)) {
      const seq = receiveSelftest(db, inboxId, opened.parsed.headers);
      if (seq !== null) seqs.push(seq);
      continue;
    }
    // The edge may still route an address the home deleted a moment ago; nothing to store it in.
    if (!inboxExists(db, inboxId)) continue;
    if (seen.already.has(inboxId) || !claimSeen(db, seen.hash, inboxId)) continue; // a copy through another edge (or a repeat) was committed
    const verdict = sender ? listVerdict(db, { inboxId, direction: 'receive', address: sender }) : 'none';
    if (verdict === 'block') {
      recordRejection(db, { sourceKey, inboxId, sender: sender || null, reason: 'receive_block_list', receivedAt: opened.envelope.received_at });
      continue;
    }
    const hiddenLabels = verdict === 'not_allowed' ? ['blocked' as const, ...hiddenBase] : hiddenBase;
    const result = commitInbound(db, {
      inboxId,
      parsed: opened.parsed,
      raw: opened.raw,
      derived: opened.derived,
      attachmentText: opened.attachmentText,
      manipulation: verdicts.get(inboxId),
      sourceKey,
      hiddenLabels,
      senderAuthenticated,
      receivedAt: opened.envelope.received_at,
      auth: opened.auth,
    });
    if (!result.duplicate && result.seq !== null) seqs.push(result.seq);
  }
  return seqs;
}

/**
 * Processes one object. `retry` is the owner's quarantine retry: failures are returned to the
 * caller instead of creating a quarantine item.
 */
export async function ingestObject(deps: IngestDeps, key: string, size: number | null, opts: { retry?: boolean } = {}): Promise<IngestResult> {
  const { db, edge } = deps;
  const held = quarantineByKey(db, key);
  if (!opts.retry && held && held.status !== 'released' && held.status !== 'deleted') return { outcome: 'skipped_quarantined' };

  const sealed = await edge.getObjectBytes(key);
  if (sealed === null) return { outcome: 'gone' };

  let opened: OpenedInbound;
  try {
    opened = await deps.open(sealed);
  } catch (err) {
    return fail(deps, key, size, null, openFailure(err), opts.retry);
  }
  let seqs: number[];
  try {
    const verdicts = verdictsOf(deps, opened);
    const seen = seenOf(deps, opened);
    seqs = db.transaction(() => commitRecipients(deps, key, opened, verdicts, seen))();
  } catch (err) {
    if (isStorageTrouble(err)) {
      const deferred = deferral(err);
      logCommitFailure(deferred.reason, 1);
      throw deferred;
    }
    logCommitFailure('commit_failed', 1);
    return fail(deps, key, size, opened.envelope.rcpt_to[0] ?? null, 'commit_failed', opts.retry);
  }
  for (const seq of seqs) deps.publish(seq);
  deps.beforeDelete?.();
  await edge.deleteObject(key);
  return { outcome: 'committed' };
}

function fail(deps: IngestDeps, key: string, size: number | null, inboxId: string | null, reason: string, retry?: boolean): IngestResult {
  if (!retry) {
    const seq = quarantine(deps.db, { sourceKind: 'buffer_object', sourceKey: key, reasonCode: reason, size, inboxId, attempts: 1 });
    if (seq !== null) deps.publish(seq);
  }
  return { outcome: 'failed', reason };
}

/**
 * The edge listed an object it can no longer produce. If its queue entry is still there the mail
 * was accepted but its ciphertext is lost: keep the metadata as a `queue_message` item.
 */
async function quarantineOrphanEntry(deps: IngestDeps, key: string): Promise<void> {
  const entry = await deps.edge.queueEntry(key);
  if (!entry) return;
  const seq = quarantine(deps.db, { sourceKind: 'queue_message', sourceKey: key, reasonCode: 'object_missing', size: entry.size, inboxId: entry.recipients[0] ?? null, attempts: null });
  if (seq !== null) deps.publish(seq);
}

/**
 * Objects larger than this are not prepared ahead: the pipeline's large-message lane fetches,
 * opens and commits them one at a time, beside the small ones, each alone as bytes (a 25 MB message in the page's JSON
 * batch would be held as response text, parsed JSON and string at once). The size the edge
 * starts sealing binary (v2) objects at, which the batch cannot carry anyway.
 */
export const LARGE_OBJECT_BYTES = BINARY_SEAL_MIN_BYTES;

/** An object of a page: opened (`mail`), or large and left for the committer (`mail` null). */
export interface PreparedObject {
  key: string;
  size: number;
  mail: OpenedInbound | null;
}

/** A page of objects fetched and opened, not yet committed. */
export interface PreparedBatch {
  ready: PreparedObject[];
  /** Objects looked at, not counting ones held in quarantine. */
  processed: number;
}

/**
 * Stage 1 of a page: skip objects held in quarantine, fetch the small ones in one request and
 * open and parse them concurrently. Objects that cannot be opened are quarantined here. Large
 * ones are only listed (`mail` null): holding several of them opened ahead of the committer is
 * what made four 20 MB messages cost gigabytes (issue 16, finding 9).
 */
export async function prepareBatch(deps: IngestDeps, objects: { key: string; size: number }[]): Promise<PreparedBatch> {
  const { db, edge } = deps;
  const pending = objects.filter(({ key }) => {
    const held = quarantineByKey(db, key);
    return !held || held.status === 'released' || held.status === 'deleted';
  });
  if (pending.length === 0) return { ready: [], processed: 0 };
  const small = pending.filter((o) => o.size <= LARGE_OBJECT_BYTES).map((o) => o.key);
  const { objects: fetched, missing } = small.length > 0 ? await edge.fetchObjects(small) : { objects: new Map<string, string | Uint8Array>(), missing: [] };
  for (const key of missing) await quarantineOrphanEntry(deps, key);
  const opened = await Promise.all(
    pending.map(async ({ key, size }): Promise<PreparedObject | null> => {
      if (size > LARGE_OBJECT_BYTES) return { key, size, mail: null };
      const sealed = fetched.get(key);
      if (sealed === undefined) return null;
      fetched.delete(key);
      try {
        return { key, size, mail: await deps.open(sealed) };
      } catch (err) {
        fail(deps, key, size, null, openFailure(err));
        return null;
      }
    }),
  );
  return { ready: opened.filter((o): o is PreparedObject => o !== null), processed: pending.length };
}

/**
 * Stage 2: commits the opened objects of prepared pages in ONE transaction (commitOpened) and
 * returns the keys now durably committed. Large objects (`mail` null) are not committed here: the
 * pipeline hands them to its large-message lane (commitLarge), which runs beside this one, so a
 * message that takes long to parse never holds up the small ones (issue 32). Throws
 * CommitDeferred when the database cannot take the commit now; what committed before that is
 * published and, not deleted, is skipped next pass.
 */
export async function commitBatch(deps: IngestDeps, batch: PreparedBatch): Promise<string[]> {
  return commitOpened(
    deps,
    batch.ready.flatMap((o) => (o.mail === null ? [] : [{ key: o.key, size: o.size, mail: o.mail }])),
  );
}

type Opened = { key: string; size: number; mail: OpenedInbound };

/** The quarantine reason of an opener's failure: its own when it names one, else `open_failed`. */
function openFailure(err: unknown): string {
  const reason = (err as Error).message;
  return reason === 'parse_failed' || reason === 'parse_limit_exceeded' ? reason : 'open_failed';
}

/**
 * Fetches, opens and commits one large object in a transaction of its own; false when it is gone
 * or was quarantined. The pipeline's large-message lane calls it for one object at a time, so the
 * pull loop holds at most one large message in memory.
 */
export async function commitLarge(deps: IngestDeps, { key, size }: { key: string; size: number }): Promise<boolean> {
  // The opener collects once more before parsing (workers/loops/inbound-pull.ts), which frees
  // what an earlier message and this fetch left dead; one collection before the fetch would be a second.
  const huge = size >= COLLECT_AFTER_BYTES;
  try {
    const sealed = await deps.edge.getObjectBytes(key);
    if (sealed === null) {
      await quarantineOrphanEntry(deps, key);
      return false;
    }
    let mail: OpenedInbound;
    try {
      mail = await deps.open(sealed);
    } catch (err) {
      fail(deps, key, size, null, openFailure(err));
      return false;
    }
    return commitOpened(deps, [{ key, size, mail }]).length === 1;
  } finally {
    // Dead once this returns; V8 frees buffers and strings this large only at a full collection,
    // which this thread, idle afterwards, might not run for a long time.
    if (huge) collectGarbageSoon();
  }
}

/**
 * Commits opened objects in ONE transaction (one WAL fsync; each message still gets its own
 * event row in it). The transaction takes the write lock up front and waits for a busy database
 * (src/db/open.ts). A database that still cannot be written throws CommitDeferred: nothing is
 * quarantined, the objects stay at the edge and a later pass commits them. Any other failure
 * falls back to one transaction per object, so only a message that is itself bad is quarantined
 * (`commit_failed`). Returns the keys committed. Listeners only need "the log head moved", so
 * one notice with the highest seq covers them.
 */
function commitOpened(deps: IngestDeps, ready: Opened[]): string[] {
  const { db } = deps;
  if (ready.length === 0) return [];
  let committed = ready;
  let seqs: number[] = [];
  const known = new Map<string, string[]>();
  const verdicts = new Map(ready.map((o) => [o.key, verdictsOf(deps, o.mail, known)]));
  const seen = new Map(ready.map((o) => [o.key, seenOf(deps, o.mail)]));
  try {
    seqs = db.transaction(() => ready.flatMap((o) => commitRecipients(deps, o.key, o.mail, verdicts.get(o.key)!, seen.get(o.key)!)))();
  } catch (err) {
    if (isStorageTrouble(err)) {
      const deferred = deferral(err);
      logCommitFailure(deferred.reason, ready.length);
      throw deferred;
    }
    logCommitFailure('commit_failed', ready.length);
    committed = [];
    for (const o of ready) {
      try {
        seqs.push(...db.transaction(() => commitRecipients(deps, o.key, o.mail, verdicts.get(o.key)!, seen.get(o.key)!))());
        committed.push(o);
      } catch (objectErr) {
        if (isStorageTrouble(objectErr)) {
          // Publish what did commit; the rest waits for the next pass.
          if (seqs.length > 0) deps.publish(Math.max(...seqs));
          const deferred = deferral(objectErr);
          logCommitFailure(deferred.reason, ready.length - committed.length);
          throw deferred;
        }
        logCommitFailure('commit_failed', 1);
        fail(deps, o.key, o.size, o.mail.envelope.rcpt_to[0] ?? null, 'commit_failed');
      }
    }
  }
  if (seqs.length > 0) deps.publish(Math.max(...seqs));
  return committed.map((o) => o.key);
}

/** Stage 3: only after the commit is durable (synchronous=FULL), delete the objects at the edge in one request. */
export async function deleteCommitted(deps: IngestDeps, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  deps.beforeDelete?.();
  await deps.edge.deleteObjects(keys);
}

