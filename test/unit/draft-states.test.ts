/**
 * The draft state table (src/mail/drafts/states.ts), one case per row of the table in
 * docs/drafts.md "States and transitions", plus the cases no row may miss: every row of the code
 * table is reached by some case, so the docs and the code cannot drift apart unnoticed.
 */
import t from 'tap';
import {
  DRAFT_STATUSES,
  DRAFT_TRANSITIONS,
  draftTransition,
  nextApproved,
  nextDraftStatus,
  type DraftActor,
  type DraftEventType,
  type DraftFacts,
  type DraftFrom,
  type DraftRefusal,
  type DraftStatus,
  type DraftTransition,
  type DraftTrigger,
} from '../../src/mail/drafts/states.js';

interface Case {
  /** The docs row, as written there. */
  row: string;
  from: readonly DraftFrom[];
  trigger: DraftTrigger;
  facts: DraftFacts;
  /** The state after it (`same`: the state it was in; null: no draft), or the refusal. */
  to: DraftStatus | 'same' | null | { refused: DraftRefusal };
  events?: readonly DraftEventType[];
  /** The `approved` flag after it, given it was `approvedBefore` (default false). */
  approved?: boolean;
  approvedBefore?: boolean;
  answersApprovalRequired?: boolean;
}

const NOT_FINAL: DraftStatus[] = ['draft', 'pending_approval', 'scheduled', 'sending', 'failed'];
const EDITABLE: DraftStatus[] = ['draft', 'pending_approval', 'scheduled', 'failed'];
const OWNER: DraftActor = 'owner_or_direct';

const CASES: Case[] = [
  { row: 'create without `send_at`', from: ['new'], trigger: 'create', facts: { actor: 'approval', sendAt: 'unchanged' }, to: 'draft', events: ['draft.created'], approved: false },
  { row: 'create with `send_at` by the owner or a `direct` credential', from: ['new'], trigger: 'create', facts: { actor: OWNER, sendAt: 'set' }, to: 'scheduled', events: ['draft.created'], approved: true },
  { row: 'create with `send_at` under `approval`', from: ['new'], trigger: 'create', facts: { actor: 'approval', sendAt: 'set' }, to: 'pending_approval', events: ['draft.created', 'draft.approval_required'], approved: false },
  { row: 'create with `send_at` under `read_only`', from: ['new'], trigger: 'create', facts: { actor: 'read_only', sendAt: 'set' }, to: { refused: 'read_only_schedule' } },
  { row: 'send, reply, reply-all or forward under `approval`', from: ['new'], trigger: 'send', facts: { actor: 'approval', approved: false }, to: 'pending_approval', events: ['draft.approval_required'], approved: false, answersApprovalRequired: true },
  { row: 'send, reply, reply-all or forward under `read_only`', from: ['new'], trigger: 'send', facts: { actor: 'read_only', approved: false }, to: { refused: 'read_only_send' } },
  { row: 'send by the owner or a `direct` credential: queued, no draft', from: ['new'], trigger: 'send', facts: { actor: OWNER, approved: false }, to: null, events: [] },
  { row: 'draft send of a sent draft', from: ['sent'], trigger: 'send', facts: { actor: OWNER, approved: true }, to: { refused: 'sent' } },
  { row: 'draft send of a rejected draft', from: ['rejected'], trigger: 'send', facts: { actor: OWNER, approved: true }, to: { refused: 'rejected' } },
  { row: 'draft send under `approval`, not approved, already waiting', from: ['pending_approval'], trigger: 'send', facts: { actor: 'approval', approved: false }, to: 'pending_approval', events: [], answersApprovalRequired: true },
  { row: 'draft send under `approval`, not approved', from: ['draft', 'scheduled', 'sending', 'failed'], trigger: 'send', facts: { actor: 'approval', approved: false }, to: 'pending_approval', events: ['draft.approval_required'], approved: false, answersApprovalRequired: true },
  { row: 'draft send under `read_only`', from: NOT_FINAL, trigger: 'send', facts: { actor: 'read_only', approved: true }, to: { refused: 'read_only_send' } },
  { row: 'draft send, `direct`', from: NOT_FINAL, trigger: 'send', facts: { actor: OWNER, approved: false }, to: 'sent', events: ['draft.sent'], approved: false },
  { row: 'draft send, approved (any caller with `draft_send` but `read_only`)', from: NOT_FINAL, trigger: 'send', facts: { actor: 'approval', approved: true }, to: 'sent', events: ['draft.sent'], approvedBefore: true, approved: true },
  { row: 'owner approve of a sent draft', from: ['sent'], trigger: 'approve', facts: { sendAtAhead: false }, to: { refused: 'sent' } },
  { row: 'owner approve of a rejected draft', from: ['rejected'], trigger: 'approve', facts: { sendAtAhead: true }, to: { refused: 'rejected' } },
  { row: 'owner approve, `send_at` missing or due', from: NOT_FINAL, trigger: 'approve', facts: { sendAtAhead: false, approved: false }, to: 'sent', events: ['draft.approved', 'draft.sent'], approved: true },
  { row: 'owner approve, `send_at` ahead', from: NOT_FINAL, trigger: 'approve', facts: { sendAtAhead: true, approved: false }, to: 'scheduled', events: ['draft.approved'], approved: true },
  { row: 'owner approve, `send_at` ahead, already an approved schedule', from: ['scheduled'], trigger: 'approve', facts: { sendAtAhead: true, approved: true }, to: 'scheduled', events: [], approvedBefore: true, approved: true },
  { row: '`send_at` passes (loop claims it)', from: ['scheduled'], trigger: 'due', facts: { approved: true }, to: 'sending', events: [] },
  { row: 'send refused: inbox_paused', from: ['sending'], trigger: 'send_failed', facts: { errorCode: 'inbox_paused' }, to: 'failed', events: [] },
  { row: 'send refused: message_rejected', from: ['sending'], trigger: 'send_failed', facts: { errorCode: 'message_rejected' }, to: 'failed', events: [] },
  { row: 'send refused: payload_too_large', from: ['sending'], trigger: 'send_failed', facts: { errorCode: 'payload_too_large' }, to: 'failed', events: [] },
  { row: 'send refused: validation_error', from: ['sending'], trigger: 'send_failed', facts: { errorCode: 'validation_error' }, to: 'failed', events: [] },
  { row: 'send failed with a bug (internal_error)', from: ['sending'], trigger: 'send_failed', facts: { errorCode: 'internal_error' }, to: 'failed', events: [] },
  { row: 'no transport (`service_unavailable`)', from: ['sending'], trigger: 'send_failed', facts: { errorCode: 'service_unavailable' }, to: 'scheduled', events: [] },
  { row: 'sent by a draft send meanwhile (`conflict`)', from: ['sending'], trigger: 'send_failed', facts: { errorCode: 'conflict' }, to: 'sending', events: [] },
  { row: 'deleted meanwhile (`not_found`)', from: ['sending'], trigger: 'send_failed', facts: { errorCode: 'not_found' }, to: 'sending', events: [] },
  { row: 'a stop or crash left it `sending`', from: ['sending'], trigger: 'restart', facts: {}, to: 'scheduled', events: [] },
  { row: 'owner reject `{ reason? }`', from: EDITABLE, trigger: 'reject', facts: {}, to: 'rejected', events: ['draft.rejected'], approvedBefore: true, approved: false },
  { row: 'owner reject again', from: ['rejected'], trigger: 'reject', facts: {}, to: 'rejected', events: [] },
  { row: 'owner reject of a sent draft', from: ['sent'], trigger: 'reject', facts: {}, to: { refused: 'sent' } },
  { row: 'owner reject of a sending draft', from: ['sending'], trigger: 'reject', facts: {}, to: { refused: 'sending' } },
  { row: 'patch of a sending draft', from: ['sending'], trigger: 'patch', facts: { actor: OWNER, sendAt: 'unchanged' }, to: { refused: 'sending' } },
  { row: 'patch of a sent draft', from: ['sent'], trigger: 'patch', facts: { actor: OWNER, sendAt: 'cleared' }, to: { refused: 'sent' } },
  { row: 'patch of a rejected draft', from: ['rejected'], trigger: 'patch', facts: { actor: OWNER, sendAt: 'set' }, to: { refused: 'rejected' } },
  { row: 'patch by an `approval` agent of a draft awaiting approval', from: ['pending_approval'], trigger: 'patch', facts: { actor: 'approval', sendAt: 'unchanged' }, to: { refused: 'awaiting_owner' } },
  { row: 'patch by a `read_only` agent of a draft awaiting approval', from: ['pending_approval'], trigger: 'patch', facts: { actor: 'read_only', sendAt: 'cleared' }, to: { refused: 'awaiting_owner' } },
  { row: 'patch setting `send_at` under `read_only`', from: ['draft', 'scheduled', 'failed'], trigger: 'patch', facts: { actor: 'read_only', sendAt: 'set' }, to: { refused: 'read_only_schedule' } },
  { row: 'patch `send_at: null` by the owner', from: EDITABLE, trigger: 'patch', facts: { actor: OWNER, sendAt: 'cleared', approved: true }, to: 'draft', events: [], approvedBefore: true, approved: true },
  { row: 'patch `send_at: null` by an agent', from: ['draft', 'scheduled', 'failed'], trigger: 'patch', facts: { actor: 'approval', sendAt: 'cleared', approved: true }, to: 'draft', events: [], approvedBefore: true, approved: false },
  { row: 'patch setting `send_at` by the owner or a `direct` credential, awaiting approval', from: ['pending_approval'], trigger: 'patch', facts: { actor: OWNER, sendAt: 'set' }, to: 'scheduled', events: ['draft.approved'], approved: true },
  { row: 'patch setting `send_at` by the owner or a `direct` credential', from: ['draft', 'scheduled', 'failed'], trigger: 'patch', facts: { actor: OWNER, sendAt: 'set' }, to: 'scheduled', events: [], approved: true },
  { row: 'patch setting `send_at` under `approval`', from: ['draft', 'scheduled', 'failed'], trigger: 'patch', facts: { actor: 'approval', sendAt: 'set', approved: true }, to: 'pending_approval', events: ['draft.approval_required'], approvedBefore: true, approved: false },
  { row: 'patch of an approved schedule by the owner or a `direct` credential', from: ['scheduled'], trigger: 'patch', facts: { actor: OWNER, sendAt: 'unchanged', approved: true }, to: 'scheduled', events: [], approvedBefore: true, approved: true },
  { row: 'patch of a schedule by an `approval` agent', from: ['scheduled'], trigger: 'patch', facts: { actor: 'approval', sendAt: 'unchanged', approved: true }, to: 'pending_approval', events: ['draft.approval_required'], approvedBefore: true, approved: false },
  { row: 'patch of a schedule by a `read_only` agent', from: ['scheduled'], trigger: 'patch', facts: { actor: 'read_only', sendAt: 'unchanged', approved: true }, to: 'pending_approval', events: ['draft.approval_required'], approvedBefore: true, approved: false },
  { row: 'other patches (content, labels) by the owner', from: ['draft', 'pending_approval', 'failed'], trigger: 'patch', facts: { actor: OWNER, sendAt: 'unchanged', approved: true }, to: 'same', events: [], approvedBefore: true, approved: true },
  { row: 'other patches (content, labels) by an agent', from: ['draft', 'failed'], trigger: 'patch', facts: { actor: 'approval', sendAt: 'unchanged', approved: true }, to: 'same', events: [], approvedBefore: true, approved: false },
];

const reached = new Set<DraftTransition>();

for (const c of CASES) {
  t.test(c.row, async (t) => {
    for (const from of c.from) {
      const step = draftTransition(from, c.trigger, c.facts);
      reached.add(step);
      const expected = c.to === 'same' ? from : c.to;
      if (expected !== null && typeof expected === 'object') {
        t.same(step.to, expected, `${from}: refused`);
        t.same(step.events, [], `${from}: a refusal appends no event`);
        continue;
      }
      t.equal(nextDraftStatus(step, from), expected, `${from}: next state`);
      if (c.events) t.same(step.events, c.events, `${from}: events`);
      if (c.approved !== undefined) t.equal(nextApproved(step, c.approvedBefore ?? false, c.facts.actor), c.approved, `${from}: approved`);
      t.equal(step.answersApprovalRequired === true, c.answersApprovalRequired === true, `${from}: answers approval_required`);
    }
  });
}

t.test('every row of the code table is reached by a docs case', async (t) => {
  for (const row of DRAFT_TRANSITIONS) t.ok(reached.has(row), `${row.trigger} from ${row.from.join('/')}: ${row.when}`);
});

t.test('sent and rejected are final: no trigger leaves them', async (t) => {
  const facts: DraftFacts[] = [{ actor: OWNER, sendAt: 'set', approved: true, sendAtAhead: true }, { actor: 'approval', sendAt: 'cleared' }, {}];
  for (const from of ['sent', 'rejected'] as const) {
    for (const trigger of ['patch', 'send', 'approve', 'reject'] as const) {
      for (const f of facts) {
        const next = nextDraftStatus(draftTransition(from, trigger, f), from);
        t.ok(next === null || next === from, `${trigger} from ${from}`);
      }
    }
  }
});

t.test('only the owner or a direct credential ever leaves a draft approved', async (t) => {
  for (const from of DRAFT_STATUSES) {
    for (const trigger of ['patch', 'send'] as const) {
      for (const actor of ['approval', 'read_only'] as const) {
        for (const sendAt of ['set', 'cleared', 'unchanged'] as const) {
          const step = draftTransition(from, trigger, { actor, sendAt, approved: false });
          t.equal(nextApproved(step, false, actor), false, `${trigger} by ${actor} from ${from} (send_at ${sendAt})`);
        }
      }
    }
  }
});
