/**
 * Stored thread summaries (migration 12, src/mail/threads.ts) on a real database: after every
 * kind of change (new mail, replies, hidden mail, attachments, label edits, deletions) each
 * thread's stored summary exists and equals the summary made from its messages; a change made
 * outside any transaction (no commit hook) clears the stored summary through the triggers, and
 * lists stay right by making it from the messages; other views never use the stored summary.
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { commitInbound } from '../../src/mail/store.js';
import { deleteMessage, updateMessageLabels } from '../../src/mail/messages.js';
import { HIDDEN_LABELS } from '../../src/mail/labels.js';
import { listThreads, listedSummaries, threadSummaries, LISTED_THREAD_COLUMNS, type ListedThreadRow } from '../../src/mail/threads.js';
import { parseMime } from '../../workers/pool/parse.js';
import { insertInbox, threadPagesDrift } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const INBOX = 'summaries@example.com';
const DEFAULT_VIEW = { excluded: HIDDEN_LABELS };
const ALL_VIEW = { excluded: [] };

function rows(db: Db): ListedThreadRow[] {
  return db.prepare(`SELECT ${LISTED_THREAD_COLUMNS} FROM threads t ORDER BY t.rowid`).all() as ListedThreadRow[];
}

/** Every thread: stored summary present (unless expected otherwise) and equal to the one made from its messages. */
function check(t: typeof import('tap').default, db: Db, label: string, expectStored = true): void {
  const listed = rows(db);
  if (expectStored) t.same(listed.filter((r) => r.summary === null).map((r) => r.thread_id), [], `${label}: every thread has a stored summary`);
  const fromMessages = threadSummaries(db, listed, DEFAULT_VIEW);
  t.same(listedSummaries(db, listed, DEFAULT_VIEW), fromMessages, `${label}: stored summaries equal summaries made from the messages`);
  t.same(threadPagesDrift(db), [], `${label}: thread_pages holds what each thread's row does`);
}

t.test('stored thread summaries follow every change', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, INBOX);
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${INBOX}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  const attachment = (await parseMime(
    new TextEncoder().encode(
      `From: b@example.net\r\nTo: ${INBOX}\r\nSubject: y\r\nMessage-ID: <a@example.net>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n--XX\r\nContent-Type: text/plain; name=a.txt\r\nContent-Disposition: attachment; filename=a.txt\r\n\r\nhello\r\n--XX--\r\n`,
    ),
  )).attachments;
  let n = 0;
  const receive = (opts: { replyTo?: number; from?: string; hidden?: boolean; attach?: boolean } = {}) => {
    const i = n++;
    return commitInbound(db, {
      inboxId: INBOX,
      parsed: {
        ...template,
        messageId: `<m${i}@example.net>`,
        inReplyTo: opts.replyTo === undefined ? null : `<m${opts.replyTo}@example.net>`,
        references: opts.replyTo === undefined ? [] : [`<m${opts.replyTo}@example.net>`],
        subject: `Subject ${i}`,
        from: [{ address: opts.from ?? `sender${i % 3}@example.net`, name: `Sender ${i % 3}` }],
        text: `Body ${i}`,
        attachments: opts.attach ? attachment : [],
        date: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
      },
      raw: new Uint8Array(0),
      sourceKey: `k${i}`,
      receivedAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
      ...(opts.hidden ? { hiddenLabels: ['spam' as const] } : {}),
    });
  };

  db.transaction(() => {
    for (let i = 0; i < 6; i++) receive();
  })();
  check(t, db, 'new threads');
  receive({ replyTo: 0, from: 'other@example.net' });
  receive({ replyTo: 0, attach: true });
  receive({ replyTo: 1 });
  receive({ replyTo: 2, hidden: true });
  check(t, db, 'replies, one with an attachment');
  const stored = JSON.parse(rows(db)[0].summary!) as { message_count: number; attachments: unknown[]; senders: string[] };
  t.equal(stored.message_count, 3);
  t.equal(stored.attachments.length, 1);

  db.transaction(() => updateMessageLabels(db, INBOX, ['<m1@example.net>', '<m2@example.net>'], ALL_VIEW, { add: ['important'], remove: ['unread'] }))();
  check(t, db, 'label edits');
  db.transaction(() => updateMessageLabels(db, INBOX, ['<m6@example.net>'], ALL_VIEW, { add: ['trash'], remove: [] }))();
  check(t, db, 'a message moved to the trash (hidden)');
  t.equal((JSON.parse(rows(db)[0].summary!) as { message_count: number }).message_count, 2, 'the hidden message is left out of the stored summary');
  t.not(listedSummaries(db, rows(db), ALL_VIEW)[0].message_count, 2, 'a view that includes the trash does not use the stored summary');
  t.same(listedSummaries(db, rows(db), ALL_VIEW), threadSummaries(db, rows(db), ALL_VIEW));

  const hiddenThread = receive({ hidden: true }).threadId;
  check(t, db, 'a thread of hidden mail only');
  const hiddenRow = db.prepare('SELECT shown, summary FROM threads WHERE thread_id = ?').get(hiddenThread) as { shown: number; summary: string | null };
  t.equal(hiddenRow.shown, 0, 'stored as not shown in the default view');
  const listedIds = (view: typeof DEFAULT_VIEW | typeof ALL_VIEW) => listThreads(db, [INBOX], {}, view, { limit: 50, cursor: null, ascending: false }).items.map((i) => i.thread_id);
  t.notOk(listedIds(DEFAULT_VIEW).includes(hiddenThread), 'the default list leaves it out');
  t.ok(listedIds(ALL_VIEW).includes(hiddenThread), 'a list that includes hidden mail shows it');
  t.equal(listedIds(DEFAULT_VIEW).length, rows(db).filter((r) => r.thread_id !== hiddenThread).length, 'every other thread is listed');

  db.transaction(() => deleteMessage(db, INBOX, '<m7@example.net>', ALL_VIEW))();
  check(t, db, 'a message deleted');

  // A single write outside a transaction runs as a transaction of its own (src/db/open.ts), so
  // the hook remakes the summary at once.
  db.prepare("INSERT INTO message_labels (message_rowid, label) SELECT id, 'important' FROM messages WHERE message_id = '<m3@example.net>'").run();
  check(t, db, 'a label written by a single statement outside a transaction');
  // A write that bypasses the hook altogether (raw SQL through exec): the triggers clear the summary instead.
  db.exec("INSERT INTO message_labels (message_rowid, label) SELECT id, 'flagged' FROM messages WHERE message_id = '<m3@example.net>'");
  const thread3 = rows(db).find((r) => threadSummaries(db, [r], DEFAULT_VIEW)[0].last_message_id === '<m3@example.net>')!;
  t.equal(thread3.summary, null, 'a label written without the hook clears the stored summary');
  check(t, db, 'after a write without the hook', false);
  const page = listThreads(db, [INBOX], {}, DEFAULT_VIEW, { limit: 20, cursor: null, ascending: false });
  t.ok(page.items.find((item) => item.thread_id === thread3.thread_id)!.labels.includes('flagged'), 'the list shows the new label all the same');
  db.transaction(() => receive())();
  check(t, db, 'the next transaction remakes what the hook missed');
});
