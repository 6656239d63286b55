/**
 * commitInbound (the mail store's write path) with real MIME parsed by mailparser: stored
 * fields, charsets, attachments, threading, extracted reply text, labels, idempotency and the
 * event written in the same transaction.
 */
import t, { type Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { commitInbound } from '../../src/mail/store.js';
import { rawMime } from '../../src/mail/raw-mime.js';
import { getMessage } from '../../src/mail/messages.js';
import { extractHtml, extractText } from '../../src/mail/extract.js';
import { readVisibility } from '../../src/mail/labels.js';
import { searchGeneration } from '../../src/core/pagination.js';
import type { Principal } from '../../src/auth/principal.js';
import { parseMime } from '../../workers/pool/parse.js';
import { indexedRows, insertInbox } from '../helpers/db.js';
import { deliveredPayload, type StoredEventRow } from '../../src/events/log.js';
import { tempDir } from '../helpers/svc.js';
import { fixture, seedMail, simpleMail } from '../helpers/mail.js';

const INBOX = 'agent@example.com';
const OWNER: Principal = { kind: 'owner', id: 'owner', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };

function store(t: Test): Db {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, INBOX);
  return db;
}

const message = (db: Db, id: string) => getMessage(db, INBOX, id, readVisibility(OWNER))!;
const labels = (db: Db, rowid: number) => (db.prepare('SELECT label FROM message_labels WHERE message_rowid = ? ORDER BY label').all(rowid) as { label: string }[]).map((r) => r.label);
const events = (db: Db) =>
  (db.prepare('SELECT seq, event_type, inbox_id, message_rowid, bodies_from_message, payload FROM events ORDER BY seq').all() as StoredEventRow[]).map((row) => ({
    ...row,
    payload: deliveredPayload(db, row),
  }));

t.test('a plain text message is stored with its fields, labels received and unread, and raw MIME', async (t) => {
  const db = store(t);
  const raw = fixture('plain.eml');
  const result = await seedMail(db, raw, { inboxId: INBOX, receivedAt: '2025-03-04T10:00:05Z' });
  t.equal(result.duplicate, false);
  t.equal(result.messageId, '<plain-1@example.org>');
  t.match(result.threadId, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a new thread gets a UUIDv7');
  const m = message(db, '<plain-1@example.org>');
  t.match(m, {
    inbox_id: INBOX,
    thread_id: result.threadId,
    message_id: '<plain-1@example.org>',
    labels: ['received', 'unread'],
    timestamp: '2025-03-04T10:00:05.000Z',
    from: 'Alice Example <alice@example.org>',
    to: ['Agent <agent@example.com>'],
    cc: null,
    subject: 'Quarterly budget review',
    size: raw.length,
    send_status: null,
    attachments: [],
  });
  t.match(m.text, /quarterly budget review for Thursday/);
  t.equal(m.html, null);
  t.equal(m.extracted_text, m.text!.trim(), 'nothing quoted: extracted text is the whole text');
  t.equal(m.preview, 'Hello agent, Please prepare the quarterly budget review for Thursday. The spreadsheet lives in the shared drive. Thanks, Alice');
  t.equal(m.headers['Subject'], 'Quarterly budget review');
  t.equal(m.headers['Received'], 'from mx.example.org (mx.example.org [192.0.2.10]) by edge.example.com with ESMTPS id abc123 for <agent@example.com>; Tue, 04 Mar 2025 10:00:00 +0000', 'folded headers are unfolded');
  const stored = rawMime(db, result.messageRowid)!;
  t.ok(Buffer.compare(stored, raw) === 0, 'the raw MIME is kept byte for byte');
});

t.test('an HTML-only message gets text derived from the HTML and keeps the HTML', async (t) => {
  const db = store(t);
  await seedMail(db, 'html-only.eml', { inboxId: INBOX });
  const m = message(db, '<html-only-1@example.net>');
  t.match(m.html, /<h1>Gardening tips<\/h1>/);
  t.match(m.text, /Plant tomatoes after the last frost/);
  t.match(m.extracted_html, /Plant <b>tomatoes<\/b>/);
  t.match(m.preview, /Plant tomatoes after the last frost/);
  t.equal(m.from, '"Newsletter, Weekly" <news@example.net>', 'display names with specials are quoted');
});

t.test('multipart mail stores its attachment and inline image with stable ids', async (t) => {
  const db = store(t);
  const raw = fixture('multipart-attachment.eml');
  const first = await seedMail(db, raw, { inboxId: INBOX });
  const m = message(db, '<multi-1@example.org>');
  t.equal(m.attachments.length, 2);
  t.match(m.attachments[0], { filename: 'photo.png', content_type: 'image/png', content_disposition: 'inline', content_id: 'photo1@example.org', size: 70 });
  t.match(m.attachments[1], { filename: 'invoice.pdf', content_type: 'application/pdf', content_disposition: 'attachment', content_id: null, size: 78 });
  t.match(m.attachments[0].attachment_id, /^att_[0-9a-f]{24}$/);
  t.not(m.attachments[0].attachment_id, m.attachments[1].attachment_id);
  t.same(m.cc, ['Carol <carol@example.org>']);
  const content = db.prepare('SELECT content FROM attachments WHERE message_rowid = ? AND attachment_id = ?').get(first.messageRowid, m.attachments[1].attachment_id) as { content: Buffer };
  t.equal(content.content.subarray(0, 5).toString(), '%PDF-', 'the decoded attachment bytes are stored');
  // The same message in another inbox gets the same attachment ids: they depend on the message and the part's position.
  insertInbox(db, 'other@example.com');
  await seedMail(db, raw, { inboxId: 'other@example.com' });
  const again = getMessage(db, 'other@example.com', '<multi-1@example.org>', readVisibility(OWNER))!;
  t.same(
    again.attachments.map((a) => a.attachment_id),
    m.attachments.map((a) => a.attachment_id),
  );
});

t.test('non-UTF-8 charsets (ISO-8859-1, windows-1252) are decoded', async (t) => {
  const db = store(t);
  await seedMail(db, 'latin1.eml', { inboxId: INBOX });
  await seedMail(db, 'cp1252.eml', { inboxId: INBOX });
  const latin = message(db, '<latin1-1@example.de>');
  t.equal(latin.subject, 'Grüße aus München');
  t.equal(latin.from, 'Jürgen Müller <juergen@example.de>');
  t.match(latin.text, 'schöne Grüße aus München! Der Preis beträgt 50 £.');
  const cp = message(db, '<cp1252-1@example.com>');
  t.match(cp.text, '“Quoted” costs € 20 – that’s it.');
});

t.test('a reply joins the thread through In-Reply-To, and through References alone', async (t) => {
  const db = store(t);
  const root = await seedMail(db, 'plain.eml', { inboxId: INBOX, receivedAt: '2025-03-04T10:00:00Z' });
  const viaInReplyTo = await seedMail(db, 'reply-in-reply-to.eml', { inboxId: INBOX, receivedAt: '2025-03-04T11:00:00Z' });
  const viaReferences = await seedMail(db, 'reply-references.eml', { inboxId: INBOX, receivedAt: '2025-03-04T12:00:00Z' });
  t.equal(viaInReplyTo.threadId, root.threadId);
  t.equal(viaReferences.threadId, root.threadId);
  t.equal(message(db, '<reply-irt-1@example.org>').in_reply_to, '<plain-1@example.org>');
  t.same(message(db, '<reply-refs-1@example.org>').references, ['<never-seen@elsewhere.example>', '<plain-1@example.org>']);
  const unrelated = await seedMail(db, simpleMail({ messageId: '<x@example.org>', inReplyTo: '<unknown@example.org>' }), { inboxId: INBOX });
  t.not(unrelated.threadId, root.threadId, 'a reply to an unknown message starts a new thread');
  const thread = db.prepare('SELECT updated_at FROM threads WHERE thread_id = ?').get(root.threadId) as { updated_at: string };
  t.equal(thread.updated_at, '2025-03-04T12:00:00.000Z', 'the thread\'s last activity moves with its newest message');
});

t.test('threading joins the thread of the newest referenced message, within the same inbox only', async (t) => {
  const db = store(t);
  insertInbox(db, 'other@example.com');
  const a = await seedMail(db, simpleMail({ messageId: '<a@example.org>' }), { inboxId: INBOX, receivedAt: '2025-01-01T00:00:00Z' });
  // Two separate threads each hold one of the referenced messages; the newer one wins.
  const b = await seedMail(db, simpleMail({ messageId: '<b@example.org>' }), { inboxId: INBOX, receivedAt: '2025-01-02T00:00:00Z' });
  const reply = await seedMail(db, simpleMail({ messageId: '<c@example.org>', references: '<b@example.org> <a@example.org>' }), { inboxId: INBOX, receivedAt: '2025-01-03T00:00:00Z' });
  t.not(a.threadId, b.threadId);
  t.equal(reply.threadId, b.threadId);
  const elsewhere = await seedMail(db, simpleMail({ messageId: '<d@example.org>', inReplyTo: '<a@example.org>' }), { inboxId: 'other@example.com' });
  t.not(elsewhere.threadId, a.threadId, 'another inbox never joins this inbox\'s thread');
});

t.test('extracted_text and extracted_html drop the quoted history', async (t) => {
  const db = store(t);
  await seedMail(db, 'quoted-reply.eml', { inboxId: INBOX });
  const gmail = message(db, '<quoted-1@example.org>');
  t.equal(gmail.extracted_text, "Friday works for me. Let's meet at noon.", 'the wrapped "On … wrote:" attribution and > lines are gone');
  t.match(gmail.text, /> Are you free for lunch/, 'text keeps everything');
  t.equal(gmail.extracted_html, `<div dir="ltr"><div>Friday works for me. Let's meet at noon.</div></div><br>`, 'the gmail_quote container is removed');
  t.equal(gmail.preview, "Friday works for me. Let's meet at noon.");
  await seedMail(db, 'outlook-reply.eml', { inboxId: INBOX });
  const outlook = message(db, '<outlook-1@example.org>');
  t.equal(outlook.extracted_text, 'Approved, please send the final version.');
  t.equal(outlook.extracted_html, '<html><body><div><p>Approved, please send the final version.</p></div></body></html>', 'everything from the Outlook reply header on is cut and open elements are closed');
});

t.test('quote extraction rules', async (t) => {
  t.equal(extractText('Sounds good.\n\n-----Original Message-----\nFrom: x\n\nold'), 'Sounds good.');
  t.equal(extractText('Yes.\n\nAm 09.03.2025 um 20:00 schrieb Agent <a@b.c>:\n> Frage'), 'Yes.');
  t.equal(extractText('Answer one\n> q1\nAnswer two\n> q2'), 'Answer one\nAnswer two', 'interleaved quotes are dropped, answers kept');
  t.equal(extractText('> only a quotation'), '> only a quotation', 'a message that is only quoted keeps its text');
  t.equal(extractText('On my way home I saw this.'), 'On my way home I saw this.', 'a line starting with "On" is not an attribution');
  t.equal(
    extractHtml('<p>New</p><div class="moz-cite-prefix">On x wrote:</div><blockquote type="cite"><p>Old</p><blockquote type="cite">older</blockquote></blockquote>'),
    '<p>New</p>',
    'Thunderbird / Apple Mail citations are removed, nested ones included',
  );
  t.equal(extractHtml('<p>Hi</p><div class="yahoo_quoted"><div>old</div></div><p>Bye</p>'), '<p>Hi</p><p>Bye</p>');
  t.equal(extractHtml('<blockquote type="cite">all quoted</blockquote>'), '<blockquote type="cite">all quoted</blockquote>', 'nothing new: the whole HTML stays');
  t.equal(extractHtml('<p title="a>b">x</p><!-- <div class="gmail_quote"> -->'), '<p title="a>b">x</p><!-- <div class="gmail_quote"> -->', 'quoted attributes and comments do not confuse the scanner');
});

t.test('a second commit with the same sourceKey returns the first result, with no duplicate and no second event', async (t) => {
  const db = store(t);
  const raw = fixture('plain.eml');
  const parsed = await parseMime(raw);
  const first = commitInbound(db, { inboxId: INBOX, parsed, raw, sourceKey: 'edge/obj-1' });
  const generation = searchGeneration(db);
  const second = commitInbound(db, { inboxId: INBOX, parsed, raw, sourceKey: 'edge/obj-1' });
  t.same(second, { ...first, duplicate: true });
  t.equal((db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n, 1);
  t.equal(events(db).length, 1);
  t.equal(searchGeneration(db), generation, 'nothing changed, so the search index generation stays');
});

t.test('the same Message-ID twice in an inbox is a duplicate even under another sourceKey', async (t) => {
  const db = store(t);
  const first = await seedMail(db, 'plain.eml', { inboxId: INBOX, sourceKey: 'k1' });
  const second = await seedMail(db, 'plain.eml', { inboxId: INBOX, sourceKey: 'k2' });
  t.equal(second.duplicate, true);
  t.equal(second.messageRowid, first.messageRowid);
  t.equal(events(db).length, 1);
});

t.test('a message without Message-ID gets <uuid@inbox-domain>', async (t) => {
  const db = store(t);
  const a = await seedMail(db, simpleMail({ subject: 'no id' }), { inboxId: INBOX });
  const b = await seedMail(db, simpleMail({ subject: 'no id' }), { inboxId: INBOX });
  t.match(a.messageId, /^<[0-9a-f-]{36}@example\.com>$/);
  t.not(a.messageId, b.messageId, 'two such messages are two messages');
});

t.test('the event is written in the same transaction with the message and its thread', async (t) => {
  const db = store(t);
  const before = searchGeneration(db);
  const result = await seedMail(db, 'multipart-attachment.eml', { inboxId: INBOX });
  const [event] = events(db);
  t.equal(event.seq, result.seq);
  t.equal(event.event_type, 'message.received');
  t.equal(event.inbox_id, INBOX);
  t.equal(event.message_rowid, result.messageRowid);
  const body = JSON.parse(event.payload);
  t.match(body, { type: 'event', event_type: 'message.received', event_id: /^evt_/ });
  t.same(body.message, message(db, '<multi-1@example.org>'), 'the payload is the full message');
  t.match(body.thread, { thread_id: result.threadId, inbox_id: INBOX, message_count: 1, last_message_id: '<multi-1@example.org>', subject: 'Site photos and invoice', labels: ['received', 'unread'], senders: ['Bob Builder <bob@example.org>'] });
  t.equal(body.thread.attachments.length, 2);
  t.equal(searchGeneration(db), before + 1, 'the search index generation moved');
  t.equal(indexedRows(db, { match: 'invoice' }), 1, 'the message is indexed for search');

  // A failure inside the transaction leaves nothing behind: no message, no event.
  const raw = fixture('plain.eml');
  const parsed = await parseMime(raw);
  t.throws(() => commitInbound(db, { inboxId: 'missing@example.com', parsed, raw }));
  t.equal(events(db).length, 1);
});

t.test('the event carries the message exactly as a read returns it, also for a body that does not read back as written', async (t) => {
  const db = store(t);
  const raw = Buffer.from(simpleMail({ messageId: '<surrogate-1@example.org>', body: 'plain words' }));
  const parsed = await parseMime(raw);
  t.equal(parsed.text?.isWellFormed(), true, 'parsed text is well-formed');
  // A lone surrogate is not stored as it was given (its UTF-8 bytes read back as U+FFFD):
  // the event must show what a read shows, not what was handed to the commit.
  const odd = { ...parsed, text: 'before \ud800 after', html: '<p>x\udc00y</p>' };
  const result = commitInbound(db, { inboxId: INBOX, parsed: odd, raw });
  const body = JSON.parse(events(db).find((e) => e.seq === result.seq)!.payload);
  const read = message(db, '<surrogate-1@example.org>');
  t.notOk(read.text!.includes('\ud800'), 'the stored text has no lone surrogate');
  t.same(body.message, read, 'the payload is the message as stored');
  const plain = await seedMail(db, simpleMail({ messageId: '<plain-2@example.org>', body: 'ordinary words' }), { inboxId: INBOX });
  t.same(JSON.parse(events(db).find((e) => e.seq === plain.seq)!.payload).message, message(db, '<plain-2@example.org>'), 'and so does an ordinary one');
});

t.test('hidden labels are stored and pick the event variant in the order blocked, spam, unauthenticated', async (t) => {
  const db = store(t);
  const cases: [string[], string][] = [
    [['spam'], 'message.received.spam'],
    [['unauthenticated'], 'message.received.unauthenticated'],
    [['unauthenticated', 'spam'], 'message.received.spam'],
    [['spam', 'blocked', 'unauthenticated'], 'message.received.blocked'],
    [['unauthenticated', 'blocked'], 'message.received.blocked'],
  ];
  for (const [i, [hidden, type]] of cases.entries()) {
    const result = await seedMail(db, simpleMail({ messageId: `<h${i}@example.org>` }), { inboxId: INBOX, hiddenLabels: hidden as ('spam' | 'blocked' | 'unauthenticated')[] });
    const event = events(db).find((e) => e.seq === result.seq)!;
    t.equal(event.event_type, type, hidden.join('+'));
    t.same(labels(db, result.messageRowid), ['received', 'unread', ...hidden].sort());
    const body = JSON.parse(event.payload);
    t.same(body.message.labels, ['received', 'unread', ...hidden].sort(), 'the event shows the hidden labels to its readers');
    t.equal(body.thread.message_count, 1);
  }
});
