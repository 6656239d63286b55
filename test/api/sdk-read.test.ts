/**
 * The official AgentMail SDK as a real client of the read side: threads and messages listed,
 * searched, read and labelled through `agentmail` with an API key, with no errors and the
 * SDK's camelCase types filled in.
 */
import t from 'tap';
import { AgentMailClient } from 'agentmail';
import type { Db } from '../../src/db/open.js';
import { startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { fixture, seedMail, simpleMail } from '../helpers/mail.js';

let svc: RunningSvc;
let db: Db;
let client: AgentMailClient;
const INBOX = 'sdk-agent@example.com';
let threadId: string;

t.before(async () => {
  svc = await startSvc();
  db = openHomeDb(svc.home);
  await createInbox(svc, INBOX);
  const { secret } = await createApiKey(svc, { permissions: ['inbox_read', 'message_read', 'message_update'], inboxIds: [INBOX] });
  client = new AgentMailClient({ apiKey: secret, baseUrl: svc.url, maxRetries: 0 });
  const root = await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: INBOX, receivedAt: '2025-05-01T10:00:00.000Z' });
  threadId = root.threadId;
  await seedMail(db, simpleMail({ to: INBOX, messageId: '<sdk-2@x.org>', subject: 'Re: Site photos and invoice', inReplyTo: '<multi-1@example.org>', body: 'Thanks, received the invoice.' }), {
    inboxId: INBOX,
    receivedAt: '2025-05-01T11:00:00.000Z',
  });
  await seedMail(db, simpleMail({ to: INBOX, messageId: '<sdk-3@x.org>', subject: 'Separate topic', body: 'Unrelated.' }), { inboxId: INBOX, receivedAt: '2025-05-01T09:00:00.000Z' });
});
t.teardown(async () => {
  db.close();
  await svc.stop();
});

t.test('threads.list and inboxes.threads.list return ThreadItems', async (t) => {
  const all = await client.threads.list({ limit: 10 });
  t.equal(all.count, 2);
  t.equal(all.threads[0].threadId, threadId);
  t.match(all.threads[0], { inboxId: INBOX, messageCount: 2, lastMessageId: '<sdk-2@x.org>', subject: 'Site photos and invoice', labels: ['received', 'unread'] });
  t.ok(all.threads[0].timestamp instanceof Date, 'timestamps parse as dates');
  t.ok(all.threads[0].createdAt instanceof Date);
  const scoped = await client.inboxes.threads.list(INBOX, { limit: 1 });
  t.equal(scoped.threads.length, 1);
  t.ok(scoped.nextPageToken, 'a next page token');
  const next = await client.inboxes.threads.list(INBOX, { limit: 1, pageToken: scoped.nextPageToken! });
  t.equal(next.threads[0].subject, 'Separate topic');
  const filtered = await client.inboxes.threads.list(INBOX, { labels: ['unread'], senders: ['bob@example.org'], before: new Date('2030-01-01T00:00:00Z'), after: new Date('2025-01-01T00:00:00Z') });
  t.same(
    filtered.threads.map((x) => x.threadId),
    [threadId],
    'the SDK\'s array and date encodings are understood',
  );
});

t.test('threads.get returns the thread with its messages; attachments resolve to download links', async (t) => {
  const thread = await client.threads.get(threadId);
  t.equal(thread.threadId, threadId);
  t.equal(thread.messages.length, 2);
  t.equal(thread.messages[0].messageId, '<multi-1@example.org>');
  t.match(thread.messages[1], { extractedText: 'Thanks, received the invoice.', from: 'Sender <sender@example.org>' });
  const pdf = thread.attachments!.find((a) => a.filename === 'invoice.pdf')!;
  const att = await client.threads.getAttachment(threadId, pdf.attachmentId);
  t.match(att, { attachmentId: pdf.attachmentId, filename: 'invoice.pdf', size: 78, downloadUrl: /\/v0\/downloads\// });
  t.ok(att.expiresAt instanceof Date);
  const viaInbox = await client.inboxes.threads.get(INBOX, threadId, { limit: 1 });
  t.same(
    viaInbox.messages.map((m) => m.messageId),
    ['<sdk-2@x.org>'],
  );
});

t.test('threads.search and inboxes.messages.search rank matches', async (t) => {
  const threads = await client.threads.search({ q: 'invoice' });
  t.same(
    threads.threads.map((x) => x.threadId),
    [threadId],
  );
  const messages = await client.inboxes.messages.search(INBOX, { q: 'invoice' });
  t.same(messages.messages.map((m) => m.messageId).sort(), ['<multi-1@example.org>', '<sdk-2@x.org>']);
});

t.test('inboxes.messages list, get, getRaw, getAttachment, update, batchGet, batchUpdate', async (t) => {
  const list = await client.inboxes.messages.list(INBOX, { limit: 5, subject: ['site photos'] });
  t.same(
    list.messages.map((m) => m.messageId),
    ['<sdk-2@x.org>', '<multi-1@example.org>'],
  );
  const message = await client.inboxes.messages.get(INBOX, '<multi-1@example.org>');
  t.match(message, { messageId: '<multi-1@example.org>', subject: 'Site photos and invoice', text: /site photo/, html: /<img/, cc: ['Carol <carol@example.org>'] });
  t.equal(message.attachments!.length, 2);
  const raw = await client.inboxes.messages.getRaw(INBOX, '<multi-1@example.org>');
  t.match(raw, { downloadUrl: /\/v0\/downloads\// });
  const att = await client.inboxes.messages.getAttachment(INBOX, '<multi-1@example.org>', message.attachments![0].attachmentId);
  t.match(att, { filename: 'photo.png', contentId: 'photo1@example.org', contentDisposition: 'inline' });
  const updated = await client.inboxes.messages.update(INBOX, '<multi-1@example.org>', { removeLabels: ['unread'], addLabels: ['reviewed'] });
  t.same(updated.labels, ['received', 'reviewed']);
  const batch = await client.inboxes.messages.batchGet(INBOX, { messageIds: ['<sdk-2@x.org>', '<sdk-3@x.org>', '<nope@x.org>'] });
  t.same(
    batch.messages.map((m) => m.messageId),
    ['<sdk-2@x.org>', '<sdk-3@x.org>'],
  );
  const batchUpdate = await client.inboxes.messages.batchUpdate(INBOX, { messageIds: ['<sdk-2@x.org>', '<sdk-3@x.org>'], removeLabels: 'unread' });
  t.same(
    batchUpdate.updates.map((u) => u.labels),
    [['received'], ['received']],
  );
  const threadUpdate = await client.threads.update(threadId, { addLabels: ['project'] });
  t.same(threadUpdate.labels, ['project', 'received', 'reviewed']);
});

t.test('SDK errors map to the API error body', async (t) => {
  const failure = (p: Promise<unknown>) => p.then(() => null, (err: unknown) => err);
  t.match(await failure(client.threads.get('0190f3f0-0000-7000-8000-000000000000')), { statusCode: 404, body: { code: 'not_found' } });
  t.match(await failure(client.inboxes.messages.update(INBOX, '<sdk-3@x.org>', { addLabels: ['sent'] })), { statusCode: 400, body: { code: 'validation_error' } });
});
