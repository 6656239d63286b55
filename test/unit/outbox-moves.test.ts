/**
 * The outbox's guarded writes (moveOutbox, src/mail/outbox.ts) on a real database: one case per
 * row of docs/outbound.md "Outbox states" that writes, applied to a message in the row's
 * from-state (what is stored after it: the outbox row's state, the message's `send_status`,
 * reason and event), and applied to a message in every other state, where nothing may change.
 */
import t, { type Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { inboxById } from '../../src/auth/inbox-lookup.js';
import { queueOutbound, type PreparedSend } from '../../src/mail/outbound.js';
import { moveOutbox, outboxAction, outboxTransition, resolveSendUnknown, type OutboxEvent, type OutboxFacts, type OutboxFrom, type OutboxWrite } from '../../src/mail/outbox.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const INBOX = 'agent@example.com';
const DETAIL = { recipients: ['a@example.org'], retryDelayMs: 30_000, error: 'connection reset' };

interface Stored {
  state: 'queued' | 'handing_over' | 'done';
  send_status: string;
  send_reason: string | null;
  /** The newest event about the message, or null. */
  event: string | null;
}

interface Case {
  row: string;
  from: OutboxFrom;
  event: OutboxEvent;
  facts: OutboxFacts;
  /** What is stored after the write. */
  after: Omit<Stored, 'event'> & { event?: string };
}

const CASES: Case[] = [
  { row: 'queued, a recipient now blocked', from: 'queued', event: 'refused_by_lists', facts: {}, after: { state: 'done', send_status: 'failed', send_reason: 'recipient_refused_by_lists', event: 'message.failed' } },
  { row: 'queued and due', from: 'queued', event: 'due', facts: {}, after: { state: 'handing_over', send_status: 'queued', send_reason: null } },
  { row: 'accepted', from: 'handing_over', event: 'accepted', facts: { canAskEdge: true }, after: { state: 'done', send_status: 'sent', send_reason: null, event: 'message.sent' } },
  { row: 'rejected by the provider', from: 'handing_over', event: 'rejected', facts: {}, after: { state: 'done', send_status: 'rejected', send_reason: 'provider_rejected', event: 'message.rejected' } },
  { row: 'answer lost, edge', from: 'handing_over', event: 'unknown', facts: { canAskEdge: true }, after: { state: 'queued', send_status: 'queued', send_reason: null } },
  { row: 'answer lost, SMTP', from: 'handing_over', event: 'unknown', facts: { canAskEdge: false }, after: { state: 'done', send_status: 'send_unknown', send_reason: 'answer_lost_after_handover', event: 'message.send_unknown' } },
  { row: 'temporary failure, attempts left', from: 'handing_over', event: 'retry', facts: { retriesLeft: true }, after: { state: 'queued', send_status: 'queued', send_reason: null } },
  { row: 'attempts used up, the edge has it', from: 'handing_over', event: 'retry', facts: { canAskEdge: true, edge: 'known' }, after: { state: 'done', send_status: 'sent', send_reason: null, event: 'message.sent' } },
  { row: 'attempts used up, the edge unreachable', from: 'handing_over', event: 'retry', facts: { canAskEdge: true, edge: 'unreachable' }, after: { state: 'done', send_status: 'send_unknown', send_reason: 'edge_unreachable', event: 'message.send_unknown' } },
  { row: 'attempts used up, SMTP', from: 'handing_over', event: 'retry', facts: { canAskEdge: false }, after: { state: 'done', send_status: 'failed', send_reason: 'transport_failed', event: 'message.failed' } },
  { row: 'found at startup, the edge has it', from: 'handing_over', event: 'interrupted', facts: { canAskEdge: true, edge: 'known' }, after: { state: 'done', send_status: 'sent', send_reason: null, event: 'message.sent' } },
  { row: 'found at startup, the edge has not got it', from: 'handing_over', event: 'interrupted', facts: { canAskEdge: true, edge: 'not_known' }, after: { state: 'queued', send_status: 'queued', send_reason: null } },
  { row: 'found at startup, SMTP', from: 'handing_over', event: 'interrupted', facts: { canAskEdge: false }, after: { state: 'done', send_status: 'send_unknown', send_reason: 'interrupted_during_handover', event: 'message.send_unknown' } },
  { row: 'owner resolves send_unknown as sent', from: 'send_unknown', event: 'owner_confirmed_sent', facts: {}, after: { state: 'done', send_status: 'sent', send_reason: 'owner_confirmed_sent', event: 'message.sent' } },
  { row: 'owner resolves send_unknown as not sent', from: 'send_unknown', event: 'owner_confirmed_not_sent', facts: {}, after: { state: 'done', send_status: 'failed', send_reason: 'owner_confirmed_not_sent', event: 'message.failed' } },
];

function store(t: Test): Db {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, INBOX);
  return db;
}

/** A message queued as the send path queues one (the MIME is a stand-in: nothing is handed over here). */
function queued(db: Db): number {
  const send: PreparedSend = {
    inbox: inboxById(db, INBOX)!,
    kind: 'send',
    composition: { to: [{ address: 'a@example.org', display: 'a@example.org' }], cc: [], bcc: [], replyTo: [], subject: 'Hello', text: 'Hi', html: null, attachments: [], headers: {}, labels: [] },
    threading: { threadId: null, inReplyTo: null, references: [] },
    messageId: `<${randomBytes(8).toString('hex')}@example.com>`,
    timestamp: new Date().toISOString(),
    raw: Buffer.from('Subject: Hello\r\n\r\nHi\r\n'),
    extracted: { text: 'Hi', html: null },
  };
  return db.transaction(() => queueOutbound(db, send).rowid)();
}

/** The write a row makes, as the outbox loop and the resolve build it. */
function writeOf(from: OutboxFrom, event: OutboxEvent, facts: OutboxFacts): OutboxWrite {
  const step = outboxTransition(from, event, facts);
  if ('handingOver' in step.to) return { kind: 'handing_over', transport: 'edge' };
  const action = outboxAction(step, DETAIL);
  if (action.kind === 'wait') throw new Error(`${event} from ${from} writes nothing`);
  return action;
}

const move = (db: Db, rowid: number, from: OutboxFrom, event: OutboxEvent, facts: OutboxFacts) =>
  db.transaction(() => moveOutbox(db, rowid, outboxTransition(from, event, facts), writeOf(from, event, facts)))();

/** A message brought into `from` through the table's own rows. */
function messageIn(db: Db, from: OutboxFrom | 'done_sent'): number {
  const rowid = queued(db);
  if (from === 'queued') return rowid;
  move(db, rowid, 'queued', 'due', {});
  if (from === 'handing_over') return rowid;
  if (from === 'send_unknown') move(db, rowid, 'handing_over', 'interrupted', { canAskEdge: false });
  else move(db, rowid, 'handing_over', 'accepted', {});
  return rowid;
}

function stored(db: Db, rowid: number): Stored {
  const row = db.prepare('SELECT o.state, m.send_status, m.send_reason FROM outbox o JOIN messages m ON m.id = o.message_rowid WHERE o.message_rowid = ?').get(rowid) as Omit<Stored, 'event'>;
  const event = db.prepare('SELECT event_type FROM events WHERE message_rowid = ? ORDER BY seq DESC LIMIT 1').get(rowid) as { event_type: string } | undefined;
  return { ...row, event: event?.event_type ?? null };
}

const STATES: readonly (OutboxFrom | 'done_sent')[] = ['queued', 'handing_over', 'send_unknown', 'done_sent'];

for (const c of CASES) {
  t.test(c.row, async (t) => {
    const db = store(t);
    const rowid = messageIn(db, c.from);
    const moved = move(db, rowid, c.from, c.event, c.facts);
    t.equal(moved.moved, true, `moved from ${c.from}`);
    const after = stored(db, rowid);
    t.same({ state: after.state, send_status: after.send_status, send_reason: after.send_reason }, { state: c.after.state, send_status: c.after.send_status, send_reason: c.after.send_reason });
    if (c.after.event) {
      t.equal(after.event, c.after.event, 'the event is appended with the change');
      t.equal(moved.moved && moved.seq !== null, true, 'its seq is returned for publishing');
    }
    for (const other of STATES.filter((s) => s !== c.from)) {
      const rowidThere = messageIn(db, other);
      const before = stored(db, rowidThere);
      t.same(move(db, rowidThere, c.from, c.event, c.facts), { moved: false }, `refused from ${other}`);
      t.same(stored(db, rowidThere), before, `nothing changed from ${other}`);
    }
  });
}

t.test('a requeue waits the retry delay and keeps the transport error; the mark counts an attempt', async (t) => {
  const db = store(t);
  const rowid = messageIn(db, 'handing_over');
  const marked = db.prepare('SELECT attempts, transport FROM outbox WHERE message_rowid = ?').get(rowid);
  t.same(marked, { attempts: 1, transport: 'edge' });
  const before = Date.now();
  move(db, rowid, 'handing_over', 'retry', { retriesLeft: true });
  const row = db.prepare('SELECT next_attempt_at, last_error FROM outbox WHERE message_rowid = ?').get(rowid) as { next_attempt_at: string; last_error: string };
  t.equal(row.last_error, 'connection reset');
  t.ok(Date.parse(row.next_attempt_at) >= before + DETAIL.retryDelayMs, 'due after the retry delay');
});

t.test('a write the row does not lead to is a bug and throws', async (t) => {
  const db = store(t);
  const rowid = messageIn(db, 'queued');
  t.throws(() => moveOutbox(db, rowid, outboxTransition('queued', 'due'), { kind: 'requeue', delayMs: 0, error: 'x' }));
  t.equal(stored(db, rowid).state, 'queued');
});

t.test('the owner resolve of a message that is not send_unknown is refused', async (t) => {
  const db = store(t);
  const rowid = messageIn(db, 'done_sent');
  const messageId = (db.prepare('SELECT message_id FROM messages WHERE id = ?').get(rowid) as { message_id: string }).message_id;
  t.equal(resolveSendUnknown(db, INBOX, messageId, 'failed'), 'not_send_unknown');
  t.equal(stored(db, rowid).send_status, 'sent');
  t.equal(resolveSendUnknown(db, INBOX, '<missing@example.com>', 'sent'), 'not_found');
});
