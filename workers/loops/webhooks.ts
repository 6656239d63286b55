/**
 * The webhooks loop (spec §8: every second; also woken on new events). Each pass:
 *
 *   wake → the retention pass when due (src/db/retention.ts: the event log, keeping what enabled
 *   webhooks still need, and every other table that would grow) → one step of merging a full
 *   search shard when due (src/db/search-merge.ts) → for every
 *   enabled webhook with new events or a retry that is due and no delivery running, start a
 *   drain → sleep until the next retry is due (at most a second).
 *
 * A drain reads the log forward from the webhook's cursor and POSTs each event that passes the
 * filters, one at a time and in order, so a failing event holds back later ones of that webhook
 * only; drains of different webhooks run concurrently. Every event is filtered by the CREATOR's
 * current scope and permissions (src/events/visibility.ts): a deleted or expired key sees
 * nothing, so nothing is delivered. Delivery is at least once: the cursor is written in batches,
 * so after a crash a receiver may see a few events again (same `webhook-id`).
 */
import { loopPass, type LoopContext } from './run-loop.js';
import { WEBHOOK_DISABLE_AFTER_MS as DISABLE_AFTER_MS, WEBHOOK_RETRY_SCHEDULE_MS as RETRY_SCHEDULE_MS } from '../../src/supervisor/loop-table.js';
import { RetentionSchedule } from '../../src/db/retention.js';
import { ShardMergeSchedule } from '../../src/db/search-merge.js';
import { deliveredPayload, latestSeq, storedEventsAfter, type StoredEventRow } from '../../src/events/log.js';
import { isEventVisible } from '../../src/events/visibility.js';
import { deliver, DELIVERY_TIMEOUT_MS } from '../../src/webhooks/delivery.js';
import { refreshPrincipal } from '../../src/auth/credentials.js';
import type { Principal } from '../../src/auth/principal.js';
import type { Db } from '../../src/db/open.js';
import {
  enabledWebhooks,
  recordDeliveryFailure,
  webhookById,
  webhookHeaders,
  writeCursor,
  writeRecovery,
  type WebhookRow,
} from '../../src/webhooks/repository.js';
import { afterFailedAttempt, type RetryPolicy } from '../../src/webhooks/retry.js';

const READ_BATCH = 200;
/** The cursor is written after this many events or this long, whichever comes first. */
const CURSOR_FLUSH_EVENTS = 500;
const CURSOR_FLUSH_MS = 250;

/** Test-only shortenings (docs/testing.md); unset, the loop-table schedules apply. */
function fromEnv(name: string): number | null {
  const value = Number(process.env[name]);
  return process.env[name] !== undefined && Number.isFinite(value) && value >= 0 ? value : null;
}
const TEST_RETRY_MS = fromEnv('SVC_TEST_WEBHOOK_RETRY_MS');
const RETRY_POLICY: RetryPolicy = {
  retryDelaysMs: TEST_RETRY_MS === null ? RETRY_SCHEDULE_MS : RETRY_SCHEDULE_MS.map(() => TEST_RETRY_MS),
  disableAfterMs: fromEnv('SVC_TEST_WEBHOOK_DISABLE_MS') ?? DISABLE_AFTER_MS,
};
const timeoutMs = fromEnv('SVC_TEST_WEBHOOK_TIMEOUT_MS') ?? DELIVERY_TIMEOUT_MS;
/** Test-only: the retention pass judges ages as if the clock were this far ahead (docs/testing.md). */
const retentionClockAheadMs = fromEnv('SVC_TEST_RETENTION_CLOCK_MS') ?? 0;
/** Lets tests point agent-created webhooks at a loopback receiver; creation still refuses such URLs. */
const unguarded = process.env.SVC_TEST_WEBHOOK_UNGUARDED === '1';

const OWNER: Principal = { kind: 'owner', id: 'owner', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };

/** The creator as it stands now; null once its key is deleted or expired. */
function creatorPrincipal(db: Db, hook: WebhookRow): Principal | null {
  if (hook.owner_kind === 'owner') return OWNER;
  if (hook.creator_id === null) return null;
  return refreshPrincipal(db, { kind: hook.owner_kind, id: hook.creator_id, inboxScope: new Set(), permissions: new Set(), sendPolicy: 'read_only' });
}

/** The webhook's own filters: event types, its pod and pod filter (docs/pods.md), and its inbox (inbox route) or inbox_ids (instance-wide). */
function matcher(hook: WebhookRow): (e: StoredEventRow) => boolean {
  const types = new Set(JSON.parse(hook.event_types) as string[]);
  const inboxes = hook.inbox_scope !== null ? new Set([hook.inbox_scope]) : hook.inbox_ids === null ? null : new Set(JSON.parse(hook.inbox_ids) as string[]);
  const pods = hook.pod_ids === null ? null : new Set(JSON.parse(hook.pod_ids) as string[]);
  const inPod = (e: StoredEventRow) => (hook.pod_id === null || e.pod_id === hook.pod_id) && (pods === null || (e.pod_id !== null && pods.has(e.pod_id)));
  return (e) => types.has(e.event_type) && inPod(e) && (inboxes === null || (e.inbox_id !== null && inboxes.has(e.inbox_id)));
}

/** Records a failed attempt: schedule a retry, drop the delivery after the last one, or disable. */
function recordFailure(db: Db, hook: WebhookRow, seq: number, code: string): void {
  const { firstFailureAt, failure } = afterFailedAttempt(hook, seq, Date.now(), RETRY_POLICY);
  recordDeliveryFailure(db, hook, code, firstFailureAt, failure);
}

/** Delivers one webhook's pending events in order until caught up, a failure, or a change to the webhook. */
async function drain(ctx: LoopContext, webhookId: string): Promise<void> {
  const { db } = ctx;
  let hook = webhookById(db, webhookId);
  if (!hook || hook.enabled !== 1) return;
  const epoch = hook.epoch;
  let cursor = hook.cursor_seq;
  let persisted = cursor;
  let successAt: string | null = null;
  let flushedAt = Date.now();

  /** Writes the cursor; false when the webhook was deleted, disabled or re-enabled meanwhile. */
  const flush = (): boolean => {
    flushedAt = Date.now();
    if (cursor === persisted && successAt === null) return webhookById(db, webhookId)?.epoch === epoch;
    const written = writeCursor(db, webhookId, epoch, cursor, successAt);
    persisted = cursor;
    successAt = null;
    return written;
  };
  // On stop, the progress so far is written before the loop closes the database.
  const onStop = () => flush();
  ctx.stopped.addEventListener('abort', onStop);
  try {
    for (;;) {
      // Stored rows: a received message's bodies are read only for the events this webhook delivers.
      const events = storedEventsAfter(db, cursor, READ_BATCH);
      if (events.length === 0) return void flush();
      // Filters and headers are read per batch, so a PATCH applies to the next batch.
      hook = webhookById(db, webhookId);
      if (!hook || hook.enabled !== 1 || hook.epoch !== epoch) return;
      const matches = matcher(hook);
      const customHeaders = webhookHeaders(db, webhookId);
      for (const e of events) {
        if (ctx.stopped.aborted) return;
        const creator = creatorPrincipal(db, hook);
        if (!creator || !matches(e) || !isEventVisible(creator, e)) {
          cursor = e.seq;
          continue;
        }
        const outcome = await deliver({
          url: hook.url,
          secret: hook.secret,
          eventId: e.event_id,
          body: deliveredPayload(db, e),
          customHeaders,
          guarded: hook.owner_kind !== 'owner' && !unguarded,
          timeoutMs,
          signal: ctx.stopped,
        });
        if (ctx.stopped.aborted) return;
        if (!outcome.ok) {
          if (!flush()) return;
          recordFailure(db, hook, e.seq, outcome.code);
          return;
        }
        cursor = e.seq;
        successAt = new Date().toISOString();
        if (hook.failure_count > 0 || hook.retry_seq !== null || hook.first_failure_at !== null) {
          // The first success after failures writes the cursor and clears the failure state in
          // one statement, so health never shows the success beside the old failure count.
          flushedAt = Date.now();
          if (!writeRecovery(db, webhookId, epoch, cursor, successAt)) return;
          persisted = cursor;
          successAt = null;
          hook = { ...hook, failure_count: 0, retry_seq: null, first_failure_at: null, attempts: 0, next_attempt_at: null };
        } else if (cursor - persisted >= CURSOR_FLUSH_EVENTS || Date.now() - flushedAt >= CURSOR_FLUSH_MS) {
          if (!flush()) return;
        }
      }
      if (!flush()) return;
    }
  } finally {
    ctx.stopped.removeEventListener('abort', onStop);
  }
}

const retention = new RetentionSchedule();
const shardMerges = new ShardMergeSchedule();
const running = new Map<string, Promise<void>>();

export default loopPass(async (ctx) => {
  const { db } = ctx;
  retention.runIfDue(db, retentionClockAheadMs);
  shardMerges.runIfDue(db);
  const head = latestSeq(db);
  const now = Date.now();
  let nextDueMs = Number.POSITIVE_INFINITY;
  for (const hook of enabledWebhooks(db)) {
    if (running.has(hook.webhook_id)) continue;
    if (hook.next_attempt_at !== null) {
      const wait = Date.parse(hook.next_attempt_at) - now;
      if (wait > 0) {
        nextDueMs = Math.min(nextDueMs, wait);
        continue;
      }
    } else if (hook.cursor_seq >= head) continue;
    const id = hook.webhook_id;
    const task = drain(ctx, id)
      .catch((err: unknown) => {
        // A database failure outside a stop is a loop crash: the supervisor stops the service.
        if (!ctx.stopped.aborted) setImmediate(() => { throw err; });
      })
      .finally(() => {
        running.delete(id);
        if (!ctx.stopped.aborted) ctx.wakeSelf();
      });
    running.set(id, task);
  }
  return { delayMs: Math.max(10, Math.ceil(nextDueMs)) };
});
