/**
 * Lists filtered by a label a few messages carry start from the label's rows (src/mail/labels.ts
 * `rareLabel`), not from a walk of the inbox that tests every message. On a real database filled
 * through the inbound commit path: the message and thread lists, filtered by a rare label, a common
 * one and both, in either order, paged with their cursors and in every view of hidden mail, hold
 * exactly the messages and threads counted from the rows; and the statements they run start from
 * the label's index, never the inbox's.
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { commitInbound } from '../../src/mail/store.js';
import { listMessages, updateMessageLabels } from '../../src/mail/messages.js';
import { listThreads } from '../../src/mail/threads.js';
import { HIDDEN_LABELS, RARE_LABEL_ROWS, rareLabel, type HiddenLabel } from '../../src/mail/labels.js';
import type { Cursor } from '../../src/core/pagination.js';
import { parseMime } from '../../workers/pool/parse.js';
import { insertInbox, recordStatements } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const INBOXES = ['lists@example.com', 'other@example.com'];
const VIEWS: { excluded: readonly HiddenLabel[] }[] = [{ excluded: [] }, { excluded: HIDDEN_LABELS }, { excluded: ['trash'] }];
const NOW = Date.now();

async function filled(count = 400): Promise<Db> {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  for (const inbox of INBOXES) insertInbox(db, inbox);
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${INBOXES[0]}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      // Threads of four; some timestamps repeat so the (timestamp, id) keyset is exercised.
      const at = new Date(NOW - (count - i) * 60_000 - (i % 9 === 0 ? 60_000 : 0)).toISOString();
      const first = i % 4 === 0;
      commitInbound(db, {
        inboxId: INBOXES[i % 2 === 0 || i % 7 === 0 ? 0 : 1]!,
        parsed: { ...template, messageId: `<m${i}@example.net>`, inReplyTo: first ? null : `<m${i - 1}@example.net>`, references: first ? [] : [`<m${i - (i % 4)}@example.net>`], subject: `S ${i}`, date: at },
        raw: new TextEncoder().encode(`Subject: ${i}\r\n\r\nbody ${i}\r\n`),
        sourceKey: `k${i}`,
        receivedAt: at,
        ...(i % 23 === 5 ? { hiddenLabels: ['spam' as const] } : {}),
      });
    }
  })();
  // `rare` on a few messages of both inboxes (some hidden, some trashed); `common` on most.
  db.transaction(() => {
    for (const inbox of INBOXES) {
      const ids = (db.prepare('SELECT message_id FROM messages WHERE inbox_id = ? ORDER BY id').pluck().all(inbox) as string[]);
      const all = { excluded: [] as HiddenLabel[] };
      updateMessageLabels(db, inbox, ids.filter((_, k) => k % 13 === 4 || k % 29 === 1), all, { add: ['rare'], remove: [] });
      updateMessageLabels(db, inbox, ids.filter((_, k) => k % 5 !== 0 || count > RARE_LABEL_ROWS), all, { add: ['common'], remove: [] });
      updateMessageLabels(db, inbox, ids.filter((_, k) => k % 31 === 4), all, { add: ['trash'], remove: [] });
    }
  })();
  return db;
}

/** Every page of a list, following its cursor. */
function everyPage<T>(list: (cursor: Cursor | null) => { items: T[]; next: Cursor | null }): T[][] {
  const pages: T[][] = [];
  let cursor: Cursor | null = null;
  for (let i = 0; i < 500; i++) {
    const page = list(cursor);
    pages.push(page.items);
    if (!page.next) return pages;
    cursor = page.next;
  }
  throw new Error('the list did not end');
}

t.test('a rare label is told from a common one by its rows in the whole home', async (t) => {
  const db = await filled(RARE_LABEL_ROWS + 400);
  t.teardown(() => db.close());
  t.equal(rareLabel(db, ['common']), null, 'a label on more messages than RARE_LABEL_ROWS walks the inbox');
  t.equal(rareLabel(db, ['rare']), 'rare');
  t.equal(rareLabel(db, ['common', 'rare', 'common']), 'rare', 'the rarest of several');
  t.equal(rareLabel(db, ['nobody-has-this']), 'nobody-has-this', 'a label no message has lists nothing, at once');
  t.equal(rareLabel(db, []), null);
  t.equal(rareLabel(db, undefined), null);
  t.ok(RARE_LABEL_ROWS >= 1000, 'a real label of a few thousand messages takes the rare path');

  // Lists with the common label walk the inbox; with both, they start from the rare one: each holds what the rows say.
  for (const labels of [['common'], ['common', 'rare'], ['rare', 'common']]) {
    for (const v of VIEWS.slice(0, 2)) {
      const want = expected(db, [INBOXES[0]!], labels, v);
      const messageIds = [...want.messages].sort((a, b) => -byKey([a.timestamp, a.id], [b.timestamp, b.id])).map((m) => m.message_id);
      const listed = everyPage((cursor) => listMessages(db, INBOXES[0]!, { labels }, v, { limit: 200, ascending: false, cursor })).flat();
      t.same(listed.map((m) => m.message_id), messageIds, `messages ${labels.join('+')} [${v.excluded.join(',')}]: ${messageIds.length}`);
      const wantThreads = expected(db, INBOXES, labels, v).threadIds;
      const threads = everyPage((cursor) => listThreads(db, INBOXES, { labels }, v, { limit: 200, ascending: false, cursor })).flat();
      t.same(new Set(threads.map((th) => th.thread_id)), wantThreads, `threads ${labels.join('+')} [${v.excluded.join(',')}]: ${wantThreads.size}`);
    }
  }
});

/** What a list must hold, counted from the rows: messages (or threads) with every label, visible in the view. */
function expected(db: Db, inboxIds: string[], labels: string[], v: { excluded: readonly HiddenLabel[] }) {
  const rows = db
    .prepare(`SELECT m.id, m.message_id, m.thread_id, m.inbox_id, m.timestamp, (SELECT json_group_array(label) FROM message_labels WHERE message_rowid = m.id) AS labels FROM messages m WHERE m.inbox_id IN (SELECT value FROM json_each(?))`)
    .all(JSON.stringify(inboxIds)) as { id: number; message_id: string; thread_id: string; inbox_id: string; timestamp: string; labels: string }[];
  const visible = rows.map((r) => ({ ...r, labels: JSON.parse(r.labels) as string[] })).filter((r) => !r.labels.some((l) => (v.excluded as string[]).includes(l)));
  const messages = visible.filter((r) => labels.every((l) => r.labels.includes(l)));
  const labelsOfThread = new Map<string, Set<string>>();
  for (const r of visible) for (const l of ['', ...r.labels]) labelsOfThread.set(r.thread_id, (labelsOfThread.get(r.thread_id) ?? new Set()).add(l));
  const threadIds = new Set([...labelsOfThread].filter(([, ls]) => labels.every((l) => ls.has(l))).map(([id]) => id));
  return { messages, threadIds };
}

function byKey(a: [string, number], b: [string, number]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1];
}

t.test('filtered lists hold exactly the messages and threads with the labels, in order, page after page', async (t) => {
  const db = await filled();
  t.teardown(() => db.close());
  const filters = [['rare'], ['rare', 'common'], ['common', 'rare'], ['nobody-has-this'], ['rare', 'nobody-has-this'], ['trash', 'rare']];
  for (const labels of filters) {
    for (const v of VIEWS) {
      const want = expected(db, [INBOXES[0]!], labels, v);
      const wantThreads = expected(db, INBOXES, labels, v).threadIds;
      const threadOrder = db.prepare('SELECT thread_id, updated_at, rowid FROM threads').all() as { thread_id: string; updated_at: string; rowid: number }[];
      for (const ascending of [false, true]) {
        const sign = ascending ? 1 : -1;
        const messageIds = [...want.messages].sort((a, b) => sign * byKey([a.timestamp, a.id], [b.timestamp, b.id])).map((m) => m.message_id);
        const threadIds = threadOrder.filter((th) => wantThreads.has(th.thread_id)).sort((a, b) => sign * byKey([a.updated_at, a.rowid], [b.updated_at, b.rowid])).map((th) => th.thread_id);
        for (const limit of [1, 7, 100]) {
          const what = `${labels.join('+')} [${v.excluded.join(',')}] ${ascending ? 'asc' : 'desc'} limit ${limit}`;
          const messagePages = everyPage((cursor) => listMessages(db, INBOXES[0]!, { labels }, v, { limit, ascending, cursor }));
          t.same(messagePages.flat().map((m) => m.message_id), messageIds, `messages ${what}`);
          t.ok(messagePages.every((p, k) => p.length === limit || k === messagePages.length - 1), `full pages but the last: ${what}`);
          const threadPages = everyPage((cursor) => listThreads(db, INBOXES, { labels }, v, { limit, ascending, cursor }));
          t.same(threadPages.flat().map((th) => th.thread_id), threadIds, `threads ${what}`);
        }
      }
    }
  }
  const some = listMessages(db, INBOXES[0]!, { labels: ['rare'] }, { excluded: [] }, { limit: 100, ascending: false, cursor: null }).items;
  t.ok(some.length > 5 && some.every((m) => m.labels.includes('rare')), `${some.length} messages carry the rare label`);
});

t.test('a list filtered by a rare label starts from the label\'s rows, never walking the inbox', async (t) => {
  const db = await filled();
  t.teardown(() => db.close());
  // The statements the lists prepare, recorded as better-sqlite3 is asked for them, then asked for their plans.
  const { statements, plan: planOf } = recordStatements(db);
  listMessages(db, INBOXES[0]!, { labels: ['common', 'rare'] }, { excluded: HIDDEN_LABELS }, { limit: 10, ascending: false, cursor: null });
  listThreads(db, INBOXES, { labels: ['rare', 'common'] }, { excluded: HIDDEN_LABELS }, { limit: 10, ascending: false, cursor: null });
  const lists = statements.filter((sql) => /FROM message_labels rl CROSS JOIN messages/.test(sql) && /ORDER BY/.test(sql));
  t.equal(lists.length, 2, 'the message list and the thread list each start from the label');
  for (const sql of lists) {
    const plan = planOf(sql, 'rare');
    t.ok(plan.some((d) => /^SEARCH rl USING COVERING INDEX message_labels_label \(label=\?\)/.test(d)), plan.join(' | '));
    t.notOk(plan.some((d) => /messages_inbox_time|thread_pages_order/.test(d)), `no walk of the inbox: ${plan.join(' | ')}`);
    t.notOk(plan.some((d) => /^SCAN (t|m|rl|rm)\b/.test(d)), `no table scanned: ${plan.join(' | ')}`);
  }
});

t.test('a page of threads walks thread_pages_order in the order it shows, never sorting', async (t) => {
  const db = await filled();
  t.teardown(() => db.close());
  const { statements, plan: planOf } = recordStatements(db);
  const first = listThreads(db, [INBOXES[0]!], {}, { excluded: HIDDEN_LABELS }, { limit: 3, ascending: false, cursor: null });
  t.ok(first.next, 'a first page with more after it');
  listThreads(db, [INBOXES[0]!], {}, { excluded: HIDDEN_LABELS }, { limit: 3, ascending: false, cursor: first.next });
  const pages = statements.filter((sql) => /FROM thread_pages t WHERE t\.inbox_id = \?/.test(sql));
  t.equal(pages.length, 2, 'a first page and a page after a cursor');
  for (const sql of pages) {
    const plan = planOf(sql, INBOXES[0]!);
    t.ok(plan.some((d) => /^SEARCH t USING INDEX thread_pages_order \(inbox_id=\?/.test(d)), plan.join(' | '));
    t.notOk(plan.some((d) => /TEMP B-TREE/.test(d)), `no sort: ${plan.join(' | ')}`);
  }
});
