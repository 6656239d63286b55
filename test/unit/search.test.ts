/**
 * Search ranking and paging on a store large enough that the best hits mostly belong to another
 * inbox, and that broad queries are ranked in bands of the newest BAND passing matches.
 */
import t, { type Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { commitInbound } from '../../src/mail/store.js';
import { BAND, ftsQuery, searchMessages, searchThreads } from '../../src/mail/search.js';
import { parseMime, type ParsedMail } from '../../workers/pool/parse.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';
import type { Cursor } from '../../src/core/pagination.js';
import { simpleMail } from '../helpers/mail.js';

const BUSY = 'busy@example.com';
/** Both ways a band checks scope: per match on its row, and against the scope's ids gathered first. */
const PATHS: [string, number | undefined][] = [
  ['scope checked per match', 0],
  ['scope gathered first', undefined],
];
const QUIET = 'quiet@example.com';

/** The keys of every page, in order, following next cursors (at most `maxPages` pages). */
function everyPage(maxPages: number, read: (cursor: Cursor | null) => { keys: string[]; next: Cursor | null }): string[] {
  const keys: string[] = [];
  let cursor: Cursor | null = null;
  for (let pages = 0; pages < maxPages; pages++) {
    const page = read(cursor);
    keys.push(...page.keys);
    cursor = page.next;
    if (!cursor) break;
  }
  return keys;
}

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

for (const [way, smallScope] of PATHS) t.test(`a scoped search finds its few matches behind thousands of better ones elsewhere (${way})`, async (t) => {
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
  const result = searchMessages(db, { smallScope, q: 'pelican', inboxIds: [QUIET], limit: 10, cursor: null });
  t.same(
    result.items.map((m) => m.message_id),
    ['<quiet0@x.org>', '<quiet1@x.org>', '<quiet2@x.org>'],
    'all three, the shortest (densest) match first',
  );
  t.equal(result.next, null);
  const threads = searchThreads(db, { smallScope, q: 'pelican', inboxIds: [QUIET], limit: 2, cursor: null });
  t.equal(threads.items.length, 2);
  const rest = searchThreads(db, { smallScope, q: 'pelican', inboxIds: [QUIET], limit: 2, cursor: threads.next });
  t.same(
    [...threads.items, ...rest.items].map((x) => x.last_message_id),
    ['<quiet0@x.org>', '<quiet1@x.org>', '<quiet2@x.org>'],
  );
  const timed = searchMessages(db, { smallScope, q: 'pelican', inboxIds: [QUIET], after: new Date(Date.UTC(2025, 1, 1, 0, 0)).toISOString(), limit: 10, cursor: null });
  t.same(
    timed.items.map((m) => m.message_id),
    ['<quiet1@x.org>', '<quiet2@x.org>'],
    'time bounds apply on the scoped path too',
  );
});

for (const [way, smallScope] of PATHS) t.test(`paging through many equally ranked threads returns each exactly once (${way})`, async (t) => {
  const db = await store(t);
  const seen = new Set<string>();
  let repeats = 0;
  let cursor: (string | number)[] | null = null;
  let pages = 0;
  do {
    const page: ReturnType<typeof searchThreads> = searchThreads(db, { smallScope, q: 'pelican report', inboxIds: [BUSY], limit: 100, cursor });
    for (const item of page.items) {
      if (seen.has(item.thread_id)) repeats++;
      seen.add(item.thread_id);
    }
    cursor = page.next;
    pages++;
  } while (cursor && pages < 40);
  t.equal(repeats, 0, 'no thread twice');
  t.equal(seen.size, 2500, 'every matching thread, across pages');
  t.equal(pages, 25, `25 pages of 100 across ${Math.ceil(2500 / BAND)} bands`);
});

for (const [way, smallScope] of PATHS) t.test(`a broad query ranks bands of the newest matches; a thread spanning bands is listed once, in its newest band (${way})`, async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, BUSY);
  const raw = Buffer.from(simpleMail({}));
  const template = await parseMime(raw);
  const at = (i: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString();
  const fillers = BAND * 2 + 100;
  db.transaction(() => {
    // The best match of all is the oldest message; its thread gets a weak reply as the newest.
    commitInbound(db, { inboxId: BUSY, raw, parsed: { ...template, messageId: '<x0@x.org>', subject: 'Heron heron heron', text: 'heron heron' }, receivedAt: at(0) });
    for (let i = 1; i <= fillers; i++) {
      commitInbound(db, {
        inboxId: BUSY,
        raw,
        parsed: { ...template, messageId: `<f${i}@x.org>`, subject: `Note ${i}`, text: `a note that mentions the heron once among ${'other words '.repeat(1 + (i % 7))}` },
        receivedAt: at(i),
      });
    }
    commitInbound(db, {
      inboxId: BUSY,
      raw,
      parsed: { ...template, messageId: '<x1@x.org>', inReplyTo: '<x0@x.org>', references: ['<x0@x.org>'], subject: 'Re: Heron heron heron', text: `thanks, and one more heron ${'word '.repeat(40)}` },
      receivedAt: at(fillers + 1),
    });
  })();

  const messages = everyPage(50, (cursor) => {
    const page = searchMessages(db, { smallScope, q: 'heron', inboxIds: [BUSY], limit: 100, cursor });
    return { keys: page.items.map((m) => m.message_id), next: page.next };
  });
  t.equal(messages.length, fillers + 2, 'every match once, across bands');
  t.equal(new Set(messages).size, fillers + 2);
  t.equal(messages.indexOf('<x0@x.org>'), 2 * BAND, 'the best match of all is the oldest: it leads the last band, after the two newer bands');
  t.ok(messages.indexOf('<x1@x.org>') < BAND, 'the newest match is in the first band');
  t.equal(messages[0], '<x1@x.org>', 'within the first band bm25 decides: the reply has heron in its subject');

  const threads = everyPage(80, (cursor) => {
    const page = searchThreads(db, { smallScope, q: 'heron', inboxIds: [BUSY], limit: 70, cursor });
    return { keys: page.items.map((x) => x.thread_id), next: page.next };
  });
  t.equal(threads.length, fillers + 1, 'every matching thread once: the heron thread is not listed again in the band of its first message');
  t.equal(new Set(threads).size, fillers + 1);
  const oneWalk = searchThreads(db, { smallScope, q: 'heron', inboxIds: [BUSY], limit: fillers + 10, cursor: null });
  t.same(
    oneWalk.items.map((x) => x.thread_id),
    threads,
    'one request walking every band lists the same threads in the same order as paging through them (threads of earlier bands skipped from the walk itself)',
  );
  const first = searchThreads(db, { smallScope, q: 'heron', inboxIds: [BUSY], limit: 1, cursor: null }).items[0];
  t.equal(first.last_message_id, '<x1@x.org>', 'the heron thread leads the first band');
  t.equal(threads[0], first.thread_id);
});

t.test('a cursor from before banded search is stale, not an error', async (t) => {
  const db = await store(t);
  t.throws(() => searchThreads(db, { q: 'pelican', inboxIds: [BUSY], limit: 10, cursor: [-3.2, 17] }), { code: 'page_token_stale' }, 'page_token_stale');
  t.throws(() => searchMessages(db, { q: 'pelican', inboxIds: [BUSY], limit: 10, cursor: [0, 1, 'x', 2] }), { code: 'page_token_stale' }, 'page_token_stale');
});
