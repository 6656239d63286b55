/**
 * The outbox decision (src/mail/outbox.ts): what happens to a queued message given the
 * transport's answer, at startup recovery and at the owner's resolve — one case per row of the
 * table in docs/outbound.md "Outbox states", and every row of the code table reached by a case.
 */
import t from 'tap';
import { OUTBOX_TRANSITIONS, outboxAction, outboxTransition, type OutboxAction, type OutboxEvent, type OutboxFacts, type OutboxFrom, type OutboxTransition } from '../../src/mail/outbox.js';

const RECIPIENTS = ['a@example.org'];
const DETAIL = { recipients: RECIPIENTS, retryDelayMs: 30_000, error: 'connection reset' };

interface Case {
  row: string;
  from: OutboxFrom;
  event: OutboxEvent;
  facts: OutboxFacts;
  /** The action written; `ask_edge` when the edge is asked first; `handing_over` for the mark before the transport call. */
  expect: OutboxAction | 'ask_edge' | 'handing_over';
}

const sent = (reason?: string): OutboxAction => ({ kind: 'settle', outcome: { status: 'sent', recipients: RECIPIENTS, ...(reason ? { reason } : {}) } });
const settled = (status: 'failed' | 'send_unknown', reason: string): OutboxAction => ({ kind: 'settle', outcome: { status, reason } });

const CASES: Case[] = [
  { row: 'queued, a recipient now blocked', from: 'queued', event: 'refused_by_lists', facts: {}, expect: settled('failed', 'recipient_refused_by_lists') },
  { row: 'queued and due', from: 'queued', event: 'due', facts: {}, expect: 'handing_over' },
  { row: 'accepted by the edge', from: 'handing_over', event: 'accepted', facts: { canAskEdge: true, retriesLeft: true }, expect: sent() },
  { row: 'accepted by SMTP', from: 'handing_over', event: 'accepted', facts: { canAskEdge: false, retriesLeft: false }, expect: sent() },
  { row: 'rejected by the provider', from: 'handing_over', event: 'rejected', facts: { canAskEdge: false, retriesLeft: true }, expect: { kind: 'settle', outcome: { status: 'rejected', reason: 'provider_rejected' } } },
  { row: 'answer lost, edge: asked again later', from: 'handing_over', event: 'unknown', facts: { canAskEdge: true, retriesLeft: false }, expect: { kind: 'requeue', delayMs: 30_000, error: 'connection reset' } },
  { row: 'answer lost, SMTP', from: 'handing_over', event: 'unknown', facts: { canAskEdge: false, retriesLeft: true }, expect: settled('send_unknown', 'answer_lost_after_handover') },
  { row: 'temporary failure, attempts left', from: 'handing_over', event: 'retry', facts: { canAskEdge: false, retriesLeft: true }, expect: { kind: 'requeue', delayMs: 30_000, error: 'connection reset' } },
  { row: 'temporary failure at the edge, attempts left', from: 'handing_over', event: 'retry', facts: { canAskEdge: true, retriesLeft: true }, expect: { kind: 'requeue', delayMs: 30_000, error: 'connection reset' } },
  { row: 'attempts used up, edge: ask first', from: 'handing_over', event: 'retry', facts: { canAskEdge: true, retriesLeft: false }, expect: 'ask_edge' },
  { row: 'attempts used up, the edge has it', from: 'handing_over', event: 'retry', facts: { canAskEdge: true, retriesLeft: false, edge: 'known' }, expect: sent() },
  { row: 'attempts used up, the edge unreachable', from: 'handing_over', event: 'retry', facts: { canAskEdge: true, retriesLeft: false, edge: 'unreachable' }, expect: settled('send_unknown', 'edge_unreachable') },
  { row: 'attempts used up, the edge has not got it', from: 'handing_over', event: 'retry', facts: { canAskEdge: true, retriesLeft: false, edge: 'not_known' }, expect: settled('failed', 'transport_failed') },
  { row: 'attempts used up, SMTP', from: 'handing_over', event: 'retry', facts: { canAskEdge: false, retriesLeft: false }, expect: settled('failed', 'transport_failed') },
  { row: 'interrupted, edge: ask first', from: 'handing_over', event: 'interrupted', facts: { canAskEdge: true }, expect: 'ask_edge' },
  { row: 'interrupted, the edge has it', from: 'handing_over', event: 'interrupted', facts: { canAskEdge: true, edge: 'known' }, expect: sent() },
  { row: 'interrupted, the edge has not got it', from: 'handing_over', event: 'interrupted', facts: { canAskEdge: true, edge: 'not_known' }, expect: { kind: 'requeue', delayMs: 0, error: 'interrupted_before_handover' } },
  { row: 'interrupted, the edge unreachable', from: 'handing_over', event: 'interrupted', facts: { canAskEdge: true, edge: 'unreachable' }, expect: { kind: 'wait' } },
  { row: 'interrupted, SMTP or no edge any more', from: 'handing_over', event: 'interrupted', facts: { canAskEdge: false }, expect: settled('send_unknown', 'interrupted_during_handover') },
  { row: 'owner resolves send_unknown as sent', from: 'send_unknown', event: 'owner_confirmed_sent', facts: {}, expect: sent('owner_confirmed_sent') },
  { row: 'owner resolves send_unknown as not sent', from: 'send_unknown', event: 'owner_confirmed_not_sent', facts: {}, expect: settled('failed', 'owner_confirmed_not_sent') },
];

const reached = new Set<OutboxTransition>();

for (const c of CASES) {
  t.test(c.row, async (t) => {
    const step = outboxTransition(c.from, c.event, c.facts);
    reached.add(step);
    if (c.expect === 'ask_edge') return void t.ok('askEdge' in step.to, 'the edge is asked before deciding');
    if (c.expect === 'handing_over') return void t.ok('handingOver' in step.to, 'marked handing_over');
    t.same(outboxAction(step, DETAIL), c.expect);
  });
}

t.test('every row of the code table is reached by a docs case', async (t) => {
  for (const row of OUTBOX_TRANSITIONS) t.ok(reached.has(row), `${row.event} from ${row.from}: ${row.when}`);
});

t.test('nothing is handed over twice without asking: no lost answer or interruption requeues SMTP mail', async (t) => {
  for (const event of ['unknown', 'interrupted'] as const) {
    for (const retriesLeft of [true, false]) {
      const action = outboxAction(outboxTransition('handing_over', event, { canAskEdge: false, retriesLeft }), DETAIL);
      t.not(action.kind, 'requeue', `${event}, retries left: ${retriesLeft}`);
    }
  }
});
