/**
 * The scheduled-drafts repository (spec §8, docs/drafts.md): the queries the scheduled-drafts
 * loop runs — which approved `scheduled` drafts are due, the claim that moves one to `sending`
 * (so edits wait), and the release back to `scheduled` or on to `failed`. Each write is guarded
 * by the state it expects, so a draft edited, sent or deleted meanwhile is left alone; callers
 * run the writes in a transaction (`db.transaction`, write lock up front).
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { NEXT_UPDATED_AT } from './drafts/repository.js';
import type { DraftRow } from './drafts/shapes.js';
import { draftTransition, nextDraftStatus } from './drafts/states.js';

/** Approved scheduled drafts whose time has come, oldest first (overdue ones included). */
export function dueDrafts(db: Db, now: string, limit: number): Pick<DraftRow, 'draft_id' | 'inbox_id'>[] {
  return prepared(db, "SELECT draft_id, inbox_id FROM drafts WHERE send_status = 'scheduled' AND approved = 1 AND send_at <= ? ORDER BY send_at, rowid LIMIT ?").all(now, limit) as Pick<
    DraftRow,
    'draft_id' | 'inbox_id'
  >[];
}

/** When the next approved scheduled draft is due, or null. */
export function nextDraftDue(db: Db): string | null {
  return (prepared(db, "SELECT min(send_at) AS next FROM drafts WHERE send_status = 'scheduled' AND approved = 1").get() as { next: string | null }).next;
}

/** The table's `due` row: an approved scheduled draft whose time has come is claimed (`sending`, so edits wait). */
const CLAIMED = nextDraftStatus(draftTransition('scheduled', 'due', { approved: true }), 'scheduled')!;

/** Takes a due draft for sending; false when it changed meanwhile (the WHERE is the `due` row's guard). */
export function claimDueDraft(db: Db, draftId: string, now: string): boolean {
  return (
    prepared(db, `UPDATE drafts SET send_status = ?, updated_at = ${NEXT_UPDATED_AT} WHERE draft_id = ? AND send_status = 'scheduled' AND approved = 1 AND send_at <= ?`).run(CLAIMED, new Date().toISOString(), draftId, now)
      .changes === 1
  );
}

/** A claimed draft that was not sent: back to `scheduled`, or to `failed` with the reason. */
export function releaseDraft(db: Db, draftId: string, to: { status: 'scheduled' } | { status: 'failed'; reason: string }): boolean {
  const reason = to.status === 'failed' ? to.reason : null;
  return prepared(db, `UPDATE drafts SET send_status = ?, send_reason = ?, updated_at = ${NEXT_UPDATED_AT} WHERE draft_id = ? AND send_status = 'sending'`).run(to.status, reason, new Date().toISOString(), draftId).changes === 1;
}

/**
 * A claimed draft whose send was refused with `errorCode` (`internal_error` for a bug): the
 * table's `send_failed` row says whether it goes back to `scheduled` (no transport), to `failed`
 * with the code as `send_reason`, or stays as it is (sent, rejected or deleted meanwhile).
 */
export function settleUnsentDraft(db: Db, draftId: string, errorCode: string): 'deferred' | 'failed' | 'skipped' {
  const to = nextDraftStatus(draftTransition('sending', 'send_failed', { errorCode }), 'sending');
  if (to === 'scheduled') return (releaseDraft(db, draftId, { status: 'scheduled' }), 'deferred');
  if (to === 'failed') return (releaseDraft(db, draftId, { status: 'failed', reason: errorCode }), 'failed');
  return 'skipped';
}

/** The table's `restart` row: a draft a stop or crash left `sending` was not queued, so it is scheduled again. */
const RESTARTED = nextDraftStatus(draftTransition('sending', 'restart'), 'sending')!;

/**
 * Drafts a stop or crash left `sending` go back to `scheduled`: a send commits the message and
 * the draft's `sent` together, so a draft still `sending` was not queued.
 */
export function resetInterruptedDrafts(db: Db): number {
  return prepared(db, "UPDATE drafts SET send_status = ? WHERE send_status = 'sending'").run(RESTARTED).changes;
}
