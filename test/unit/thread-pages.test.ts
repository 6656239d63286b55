/**
 * `thread_pages` (migration 38, src/db/migrations-thread-summaries.ts): what a page of threads
 * shows, in a table where each inbox's threads lie in a key range of their own in the order of
 * their last activity. On a real database filled through the inbound commit path: every page of
 * every list, paged with its cursor either way and across ties of last activity, holds exactly the
 * threads the `threads` rows give, in their order; an inbox's keys stay in its range and follow
 * its threads' activity; deleting a thread or an inbox leaves nothing behind; an upgrade from
 * schema 37 fills the table in order. Scope across shared key ranges: test/security/thread-pages-scope.test.ts.
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { commitInbound } from '../../src/mail/store.js';
import { deleteThread, listThreads } from '../../src/mail/threads.js';
import { deleteInbox } from '../../src/mail/inboxes.js';
import { HIDDEN_LABELS } from '../../src/mail/labels.js';
import { everyPage } from '../helpers/pages.js';
import { parseMime } from '../../workers/pool/parse.js';
import { threadListPage } from '../../src/requests/threads.js';
import { encodePageToken, ensurePageKey } from '../../src/core/pagination.js';
import type { Principal } from '../../src/auth/principal.js';
import { ApiError } from '../../src/core/errors.js';
import { databaseAtSchema, insertInbox, threadPagesDrift } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const INBOXES = ['pages-a@example.com', 'pages-b@example.com', 'pages-c@example.com'];
const DEFAULT_VIEW = { excluded: HIDDEN_LABELS };
const ALL_VIEW = { excluded: [] };
const START = Date.UTC(2026, 0, 1);
const RANGE = 2 ** 40;

const template = parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${INBOXES[0]}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));

/** Message i of a home: inbox i % 3 (every seventh in the first), a reply to i - 3 when i % 3 == 1, spam one in eleven; six to a minute, so threads of one inbox often share their last activity. */
async function receive(db: Db, i: number, minute = Math.floor(i / 6)): Promise<string> {
  const inboxId = INBOXES[i % 7 === 0 ? 0 : i % 3]!;
  const at = new Date(START + minute * 60_000).toISOString();
  const reply = i % 3 === 1 && i >= 3;
  return commitInbound(db, {
    inboxId,
    parsed: { ...(await template), messageId: `<m${i}@example.net>`, inReplyTo: reply ? `<m${i - 3}@example.net>` : null, references: reply ? [`<m${i - 3}@example.net>`] : [], subject: `S ${i}`, from: [{ address: `sender${i % 4}@example.net`, name: '' }], date: at },
    raw: new TextEncoder().encode(`Subject: ${i}\r\n\r\nbody ${i}\r\n`),
    sourceKey: `k${i}`,
    receivedAt: at,
    ...(i % 11 === 4 ? { hiddenLabels: ['spam' as const] } : {}),
  }).threadId;
}

async function filled(count: number): Promise<Db> {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  for (const inbox of INBOXES) insertInbox(db, inbox);
  for (let i = 0; i < count; i++) await receive(db, i);
  return db;
}

/** Every page of a list with its cursor, concatenated: each thread's id and last activity. */
function allThreads(db: Db, inboxIds: string[], filters: Parameters<typeof listThreads>[2], v: { excluded: readonly (typeof HIDDEN_LABELS)[number][] }, limit: number, ascending: boolean) {
  return everyPage((cursor) => listThreads(db, inboxIds, filters, v, { limit, ascending, cursor })).map((i) => ({ thread_id: i.thread_id, updated_at: i.updated_at }));
}

/** The threads of the inboxes the view shows, from the `threads` rows and their messages, newest activity first. */
function expected(db: Db, inboxIds: string[], v: { excluded: readonly string[] }, sender?: string): { thread_id: string; updated_at: string }[] {
  return db
    .prepare(
      `SELECT t.thread_id, t.updated_at FROM threads t WHERE t.inbox_id IN (SELECT value FROM json_each(?))
         AND EXISTS (SELECT 1 FROM messages m WHERE m.thread_id = t.thread_id AND (? IS NULL OR m.from_address LIKE '%' || ? || '%')
                     AND NOT EXISTS (SELECT 1 FROM message_labels l WHERE l.message_rowid = m.id AND l.label IN (SELECT value FROM json_each(?))))
       ORDER BY t.updated_at DESC`,
    )
    .all(JSON.stringify(inboxIds), sender ?? null, sender ?? null, JSON.stringify(v.excluded)) as { thread_id: string; updated_at: string }[];
}

t.test('every page of every list holds the threads their rows give, in order, across ties of last activity', async (t) => {
  const db = await filled(240);
  t.teardown(() => db.close());
  t.same(threadPagesDrift(db), [], 'thread_pages mirrors threads');
  const ties = db.prepare('SELECT count(*) FROM (SELECT inbox_id, updated_at FROM threads GROUP BY 1, 2 HAVING count(*) > 1)').pluck().get() as number;
  t.ok(ties > 3, `threads of one inbox share a last activity (${ties} times)`);
  const lists: [string, string[], { senders?: string[]; labels?: string[] }, { excluded: readonly (typeof HIDDEN_LABELS)[number][] }, string?][] = [
    ['one inbox', [INBOXES[0]!], {}, DEFAULT_VIEW],
    ['one inbox, hidden mail included', [INBOXES[1]!], {}, ALL_VIEW],
    ['every inbox', INBOXES, {}, DEFAULT_VIEW],
    ['one inbox, by sender', [INBOXES[2]!], { senders: ['sender1'] }, DEFAULT_VIEW, 'sender1'],
  ];
  for (const [name, inboxIds, filters, v, sender] of lists) {
    const want = expected(db, inboxIds, v, sender);
    t.ok(want.length > 10, `${name}: ${want.length} threads`);
    const sortKey = (r: { thread_id: string; updated_at: string }) => `${r.updated_at} ${r.thread_id}`;
    for (const limit of [1, 3, 7, 50]) {
      for (const ascending of [false, true]) {
        const got = allThreads(db, inboxIds, filters, v, limit, ascending);
        t.same(new Set(got.map((r) => r.thread_id)).size, got.length, `${name}, limit ${limit}${ascending ? ', ascending' : ''}: no thread twice`);
        t.same(got.map(sortKey).sort(), want.map(sortKey).sort(), `${name}, limit ${limit}${ascending ? ', ascending' : ''}: every thread once`);
        const times = got.map((r) => r.updated_at);
        t.same(times, [...times].sort((a, b) => (ascending ? a.localeCompare(b) : b.localeCompare(a))), `${name}, limit ${limit}${ascending ? ', ascending' : ''}: in order of last activity`);
      }
    }
  }
  // The page a rare label starts from reads the same table; its cursor is the same key.
  db.prepare("INSERT INTO message_labels (message_rowid, label) SELECT id, 'rare' FROM messages WHERE id % 9 = 0").run();
  const rare = allThreads(db, INBOXES, { labels: ['rare'] }, DEFAULT_VIEW, 2, false).map((r) => r.thread_id);
  const rareWant = db
    .prepare("SELECT DISTINCT m.thread_id FROM messages m JOIN message_labels l ON l.message_rowid = m.id AND l.label = 'rare' WHERE m.hidden = 0")
    .pluck()
    .all() as string[];
  t.same([...rare].sort(), [...rareWant].sort(), 'a rare label lists each of its threads once');
});

t.test("an inbox's threads lie in its own key range, in the order of their last activity", async (t) => {
  const db = await filled(300);
  t.teardown(() => db.close());
  for (const inbox of INBOXES) {
    const base = (db.prepare('SELECT rowid FROM inboxes WHERE inbox_id = ?').pluck().get(inbox) as number) * RANGE;
    const rows = db.prepare('SELECT key, updated_at FROM thread_pages WHERE inbox_id = ? ORDER BY updated_at, key').all(inbox) as { key: number; updated_at: string }[];
    t.ok(rows.length > 10, `${inbox}: ${rows.length} threads`);
    t.ok(rows.every((r) => r.key > base && r.key < base + RANGE), `${inbox}: every key in the inbox's range`);
    // Mail arrived in time order here, so the table's order is the order of last activity: a page's threads are neighbours.
    t.same(rows.map((r) => r.key), [...rows.map((r) => r.key)].sort((a, b) => a - b), `${inbox}: keys ascend with last activity`);
  }
  // A thread whose last activity changes moves to the end of its inbox's range.
  const oldest = db.prepare('SELECT thread_id, key, inbox_id FROM thread_pages ORDER BY updated_at LIMIT 1').get() as { thread_id: string; key: number; inbox_id: string };
  db.prepare('UPDATE threads SET updated_at = ? WHERE thread_id = ?').run(new Date(START + 10_000 * 60_000).toISOString(), oldest.thread_id);
  const moved = db.prepare('SELECT key FROM thread_pages WHERE thread_id = ?').pluck().get(oldest.thread_id) as number;
  t.equal(moved, db.prepare('SELECT max(key) FROM thread_pages WHERE inbox_id = ?').pluck().get(oldest.inbox_id), 'moved to the end of its range');
  t.ok(moved > oldest.key, 'a new key');
  t.same(threadPagesDrift(db), []);
});

t.test('deleting a thread or an inbox leaves no row behind', async (t) => {
  const db = await filled(120);
  t.teardown(() => db.close());
  const [first] = listThreads(db, [INBOXES[1]!], {}, DEFAULT_VIEW, { limit: 1, ascending: false, cursor: null }).items;
  t.ok(db.transaction(() => deleteThread(db, INBOXES[1]!, first!.thread_id, DEFAULT_VIEW))(), 'thread deleted');
  t.equal(db.prepare('SELECT count(*) FROM thread_pages WHERE thread_id = ?').pluck().get(first!.thread_id), 0, "the deleted thread's row is gone");
  t.same(threadPagesDrift(db), [], 'nothing else changed');
  const rowid = db.prepare('SELECT rowid FROM inboxes WHERE inbox_id = ?').pluck().get(INBOXES[2]) as number;
  t.ok((db.prepare('SELECT count(*) FROM thread_pages WHERE inbox_id = ?').pluck().get(INBOXES[2]) as number) > 10, 'the inbox has threads');
  db.transaction(() => deleteInbox(db, INBOXES[2]!))();
  t.equal(db.prepare('SELECT count(*) FROM thread_pages WHERE key >= ? AND key < ?').pluck().get(rowid * RANGE, (rowid + 1) * RANGE), 0, "the deleted inbox's range is empty");
  t.same(threadPagesDrift(db), [], 'no thread left behind');
});

t.test('an inbox whose key range is used up goes on below the lowest key, and its lists stay right', async (t) => {
  const db = await filled(60);
  t.teardown(() => db.close());
  const inbox = INBOXES[1]!;
  const rowid = db.prepare('SELECT rowid FROM inboxes WHERE inbox_id = ?').pluck().get(inbox) as number;
  // As if 2^40 moves had happened: the inbox's newest thread at the last key of its range.
  const newest = db.prepare('SELECT thread_id FROM thread_pages WHERE inbox_id = ? ORDER BY key DESC LIMIT 1').pluck().get(inbox) as string;
  db.prepare('UPDATE thread_pages SET key = ? WHERE thread_id = ?').run((rowid + 1) * RANGE - 1, newest);
  const lowest = db.prepare('SELECT min(key) FROM thread_pages').pluck().get() as number;
  const fresh = await receive(db, 1000, 500); // inbox 1 (1000 % 3 == 1, 1000 % 7 != 0), a new thread: the 997 it replies to is not stored
  t.equal(db.prepare('SELECT inbox_id FROM threads WHERE thread_id = ?').pluck().get(fresh), inbox, 'the mail went to the full inbox');
  t.equal(db.prepare('SELECT key FROM thread_pages WHERE thread_id = ?').pluck().get(fresh), lowest - 1, 'its thread went below the lowest key');
  await receive(db, 1003, 501); // a reply in that thread: it moves, in the used-up range again
  t.same(threadPagesDrift(db), [], 'no commit failed and nothing drifted');
  const want = expected(db, [inbox], DEFAULT_VIEW);
  t.same(allThreads(db, [inbox], {}, DEFAULT_VIEW, 3, false), want.map((r) => ({ thread_id: r.thread_id, updated_at: r.updated_at })).sort((a, b) => b.updated_at.localeCompare(a.updated_at) || b.thread_id.localeCompare(a.thread_id)), 'the list pages as before');
});

t.test('the four triggers that keep thread_pages exist at the latest schema', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  t.same(
    db.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'threads' AND name LIKE 'thread_pages_%' ORDER BY name").pluck().all(),
    ['thread_pages_delete', 'thread_pages_insert', 'thread_pages_move', 'thread_pages_update'],
  );
});

t.test('a page token from before migration 38 is stale, not read with a row id as its tie-break', async (t) => {
  const db = await filled(40);
  t.teardown(() => db.close());
  ensurePageKey(db);
  const reader: Principal = { kind: 'api_key', id: 'key-1', inboxScope: 'all', permissions: new Set(['inbox_read', 'message_read']), sendPolicy: 'read_only' };
  const inbox = INBOXES[0]!;
  // The binding and cursor a list of schema 37 made: [last activity, the thread's row id].
  const old = encodePageToken(db, { route: 'threads.list.inbox', filters: { inbox, ascending: false, excluded: HIDDEN_LABELS.join(',') }, principal: reader }, ['2026-01-01T00:03:00.000Z', 5]);
  const err = (() => {
    try {
      threadListPage(db, reader, inbox, { limit: 5, page_token: old });
    } catch (e) {
      return e;
    }
  })();
  t.ok(err instanceof ApiError && err.code === 'page_token_stale', `stale: ${String(err)}`);
  // The same binding under today's route name, with today's cursor, is read: only the version differs.
  const now = encodePageToken(db, { route: 'threads.list.inbox.2', filters: { inbox, ascending: false, excluded: HIDDEN_LABELS.join(',') }, principal: reader }, ['2026-01-01T00:03:00.000Z', 'zzzz']);
  t.ok((threadListPage(db, reader, inbox, { limit: 5, page_token: now }) as { count: number }).count > 0, 'the control token is read');
  const first = threadListPage(db, reader, inbox, { limit: 5 }) as { next_page_token?: string };
  t.ok(first.next_page_token, 'a token made now');
  t.ok((threadListPage(db, reader, inbox, { limit: 5, page_token: first.next_page_token }) as { count: number }).count > 0, 'is read');
});

t.test('the drift check sees a row the triggers did not keep', async (t) => {
  const db = await filled(20);
  t.teardown(() => db.close());
  db.exec('DROP TRIGGER thread_pages_update');
  const thread = db.prepare('SELECT thread_id FROM threads LIMIT 1').pluck().get() as string;
  db.prepare("UPDATE threads SET subject = 'changed' WHERE thread_id = ?").run(thread);
  t.same(threadPagesDrift(db), [thread]);
});

t.test('an upgrade to schema 38 fills thread_pages in order of last activity and drops threads_listing', async (t) => {
  const file = path.join(tempDir(), 'svc.db');
  const key = randomBytes(32);
  const old = databaseAtSchema(file, key, 37);
  const NOW = '2026-01-01T00:00:00.000Z';
  for (const inbox of INBOXES) old.prepare('INSERT INTO inboxes (inbox_id, username, domain, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(inbox, inbox.split('@')[0], 'example.com', NOW, NOW);
  const insert = old.prepare('INSERT INTO threads (thread_id, inbox_id, subject, created_at, updated_at, summary, shown) VALUES (?, ?, ?, ?, ?, ?, ?)');
  // Inserted out of order of activity, with ties, and one thread whose inbox row is missing (a foreign key not enforced then).
  for (let i = 0; i < 30; i++) insert.run(`th${i}`, INBOXES[i % 3], `S ${i}`, NOW, `2026-02-${String(28 - (i % 10)).padStart(2, '0')}T00:00:00.000Z`, `{"n":${i}}`, i % 4 === 0 ? 0 : 1);
  old.pragma('foreign_keys = OFF');
  insert.run('orphan', 'gone@example.com', null, NOW, NOW, null, null);
  old.close();

  const db = openDatabase(file, key, { migrate: true });
  t.teardown(() => db.close());
  t.same(threadPagesDrift(db), [], 'every thread has its row, the orphan too');
  t.equal(db.prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'threads_listing'").pluck().get(), 0, 'threads_listing is gone');
  for (const inbox of INBOXES) {
    const keys = db.prepare('SELECT key FROM thread_pages WHERE inbox_id = ? ORDER BY updated_at, key').pluck().all(inbox) as number[];
    t.same(keys, [...keys].sort((a, b) => a - b), `${inbox}: keys ascend with last activity`);
  }
  const listed = listThreads(db, [INBOXES[1]!], {}, DEFAULT_VIEW, { limit: 100, ascending: false, cursor: null }).items;
  t.same(
    listed.map((i) => i.thread_id),
    db.prepare('SELECT thread_id FROM threads WHERE inbox_id = ? AND shown = 1 ORDER BY updated_at DESC, rowid DESC').pluck().all(INBOXES[1]),
    'the list after the upgrade: shown threads by last activity, ties in the order they were stored',
  );
  // New mail after the upgrade lands at the end of its inbox's range.
  const mail = await parseMime(new TextEncoder().encode(`From: x@example.net\r\nTo: ${INBOXES[1]}\r\nSubject: new\r\nMessage-ID: <after@example.net>\r\n\r\nhi\r\n`));
  const { threadId } = commitInbound(db, { inboxId: INBOXES[1]!, parsed: mail, raw: new Uint8Array(0), sourceKey: 'after', receivedAt: '2026-03-01T00:00:00.000Z' });
  t.equal(db.prepare('SELECT thread_id FROM thread_pages WHERE inbox_id = ? ORDER BY key DESC LIMIT 1').pluck().get(INBOXES[1]), threadId, 'new mail lands at the end of the range');
  t.same(threadPagesDrift(db), []);
});
