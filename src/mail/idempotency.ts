/**
 * Idempotency keys (spec §4.2): scoped to the inbox, shared by send, reply, reply-all, forward,
 * draft send and draft approve (and MCP's `idempotencyKey`). A key remembers a hash of what was
 * asked and what came of it. Same key + same request → the original result; a different request
 * → `409 idempotency_conflict`. Send keys become reusable 24 hours after the send is final;
 * approval-request, draft-send and approve keys never expire.
 */
import { createHash } from 'node:crypto';
import type { Db } from '../db/open.js';
import { ApiError } from '../core/errors.js';
import { prepared } from '../db/statements.js';

export const IDEMPOTENCY_KEY = /^[A-Za-z0-9._~-]{1,256}$/;
export const REUSABLE_AFTER_MS = 24 * 60 * 60 * 1000;

export type IdempotentKind = 'send' | 'approval' | 'draft_send' | 'draft_approve';

export interface IdempotentResult {
  kind: IdempotentKind;
  messageId: string | null;
  threadId: string | null;
  draftId: string | null;
}

/** The `Idempotency-Key` header, checked; null when absent. */
export function idempotencyKey(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  const value = Array.isArray(header) ? header[0] : header;
  if (Array.isArray(header) && header.length > 1) throw badKey();
  if (!IDEMPOTENCY_KEY.test(value)) throw badKey();
  return value;
}

const badKey = () =>
  new ApiError('validation_error', 'The Idempotency-Key header must be 1 to 256 characters from A-Z a-z 0-9 . _ ~ -.', {
    fix: 'Use a UUID or another token made of those characters.',
  });

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, canonical(v)]),
    );
  }
  return value;
}

/** A stable hash of what was asked: the route's operation, its target and the body, key order ignored. */
export function requestHash(operation: string, target: string | null, body: unknown): string {
  return createHash('sha256').update(JSON.stringify([operation, target, canonical(body)])).digest('hex');
}

interface Row {
  request_hash: string;
  kind: IdempotentKind;
  message_id: string | null;
  thread_id: string | null;
  draft_id: string | null;
  final_at: string | null;
}

/**
 * The stored result for this key, or null when the key is new (or reusable again). Throws
 * `idempotency_conflict` when the key was used for a different request. Call inside the
 * transaction that records the new result, so two racing requests cannot both act.
 */
export function replayIdempotent(db: Db, inboxId: string, key: string, hash: string, now = Date.now()): IdempotentResult | null {
  const row = prepared(db, 'SELECT request_hash, kind, message_id, thread_id, draft_id, final_at FROM idempotency_keys WHERE inbox_id = ? AND key = ?').get(inboxId, key) as Row | undefined;
  if (!row) return null;
  if (row.kind === 'send' && row.final_at !== null && Date.parse(row.final_at) + REUSABLE_AFTER_MS <= now) {
    prepared(db, 'DELETE FROM idempotency_keys WHERE inbox_id = ? AND key = ?').run(inboxId, key);
    return null;
  }
  if (row.request_hash !== hash) {
    throw new ApiError('idempotency_conflict', 'This Idempotency-Key was already used for a different request in this inbox.', {
      fix: 'Use a new key for a new message; repeat a request only with exactly the same payload.',
    });
  }
  return { kind: row.kind, messageId: row.message_id, threadId: row.thread_id, draftId: row.draft_id };
}

export function recordIdempotent(db: Db, inboxId: string, key: string, hash: string, result: IdempotentResult): void {
  prepared(
    db,
    `INSERT INTO idempotency_keys (inbox_id, key, request_hash, kind, message_id, thread_id, draft_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (inbox_id, key) DO UPDATE SET request_hash = excluded.request_hash, kind = excluded.kind, message_id = excluded.message_id,
       thread_id = excluded.thread_id, draft_id = excluded.draft_id, final_at = NULL, created_at = excluded.created_at`,
  ).run(inboxId, key, hash, result.kind, result.messageId, result.threadId, result.draftId, new Date().toISOString());
}

/** The send of this message is final: its send key may be reused 24 hours from now. */
export function markSendFinal(db: Db, inboxId: string, messageId: string, at: string): void {
  prepared(db, "UPDATE idempotency_keys SET final_at = ? WHERE inbox_id = ? AND message_id = ? AND kind = 'send' AND final_at IS NULL").run(at, inboxId, messageId);
}
