/**
 * The webhooks repository: every SQL statement on `webhooks` and `webhook_headers`, as named
 * functions for the webhook store (src/webhooks/webhooks.ts) and the delivery loop
 * (workers/loops/webhooks.ts). No policy lives here: callers decide, these read and write.
 *
 * Invariant: every delivery-state write is guarded by the `epoch` the drain started with and by
 * `enabled = 1`, so a PATCH, disable, re-enable or delete that happens during a delivery wins
 * over the drain's late write (the write then reports 0 changes and the drain ends).
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';

export interface WebhookRow {
  webhook_id: string;
  owner_kind: 'owner' | 'api_key' | 'oauth';
  creator_id: string | null;
  inbox_scope: string | null;
  inbox_ids: string | null;
  url: string;
  event_types: string;
  secret: string;
  enabled: number;
  disabled_reason: string | null;
  epoch: number;
  failure_count: number;
  dropped_count: number;
  last_error_code: string | null;
  last_success_at: string | null;
  first_failure_at: string | null;
  cursor_seq: number;
  retry_seq: number | null;
  attempts: number;
  next_attempt_at: string | null;
  created_at: string;
  updated_at: string;
  client_id: string | null;
  client_request_hash: string | null;
  /** The pod that owns the webhook (docs/pods.md): it hears that pod's events only. Null: the whole home. */
  pod_id: string | null;
  /** AgentMail's pod filter (JSON array): only events of these pods. Null: every pod the creator can see. */
  pod_ids: string | null;
}

export interface WebhookCreator {
  kind: WebhookRow['owner_kind'];
  id: string | null;
}

/**
 * Which webhooks a caller may see: every one (the owner), or those of one creator, limited to
 * instance-wide ones and inbox webhooks of `inboxes` when the creator is inbox-restricted.
 */
export type WebhookViewer = ({ all: true } | { all: false; creator: WebhookCreator; inboxes: string[] | null }) & {
  /** Set for a caller narrowed to a pod: that pod's webhooks only. */
  pod?: string;
};

function visibility(v: WebhookViewer): { sql: string; params: (string | null)[] } {
  if (v.pod !== undefined) {
    const rest = visibility({ ...v, pod: undefined });
    return { sql: `pod_id = ? AND ${rest.sql}`, params: [v.pod, ...rest.params] };
  }
  if (v.all) return { sql: '1 = 1', params: [] };
  if (v.inboxes === null) return { sql: 'owner_kind = ? AND creator_id = ?', params: [v.creator.kind, v.creator.id] };
  return {
    sql: 'owner_kind = ? AND creator_id = ? AND (inbox_scope IS NULL OR inbox_scope IN (SELECT value FROM json_each(?)))',
    params: [v.creator.kind, v.creator.id, JSON.stringify(v.inboxes)],
  };
}

// ---- the store ----

/** The webhook if `viewer` may see it; `inbox` set limits it to that inbox's webhooks. */
export function visibleWebhook(db: Db, viewer: WebhookViewer, webhookId: string, inbox: string | null): WebhookRow | undefined {
  const vis = visibility(viewer);
  return db
    .prepare(`SELECT * FROM webhooks WHERE webhook_id = ? AND ${vis.sql}${inbox === null ? '' : ' AND inbox_scope = ?'}`)
    .get(webhookId, ...vis.params, ...(inbox === null ? [] : [inbox])) as WebhookRow | undefined;
}

/** The webhook this creator already made with `clientId`, if any. */
export function webhookByClientId(db: Db, creator: WebhookCreator, clientId: string): WebhookRow | undefined {
  return db.prepare('SELECT * FROM webhooks WHERE owner_kind = ? AND creator_id IS ? AND client_id = ?').get(creator.kind, creator.id, clientId) as WebhookRow | undefined;
}

export interface NewWebhook {
  webhookId: string;
  creator: WebhookCreator;
  inboxScope: string | null;
  /** JSON array, or null for every inbox. */
  inboxIds: string | null;
  /** JSON array, or null for every pod. */
  podIds: string | null;
  url: string;
  /** JSON array. */
  eventTypes: string;
  secret: string;
  /** Delivery starts after this event. */
  cursorSeq: number;
  now: string;
  clientId: string | null;
  clientRequestHash: string | null;
  podId: string | null;
}

export function insertWebhook(db: Db, w: NewWebhook): void {
  db.prepare(
    `INSERT INTO webhooks (webhook_id, owner_kind, creator_id, inbox_scope, inbox_ids, url, event_types, secret, cursor_seq, created_at, updated_at, client_id, client_request_hash, pod_id, pod_ids)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(w.webhookId, w.creator.kind, w.creator.id, w.inboxScope, w.inboxIds, w.url, w.eventTypes, w.secret, w.cursorSeq, w.now, w.now, w.clientId, w.clientRequestHash, w.podId, w.podIds);
}

export function updateWebhookFilters(db: Db, webhookId: string, eventTypes: string, inboxIds: string | null, podIds: string | null, now: string): void {
  db.prepare('UPDATE webhooks SET event_types = ?, inbox_ids = ?, pod_ids = ?, updated_at = ? WHERE webhook_id = ?').run(eventTypes, inboxIds, podIds, now, webhookId);
}

/** The owner or creator turned it off: a new epoch ends any running drain. */
export function disableWebhookManually(db: Db, webhookId: string): void {
  db.prepare("UPDATE webhooks SET enabled = 0, disabled_reason = 'manual', epoch = epoch + 1, retry_seq = NULL, attempts = 0, next_attempt_at = NULL WHERE webhook_id = ?").run(webhookId);
}

/** Turned on again: failure state cleared, delivery starts after `cursorSeq` (the log's head). */
export function enableWebhook(db: Db, webhookId: string, cursorSeq: number): void {
  db.prepare(
    `UPDATE webhooks SET enabled = 1, disabled_reason = NULL, epoch = epoch + 1, failure_count = 0, last_error_code = NULL, first_failure_at = NULL,
     retry_seq = NULL, attempts = 0, next_attempt_at = NULL, cursor_seq = ? WHERE webhook_id = ?`,
  ).run(cursorSeq, webhookId);
}

export function touchWebhook(db: Db, webhookId: string, now: string): void {
  db.prepare('UPDATE webhooks SET updated_at = ? WHERE webhook_id = ?').run(now, webhookId);
}

/** Deletes the webhook; its headers go with it (foreign key cascade). */
export function deleteWebhookRow(db: Db, webhookId: string): void {
  db.prepare('DELETE FROM webhooks WHERE webhook_id = ?').run(webhookId);
}

/** One page of the webhooks `viewer` may see, ordered by (created_at, webhook_id); `after` is the keyset cursor. */
export function webhookPage(db: Db, viewer: WebhookViewer, q: { inbox: string | null; after: unknown[] | null; ascending: boolean; limit: number }): WebhookRow[] {
  const vis = visibility(viewer);
  const where = [vis.sql];
  const params: unknown[] = [...vis.params];
  if (q.inbox !== null) {
    where.push('inbox_scope = ?');
    params.push(q.inbox);
  }
  if (q.after !== null) {
    where.push(`(created_at, webhook_id) ${q.ascending ? '>' : '<'} (?, ?)`);
    params.push(...q.after);
  }
  const order = q.ascending ? 'ASC' : 'DESC';
  return db.prepare(`SELECT * FROM webhooks WHERE ${where.join(' AND ')} ORDER BY created_at ${order}, webhook_id ${order} LIMIT ?`).all(...params, q.limit) as WebhookRow[];
}

// ---- custom headers ----

/** The webhook's custom headers, ordered by name (case-insensitive). */
export function webhookHeaders(db: Db, webhookId: string): { name: string; value: string }[] {
  return prepared(db, 'SELECT name, value FROM webhook_headers WHERE webhook_id = ? ORDER BY name_key').all(webhookId) as { name: string; value: string }[];
}

/** `nameKey` is the lower-cased name: a header is one row whatever the case it was sent in. */
export function removeWebhookHeader(db: Db, webhookId: string, nameKey: string): void {
  db.prepare('DELETE FROM webhook_headers WHERE webhook_id = ? AND name_key = ?').run(webhookId, nameKey);
}

export function setWebhookHeader(db: Db, webhookId: string, name: string, value: string): void {
  db.prepare('INSERT INTO webhook_headers (webhook_id, name_key, name, value) VALUES (?, ?, ?, ?) ON CONFLICT (webhook_id, name_key) DO UPDATE SET name = excluded.name, value = excluded.value').run(
    webhookId,
    name.toLowerCase(),
    name,
    value,
  );
}

// ---- delivery state (the webhooks loop) ----

export function webhookById(db: Db, webhookId: string): WebhookRow | undefined {
  return prepared(db, 'SELECT * FROM webhooks WHERE webhook_id = ?').get(webhookId) as WebhookRow | undefined;
}

/** What the loop needs to decide whether an enabled webhook has work: its cursor and its next retry. */
export function enabledWebhooks(db: Db): Pick<WebhookRow, 'webhook_id' | 'cursor_seq' | 'next_attempt_at'>[] {
  return prepared(db, 'SELECT webhook_id, cursor_seq, next_attempt_at FROM webhooks WHERE enabled = 1').all() as Pick<WebhookRow, 'webhook_id' | 'cursor_seq' | 'next_attempt_at'>[];
}

/** The smallest cursor of an enabled webhook (what event retention must keep after), or null when none is enabled. */
export function lowestEnabledCursor(db: Db): number | null {
  return (prepared(db, 'SELECT min(cursor_seq) AS c FROM webhooks WHERE enabled = 1').get() as { c: number | null }).c;
}

/** Delivered (or filtered out) up to `cursorSeq`; `successAt` set when a delivery succeeded since the last write. False when the epoch moved on. */
export function writeCursor(db: Db, webhookId: string, epoch: number, cursorSeq: number, successAt: string | null): boolean {
  return (
    prepared(db, 'UPDATE webhooks SET cursor_seq = ?, last_success_at = coalesce(?, last_success_at) WHERE webhook_id = ? AND epoch = ? AND enabled = 1').run(cursorSeq, successAt, webhookId, epoch)
      .changes === 1
  );
}

/** The first success after failures: cursor and cleared failure state in one statement. False when the epoch moved on. */
export function writeRecovery(db: Db, webhookId: string, epoch: number, cursorSeq: number, successAt: string): boolean {
  return (
    prepared(
      db,
      'UPDATE webhooks SET cursor_seq = ?, last_success_at = ?, failure_count = 0, first_failure_at = NULL, retry_seq = NULL, attempts = 0, next_attempt_at = NULL WHERE webhook_id = ? AND epoch = ? AND enabled = 1',
    ).run(cursorSeq, successAt, webhookId, epoch).changes === 1
  );
}

/** A failed attempt of the event `seq`, and what follows from it. */
export type DeliveryFailure =
  | { then: 'retry'; seq: number; attempts: number; nextAttemptAt: string }
  /** The retry schedule is used up: the event is skipped and counted as dropped. */
  | { then: 'drop'; seq: number }
  /** Failing without a break for too long: the webhook is disabled. */
  | { then: 'disable' };

export function recordDeliveryFailure(db: Db, hook: Pick<WebhookRow, 'webhook_id' | 'epoch'>, code: string, firstFailureAt: string, failure: DeliveryFailure): void {
  const common = 'failure_count = failure_count + 1, last_error_code = ?, first_failure_at = ?';
  const guard = 'WHERE webhook_id = ? AND epoch = ? AND enabled = 1';
  switch (failure.then) {
    case 'disable':
      db.prepare(`UPDATE webhooks SET ${common}, enabled = 0, disabled_reason = 'consecutive_failures', epoch = epoch + 1, retry_seq = NULL, attempts = 0, next_attempt_at = NULL ${guard}`).run(
        code, firstFailureAt, hook.webhook_id, hook.epoch,
      );
      return;
    case 'drop':
      db.prepare(`UPDATE webhooks SET ${common}, dropped_count = dropped_count + 1, cursor_seq = ?, retry_seq = NULL, attempts = 0, next_attempt_at = NULL ${guard}`).run(
        code, firstFailureAt, failure.seq, hook.webhook_id, hook.epoch,
      );
      return;
    case 'retry':
      db.prepare(`UPDATE webhooks SET ${common}, retry_seq = ?, attempts = ?, next_attempt_at = ? ${guard}`).run(
        code, firstFailureAt, failure.seq, failure.attempts, failure.nextAttemptAt, hook.webhook_id, hook.epoch,
      );
  }
}
