/**
 * The scheduled-drafts loop (spec §8): wakes on create, edit or approval; waits until the next
 * due time, capped at 30 s idle and 2 s after work. Each approved `scheduled` draft whose
 * `send_at` has passed (overdue ones after an outage too) is claimed (`sending`, so edits wait),
 * then sent through the one send path with the owner-equivalent scheduler principal: success
 * marks it `sent` with `draft.sent`; no transport leaves it scheduled for a later pass; any other
 * refusal makes it `failed` with the error code as `send_reason`.
 */
import { inboxById } from '../../src/auth/inbox-lookup.js';
import { loopPass, type LoopContext } from './run-loop.js';
import { LOOPS } from '../../src/supervisor/loop-table.js';
import { ApiError } from '../../src/core/errors.js';
import type { Principal } from '../../src/auth/principal.js';
import { draftRow } from '../../src/mail/drafts/repository.js';
import { claimDueDraft, dueDrafts, nextDraftDue, resetInterruptedDrafts, settleUnsentDraft } from '../../src/mail/draft-schedule.js';
import { performSend, type SendContext } from '../../src/mail/send-flow.js';
import { readTransport } from '../../src/mail/transport.js';
import type { ComposedMime, MimeSpec } from '../pool/compose.js';

const BATCH = 20;
const { busyMs, idleMs } = LOOPS['scheduled-drafts'];

/** Drafts it sends were approved by the owner or scheduled by a `direct` credential. */
const SCHEDULER: Principal = { kind: 'owner', id: 'scheduler', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };

let recovered = false;

function sendContext(ctx: LoopContext): SendContext {
  return {
    db: ctx.db,
    principal: SCHEDULER,
    compose: (spec: MimeSpec) => ctx.runTask('composeOutbound', spec) as Promise<ComposedMime>,
    publish: (seq) => ctx.publish({ kind: 'event', seq }),
    wakeOutbox: () => ctx.publish({ kind: 'wake', loop: 'outbox' }),
  };
}

type Outcome = 'sent' | 'deferred' | 'failed' | 'skipped';

async function sendDue(ctx: LoopContext, draftId: string, inboxId: string, now: string): Promise<Outcome> {
  const { db } = ctx;
  if (!db.transaction(() => claimDueDraft(db, draftId, now)).immediate()) return 'skipped';
  const inbox = inboxById(db, inboxId);
  const draft = draftRow(db, inboxId, draftId);
  if (!inbox || !draft) return 'skipped'; // deleted meanwhile (the inbox's deletion cascades)
  try {
    await performSend(sendContext(ctx), { inbox, idempotency: null, source: { type: 'draft', draft, approve: false } });
    return 'sent';
  } catch (err) {
    // The draft table decides: no transport → scheduled again; sent, rejected or deleted meanwhile
    // → nothing to undo; any other refusal → failed. A bug (not an ApiError) is recorded as
    // `internal_error` so a restart does not retry the same draft forever, then stops the loop.
    const outcome = db.transaction(() => settleUnsentDraft(db, draftId, err instanceof ApiError ? err.code : 'internal_error')).immediate();
    if (!(err instanceof ApiError)) throw err;
    return outcome;
  }
}

export default loopPass(async (ctx) => {
  const { db } = ctx;
  if (!recovered) {
    db.transaction(() => resetInterruptedDrafts(db)).immediate();
    recovered = true;
  }
  // Without a transport nothing can be sent: due drafts stay scheduled until one is configured.
  const transport = readTransport(db);
  if (!transport.edge && !transport.smtp) return 'idle';

  const now = new Date().toISOString();
  const due = dueDrafts(db, now, BATCH);
  let deferred = false;
  for (const { draft_id, inbox_id } of due) {
    if (ctx.stopped.aborted) break;
    if ((await sendDue(ctx, draft_id, inbox_id, now)) === 'deferred') deferred = true;
  }
  if (deferred) return 'idle';
  if (due.length === BATCH) return { delayMs: 0 };
  const next = nextDraftDue(db);
  const cap = due.length > 0 ? busyMs : idleMs;
  return { delayMs: next === null ? cap : Math.min(cap, Math.max(0, Date.parse(next) - Date.now())) };
});
