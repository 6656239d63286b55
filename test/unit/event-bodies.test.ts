/**
 * A received message's event stores the message without its bodies and reads them from the
 * message row when delivered (migration 32, src/events/log.ts): what is delivered is the message
 * as a read returns it; the stored row holds no body; a deleted message's event delivers null
 * bodies whatever deleted it, and a later message given the same row id lends it nothing; events
 * stored before keep their own copy.
 */
import t, { type Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { openDatabase, type Db } from '../../src/db/open.js';
import { getMessage, deleteMessage } from '../../src/mail/messages.js';
import { deleteThread } from '../../src/mail/threads.js';
import { deleteInbox } from '../../src/mail/inboxes.js';
import { readVisibility } from '../../src/mail/labels.js';
import { appendEvent, deliveredPayload, eventsAfter, storedEventsAfter, type StoredEventRow } from '../../src/events/log.js';
import type { Principal } from '../../src/auth/principal.js';
import { databaseAtSchema, insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';
import { seedMail, simpleMail } from '../helpers/mail.js';

const INBOX = 'agent@example.com';
const OTHER = 'other@example.com';
const OWNER: Principal = { kind: 'owner', id: 'owner', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };
const everything = readVisibility(OWNER);

function store(t: Test): Db {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, INBOX);
  insertInbox(db, OTHER);
  return db;
}

const stored = (db: Db, seq: number) => db.prepare('SELECT seq, event_id, event_type, inbox_id, pod_id, message_rowid, bodies_from_message, payload FROM events WHERE seq = ?').get(seq) as StoredEventRow;
const delivered = (db: Db, seq: number) => JSON.parse(deliveredPayload(db, stored(db, seq))) as { message: Record<string, unknown>; thread: Record<string, unknown> };

/** Past the 200 characters of the preview, which the event keeps (and redaction empties). */
const FILLER = 'Some words to fill the preview. '.repeat(8);
/** A body with what JSON must escape, characters beyond the BMP, and its quoted history. */
const BODY = `Line "one" ${FILLER}with a \\ backslash,\ttab and \u2028separator; emoji \u{1F4EC}.\n\nOn Monday someone wrote:\n> quoted "history"\n`;
const HTML_MAIL = [
  'From: Sender <sender@example.org>',
  `To: ${INBOX}`,
  'Subject: Both parts',
  'Message-ID: <both@example.org>',
  'MIME-Version: 1.0',
  'Content-Type: multipart/alternative; boundary=b',
  '',
  '--b',
  'Content-Type: text/plain; charset=utf-8',
  '',
  `Plain part ${FILLER}with the word zephyr.`,
  '--b',
  'Content-Type: text/html; charset=utf-8',
  '',
  `<p>HTML part ${FILLER}with the word <b>zephyr</b> &amp; "quotes".</p>`,
  '--b--',
  '',
].join('\n');

t.test('the stored event holds no body; the delivered one is the message as a read returns it', async (t) => {
  const db = store(t);
  for (const [raw, id] of [
    [simpleMail({ messageId: '<plain@example.org>', subject: 'Plain', body: BODY }), '<plain@example.org>'],
    [HTML_MAIL, '<both@example.org>'],
  ] as const) {
    const result = await seedMail(db, raw, { inboxId: INBOX, sourceKey: `k-${id}` });
    const row = stored(db, result.seq!);
    t.equal(row.bodies_from_message, 1, `${id}: marked as reading its bodies from the message`);
    t.equal(row.message_rowid, result.messageRowid);
    const storedMessage = (JSON.parse(row.payload) as { message: Record<string, unknown> }).message;
    for (const field of ['text', 'html', 'extracted_text', 'extracted_html']) t.notOk(field in storedMessage, `${id}: ${field} is not stored in the event`);
    t.notMatch(row.payload, /zephyr|backslash/, `${id}: no body text in the stored row`);

    const read = getMessage(db, INBOX, id, everything)!;
    const event = delivered(db, result.seq!);
    t.same(event.message, read, `${id}: the delivered message equals a read of it`);
    t.equal(event.message.text, read.text);
    t.equal(event.message.extracted_text, read.extracted_text, `${id}: extracted text included (a span of the text or its own copy)`);
    t.equal(Object.keys(event)[Object.keys(event).length - 1], 'message', 'the message is the last key of the event');
    t.same(Object.keys(event.message).slice(-4), ['text', 'html', 'extracted_text', 'extracted_html'], 'the bodies are the message\'s last keys');
  }
  const plain = getMessage(db, INBOX, '<plain@example.org>', everything)!;
  t.match(plain.text, /with a \\ backslash,\ttab and \u2028separator; emoji \u{1F4EC}/u, 'escapes and astral characters survive the splice');
  t.match(plain.extracted_text, /^Line "one"/);
  t.notMatch(plain.extracted_text, /quoted/, 'the extracted text stops before the quoted history');

  // The readers of the log: the WebSocket hub and the webhook loop (raw), tests and tools (parsed).
  const raw = storedEventsAfter(db, 0, 10).map((row) => ({ seq: row.seq, payload: deliveredPayload(db, row) }));
  t.equal(raw.length, 2);
  for (const e of raw) t.same(JSON.parse(e.payload), JSON.parse(deliveredPayload(db, stored(db, e.seq))));
  t.same(eventsAfter(db, 0, 10).map((e) => e.event), raw.map((e) => JSON.parse(e.payload)));
});

t.test('deleting the message, its thread or its inbox leaves null bodies, and a reused row id lends none', async (t) => {
  for (const how of ['message', 'thread', 'inbox', 'cascade'] as const) {
    const db = store(t);
    const doomed = await seedMail(db, simpleMail({ messageId: '<doomed@example.org>', subject: 'Doomed', body: `${FILLER}the secret zephyr plans` }), { inboxId: INBOX, sourceKey: 'doomed' });
    db.transaction(() => {
      if (how === 'message') t.ok(deleteMessage(db, INBOX, '<doomed@example.org>', everything));
      else if (how === 'thread') t.ok(deleteThread(db, INBOX, doomed.threadId, everything));
      else if (how === 'inbox') deleteInbox(db, INBOX);
      // A deletion that skips the redaction step: only the trigger of migration 32 is left.
      else db.prepare('DELETE FROM inboxes WHERE inbox_id = ?').run(INBOX);
    })();
    const row = stored(db, doomed.seq!);
    t.equal(row.bodies_from_message, 0, `${how}: the event no longer refers to a message row`);
    t.notMatch(row.payload, /zephyr/, `${how}: no body remains`);
    const event = delivered(db, doomed.seq!);
    t.match(event.message, { text: null, html: null, extracted_text: null, extracted_html: null }, `${how}: the bodies are null`);
    if (how !== 'cascade') t.match(event.message, { subject: null, redacted: true }, `${how}: and the rest is redacted as before`);

    // SQLite gives the largest free row id again: the next message takes the deleted one's.
    const next = await seedMail(db, simpleMail({ to: OTHER, messageId: '<next@example.org>', subject: 'Another inbox', body: 'unrelated private words' }), { inboxId: OTHER, sourceKey: 'next' });
    t.equal(next.messageRowid, doomed.messageRowid, `${how}: the row id is reused (the case this guards)`);
    t.notMatch(deliveredPayload(db, stored(db, doomed.seq!)), /unrelated private words/, `${how}: the old event does not show the new message's body`);
    t.match(delivered(db, next.seq!).message, { text: /unrelated private words/ }, `${how}: the new message's own event does`);
  }
});

t.test('a row read before its message was deleted never lends the bodies of the message that took its row id', async (t) => {
  for (const reuse of ['another inbox', 'the same inbox'] as const) {
    const db = store(t);
    const own = await seedMail(db, simpleMail({ messageId: '<own@example.org>', body: `${FILLER}own words` }), { inboxId: INBOX, sourceKey: 'own' });
    // A reader holds the row (the webhook loop holds its batch while it delivers, the hub for a turn)...
    const held = storedEventsAfter(db, 0, 100).find((e) => e.seq === own.seq)!;
    t.equal(held.bodies_from_message, 1);
    t.match(deliveredPayload(db, held), /own words/, `${reuse}: read while the message exists, the bodies are there`);
    // ...while the message is deleted and the next message takes its row id.
    db.transaction(() => t.ok(deleteMessage(db, INBOX, '<own@example.org>', everything)))();
    const target = reuse === 'another inbox' ? OTHER : INBOX;
    const next = await seedMail(db, simpleMail({ to: target, messageId: '<next@example.org>', body: `${FILLER}victim secret 12345` }), { inboxId: target, sourceKey: 'next' });
    t.equal(next.messageRowid, own.messageRowid, `${reuse}: the row id was reused`);
    const delivered = deliveredPayload(db, held);
    t.notMatch(delivered, /victim secret 12345|own words/, `${reuse}: the held row delivers neither the new message's body nor the deleted one's`);
    t.match(JSON.parse(delivered), { message: { text: null, html: null, redacted: true } }, `${reuse}: it is delivered as the deletion left it`);
    // An event pruned meanwhile is sent as held, without bodies.
    db.prepare('DELETE FROM events WHERE seq = ?').run(own.seq);
    t.match(JSON.parse(deliveredPayload(db, held)), { message: { text: null, extracted_text: null } }, `${reuse}: a pruned event has null bodies`);
  }
});

t.test('events stored with their bodies (before migration 32) and other events are delivered as stored', async (t) => {
  const db = store(t);
  const message = await seedMail(db, simpleMail({ messageId: '<old@example.org>', body: 'kept body' }), { inboxId: INBOX, sourceKey: 'old' });
  const full = deliveredPayload(db, stored(db, message.seq!));
  // An event as migration 31 and earlier stored it: the whole message in the payload.
  const old = db.transaction(() => appendEvent(db, { eventType: 'message.received', inboxId: INBOX, payloadKey: 'message', payload: JSON.parse(full).message, messageRowid: message.messageRowid }))();
  t.equal(stored(db, old.seq).bodies_from_message, 0);
  t.match(deliveredPayload(db, stored(db, old.seq)), /kept body/, 'its own copy is delivered');
  const other = db.transaction(() => appendEvent(db, { eventType: 'domain.verified', inboxId: null, payloadKey: 'domain', payload: { domain: 'example.com' } }))();
  const row = stored(db, other.seq);
  t.equal(deliveredPayload(db, row), row.payload, 'an event without a message is its stored text');
  // An event whose message moved to the extra keys' name still puts the payload last.
  const shadow = db.transaction(() =>
    appendEvent(db, { eventType: 'message.received', inboxId: INBOX, payloadKey: 'message', payload: JSON.parse(full).message, extra: { message: { stale: true }, thread: {} }, messageRowid: message.messageRowid, bodiesFromMessage: true }),
  )();
  const event = JSON.parse(deliveredPayload(db, stored(db, shadow.seq))) as Record<string, Record<string, unknown>>;
  t.same(Object.keys(event).slice(-1), ['message']);
  t.notOk('stale' in event.message, 'the payload wins over an extra of the same name');
  t.match(event.message.text, /kept body/);
});

t.test('an upgrade from schema 31 keeps every stored event as it was delivered before', async (t) => {
  const file = path.join(tempDir(), 'svc.db');
  const key = randomBytes(32);
  const NOW = '2026-11-01T00:00:00.000Z';
  // The home as an svc of schema 31 left it, through a connection of its own.
  const old = databaseAtSchema(file, key, 31);
  old.prepare('INSERT INTO inboxes (inbox_id, username, domain, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(INBOX, 'agent', 'example.com', NOW, NOW);
  old.prepare("INSERT INTO threads (thread_id, inbox_id, created_at, updated_at) VALUES ('th1', ?, ?, ?)").run(INBOX, NOW, NOW);
  const rowid = Number(
    old
      .prepare("INSERT INTO messages (inbox_id, thread_id, message_id, to_addresses, text, size, timestamp, direction, created_at, updated_at) VALUES (?, 'th1', '<m1@x>', '[]', 'the old body', 1, ?, 'inbound', ?, ?)")
      .run(INBOX, NOW, NOW, NOW).lastInsertRowid,
  );
  const payload = JSON.stringify({ type: 'event', event_type: 'message.received', event_id: 'evt_old', thread: {}, message: { message_id: '<m1@x>', text: 'the old body', html: null } });
  old.prepare("INSERT INTO events (event_id, event_type, inbox_id, message_rowid, payload, created_at) VALUES ('evt_old', 'message.received', ?, ?, ?, ?)").run(INBOX, rowid, payload, NOW);
  old.close();

  const db = openDatabase(file, key, { migrate: true });
  t.teardown(() => db.close());
  t.equal(db.pragma('user_version', { simple: true }), MIGRATIONS.length, 'upgraded to the newest schema');
  const row = db.prepare("SELECT seq, message_rowid, bodies_from_message, payload FROM events WHERE event_id = 'evt_old'").get() as StoredEventRow;
  t.equal(row.bodies_from_message, 0, 'an old event keeps its own copy');
  t.equal(deliveredPayload(db, row), payload, 'and is delivered byte for byte as before');
  db.transaction(() => t.ok(deleteMessage(db, INBOX, '<m1@x>', everything)))();
  const after = db.prepare("SELECT seq, message_rowid, bodies_from_message, payload FROM events WHERE event_id = 'evt_old'").get() as StoredEventRow;
  t.match(JSON.parse(deliveredPayload(db, after)), { message: { text: null, redacted: true } }, 'deleting its message redacts it as before');
});
