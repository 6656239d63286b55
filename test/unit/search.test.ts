/**
 * Search ranking and paging on a store large enough that the best hits mostly belong to another
 * inbox, so the search reads past its first batches and filters by scope first.
 */
import t, { type Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { commitInbound } from '../../src/mail/store.js';
import { ftsQuery, searchMessages, searchThreads } from '../../src/mail/search.js';
import { parseMime, type ParsedMail } from '../../workers/pool/parse.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';
import { simpleMail } from '../helpers/mail.js';

const BUSY = 'busy@example.com';
const QUIET = 'quiet@example.com';

async function store(t: Test): Promise<Db> {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, BUSY);
  insertInbox(db, QUIET);
  const raw = Buffer.from(simpleMail({}));
  const template = await parseMime(raw);
  const mail = (i: number, fields: Partial<ParsedMail>): ParsedMail => ({ ...template, messageId: `<s${i}@x.org>`, ...fields });
  // 2,500 strong matches in the busy inbox outrank everything in the quiet one.
  db.transaction(() => {
    for (let i = 0; i < 2500; i++) {
      commitInbound(db, { inboxId: BUSY, raw, parsed: mail(i, { subject: 'Pelican pelican report', text: 'pelican pelican pelican' }), receivedAt: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString() });
    }
  })();
  return db;
}

t.test('ftsQuery turns any text into a safe FTS5 query', async (t) => {
  t.equal(ftsQuery('hello world'), '"hello" "world"');
  t.equal(ftsQuery('say "hi" NEAR(x)'), '"say" """hi""" "NEAR(x)"');
  t.equal(ftsQuery('pre*'), '"pre" *');
  t.equal(ftsQuery('  ** -- '), null);
});

t.test('a scoped search finds its few matches behind thousands of better ones elsewhere', async (t) => {
  const db = await store(t);
  const raw = Buffer.from(simpleMail({}));
  const template = await parseMime(raw);
  for (let i = 0; i < 3; i++) {
    commitInbound(db, {
      inboxId: QUIET,
      raw,
      parsed: { ...template, messageId: `<quiet${i}@x.org>`, subject: `Note ${i}`, text: `A long note that mentions the pelican once among ${'many other words '.repeat(i + 1)}` },
      receivedAt: new Date(Date.UTC(2025, 1, 1, 0, i)).toISOString(),
    });
  }
  const result = searchMessages(db, { q: 'pelican', inboxIds: [QUIET], limit: 10, cursor: null });
  t.same(
    result.items.map((m) => m.message_id),
    ['<quiet0@x.org>', '<quiet1@x.org>', '<quiet2@x.org>'],
    'all three, the shortest (densest) match first',
  );
  t.equal(result.next, null);
  const threads = searchThreads(db, { q: 'pelican', inboxIds: [QUIET], limit: 2, cursor: null });
  t.equal(threads.items.length, 2);
  const rest = searchThreads(db, { q: 'pelican', inboxIds: [QUIET], limit: 2, cursor: threads.next });
  t.same(
    [...threads.items, ...rest.items].map((x) => x.last_message_id),
    ['<quiet0@x.org>', '<quiet1@x.org>', '<quiet2@x.org>'],
  );
  const timed = searchMessages(db, { q: 'pelican', inboxIds: [QUIET], after: new Date(Date.UTC(2025, 1, 1, 0, 0)).toISOString(), limit: 10, cursor: null });
  t.same(
    timed.items.map((m) => m.message_id),
    ['<quiet1@x.org>', '<quiet2@x.org>'],
    'time bounds apply on the scoped path too',
  );
});

t.test('paging through many equally ranked threads returns each exactly once', async (t) => {
  const db = await store(t);
  const seen = new Set<string>();
  let repeats = 0;
  let cursor: (string | number)[] | null = null;
  let pages = 0;
  do {
    const page: ReturnType<typeof searchThreads> = searchThreads(db, { q: 'pelican report', inboxIds: [BUSY], limit: 100, cursor });
    for (const item of page.items) {
      if (seen.has(item.thread_id)) repeats++;
      seen.add(item.thread_id);
    }
    cursor = page.next;
    pages++;
  } while (cursor && pages < 40);
  t.equal(repeats, 0, 'no thread twice');
  t.equal(seen.size, 2500, 'every matching thread, across pages');
  t.equal(pages, 25);
});
