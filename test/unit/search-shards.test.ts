/**
 * The search index in shards by row id (migration 31, src/mail/search-index.ts), on a real
 * database filled through the inbound commit path with shards of 16 row ids (the layout's `bits`
 * set to 4 before any mail; a home has 8,192) and the first 20 messages in the legacy index, as in
 * a home migrated with mail: each message is indexed in its shard, search pages through every
 * shard newest first and lists each match and each thread once (also threads whose messages lie
 * in several shards), finds a word only the oldest mail has, and deletions leave no row behind.
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { commitInbound } from '../../src/mail/store.js';
import { deleteMessage, updateMessageLabels } from '../../src/mail/messages.js';
import { HIDDEN_LABELS } from '../../src/mail/labels.js';
import { deleteThread } from '../../src/mail/threads.js';
import { deleteInbox } from '../../src/mail/inboxes.js';
import { searchMessages, searchThreads } from '../../src/mail/search.js';
import { mergeFullShards, ShardMergeSchedule } from '../../src/db/search-merge.js';
import { LEGACY_SHARD, scopeTag, shardLayout, shardOf, shardTable } from '../../src/mail/search-index.js';
import type { Cursor } from '../../src/core/pagination.js';
import { everyPage } from '../helpers/pages.js';
import { parseMime } from '../../workers/pool/parse.js';
import { countStatementRuns, databaseAtSchema, indexedRows, insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const A = 'a@example.com';
const B = 'b@example.com';
const ALL = { excluded: [] };
const COUNT = 170;

/**
 * The layouts a home's shards can have (migration 36): every shard made before it (untagged words
 * only), some before and some after (a home that upgraded with mail), and every shard after it.
 */
const LAYOUTS = [
  ['shards made before scoped words', 1000],
  ['scoped words from shard 5 on', 5],
  ['every shard with scoped words', 0],
] as const;

/** Message i: in inbox A but every fifth in B; threads of three; `osprey` in most, `kestrel` only in the oldest five. */
async function filled(scopedFrom: number): Promise<Db> {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  // Shards of 16 row ids, and the mail with row ids below 21 in the legacy index (a home migrated with 20 messages).
  db.prepare('UPDATE search_layout SET bits = 4, legacy_end = 21, scoped_from = ?').run(scopedFrom);
  insertInbox(db, A);
  insertInbox(db, B);
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${A}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  db.transaction(() => {
    for (let i = 0; i < COUNT; i++) {
      const at = new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString();
      const inbox = i % 5 === 4 ? B : A;
      const root = i - (i % 3);
      const words = [...(i % 7 === 6 ? [] : Array<string>(1 + (i % 4)).fill('osprey')), ...(i < 5 ? ['kestrel'] : []), `m${i}`];
      commitInbound(db, {
        inboxId: inbox,
        parsed: { ...template, messageId: `<m${i}@x.org>`, inReplyTo: i === root ? null : `<m${i - 1}@x.org>`, references: i === root ? [] : [`<m${root}@x.org>`], subject: `Note ${i}`, text: words.join(' '), date: at },
        raw: new TextEncoder().encode(`Subject: ${i}\r\n\r\n${words.join(' ')}\r\n`),
        sourceKey: `k${i}`,
        receivedAt: at,
      });
    }
  })();
  return db;
}

/** Messages of the inboxes whose text has the word, by Message-ID, from the rows. */
function withWord(db: Db, inboxes: string[], word: string): Set<string> {
  const rows = db.prepare('SELECT message_id, text FROM messages WHERE inbox_id IN (SELECT value FROM json_each(?))').all(JSON.stringify(inboxes)) as { message_id: string; text: string }[];
  return new Set(rows.filter((r) => r.text.split(' ').includes(word)).map((r) => r.message_id));
}

for (const [way, scopedFrom] of LAYOUTS) t.test(`each message is indexed in the shard of its row id; the legacy index keeps the older mail (${way})`, async (t) => {
  const db = await filled(scopedFrom);
  t.teardown(() => db.close());
  const layout = shardLayout(db);
  t.same(layout, { bits: 4, legacyEnd: 21, scopedFrom });
  const ids = db.prepare('SELECT id FROM messages ORDER BY id').pluck().all() as number[];
  const expectedShards = [...new Set(ids.map((id) => shardOf(layout, id)))].sort((x, y) => x - y);
  t.same(db.prepare('SELECT k FROM search_shards ORDER BY k').pluck().all(), expectedShards, 'a shard per 16 row ids, listed as made');
  t.equal(expectedShards[0], LEGACY_SHARD);
  t.ok(expectedShards.length >= 10, `${expectedShards.length} shards`);
  for (const id of ids) {
    const k = shardOf(layout, id);
    const table = k === LEGACY_SHARD ? 'messages_fts' : `messages_fts_${k}`;
    t.equal(db.prepare(`SELECT count(*) FROM ${table} WHERE rowid = ?`).pluck().get(id), 1, `message ${id} in ${table}`);
  }
  t.equal(indexedRows(db, {}), COUNT, 'no message indexed twice');
});

for (const [way, scopedFrom] of LAYOUTS) t.test(`search pages through every shard and lists each match and each thread once (${way})`, async (t) => {
  const db = await filled(scopedFrom);
  t.teardown(() => db.close());
  for (const [inboxes, label] of [[[A], 'one inbox'], [[A, B], 'two inboxes']] as const) {
    const want = withWord(db, [...inboxes], 'osprey');
    for (const limit of [1, 4, 25]) {
      const listed = everyPage((cursor) => searchMessages(db, { q: 'osprey', inboxIds: inboxes, limit, cursor })).map((m) => m.message_id);
      t.equal(new Set(listed).size, listed.length, `${label}, limit ${limit}: no message twice`);
      t.same(new Set(listed), want, `${label}, limit ${limit}: every match (${want.size})`);
      // Newest shard first: a message is never listed after one of an older shard.
      const rowid = db.prepare('SELECT id FROM messages WHERE message_id = ?').pluck();
      const shards = listed.map((id) => shardOf(shardLayout(db), rowid.get(id) as number));
      t.ok(shards.every((k, i) => i === 0 || k <= shards[i - 1]!), `${label}, limit ${limit}: shards newest first`);

      const threads = everyPage((cursor) => searchThreads(db, { q: 'osprey', inboxIds: inboxes, limit, cursor })).map((th) => th.thread_id);
      const wantThreads = new Set((db.prepare('SELECT message_id, thread_id FROM messages').all() as { message_id: string; thread_id: string }[]).filter((m) => want.has(m.message_id)).map((m) => m.thread_id));
      t.equal(new Set(threads).size, threads.length, `${label}, limit ${limit}: no thread twice, though threads span shards`);
      t.same(new Set(threads), wantThreads, `${label}, limit ${limit}: every thread with a match (${wantThreads.size})`);
    }
  }
  // Within a shard, bm25 ranks more occurrences first.
  const first = searchMessages(db, { q: 'osprey', inboxIds: [A], limit: 4, cursor: null }).items.map((m) => m.message_id);
  const counts = first.map((id) => (db.prepare('SELECT text FROM messages WHERE message_id = ?').pluck().get(id) as string).split(' ').filter((w) => w === 'osprey').length);
  t.ok(counts[0]! >= counts[counts.length - 1]!, `best first in the newest shard: ${counts.join(', ')}`);
  // A word only the oldest mail has is found behind every newer shard, and a prefix too.
  t.same(new Set(searchMessages(db, { q: 'kestrel', inboxIds: [A, B], limit: 10, cursor: null }).items.map((m) => m.message_id)), withWord(db, [A, B], 'kestrel'), 'found in the legacy index');
  t.same(searchMessages(db, { q: 'm16*', inboxIds: [A, B], limit: 50, cursor: null }).items.map((m) => m.message_id).sort(), ['<m16@x.org>', ...Array.from({ length: 10 }, (_, d) => `<m16${d}@x.org>`)].sort(), 'a prefix across the legacy index and the shards');
});

for (const [way, scopedFrom] of LAYOUTS) t.test(`deleting a message, a thread or an inbox removes its rows from their shards (${way})`, async (t) => {
  const db = await filled(scopedFrom);
  t.teardown(() => db.close());
  const rowidOf = (id: string) => db.prepare('SELECT id FROM messages WHERE message_id = ?').pluck().get(id) as number;
  for (const id of ['<m3@x.org>', '<m100@x.org>']) {
    const rowid = rowidOf(id);
    db.transaction(() => deleteMessage(db, A, id, ALL))();
    t.equal(indexedRows(db, { rowid }), 0, `${id} unindexed`);
  }
  const thread = db.prepare('SELECT thread_id FROM messages WHERE message_id = ?').pluck().get('<m150@x.org>') as string;
  const threadRows = db.prepare('SELECT id FROM messages WHERE thread_id = ?').pluck().all(thread) as number[];
  db.transaction(() => deleteThread(db, A, thread, ALL))();
  t.ok(threadRows.every((rowid) => indexedRows(db, { rowid }) === 0), 'the thread unindexed');
  t.notOk(searchMessages(db, { q: 'm151', inboxIds: [A, B], limit: 5, cursor: null }).items.length, 'not found');
  db.transaction(() => deleteInbox(db, B))();
  t.same(searchMessages(db, { q: 'osprey', inboxIds: [B], limit: 5, cursor: null }).items, [], 'the inbox unindexed');
  t.equal(indexedRows(db, {}), db.prepare('SELECT count(*) FROM messages').pluck().get(), 'every message left is indexed once, and nothing else');
});

for (const [way, scopedFrom] of LAYOUTS) t.test(`a scope too large to gather whole is read one shard at a time by its time span (${way})`, async (t) => {
  const db = await filled(scopedFrom);
  t.teardown(() => db.close());
  const layout = shardLayout(db);
  // Mail whose timestamp is out of row-id order: received long before, or stamped ahead, and stored late.
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${A}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  const late = [
    ['<late-old@x.org>', '2019-06-01T00:00:00.000Z'],
    ['<late-new@x.org>', '2031-06-01T00:00:00.000Z'],
  ] as const;
  db.transaction(() => {
    for (const [id, at] of late) {
      commitInbound(db, { inboxId: A, parsed: { ...template, messageId: id, subject: 'Late', text: 'osprey late arrival', date: at }, raw: new TextEncoder().encode('Subject: late\r\n\r\nosprey\r\n'), sourceKey: id, receivedAt: at });
    }
  })();
  const spans = db.prepare('SELECT k, first_at, last_at FROM search_shards ORDER BY k').all() as { k: number; first_at: string; last_at: string }[];
  const actual = db.prepare('SELECT id, timestamp FROM messages').all() as { id: number; timestamp: string }[];
  for (const { k, first_at, last_at } of spans) {
    const inShard = actual.filter((m) => shardOf(layout, m.id) === k).map((m) => m.timestamp).sort();
    t.same([first_at, last_at], [inShard[0], inShard.at(-1)], `shard ${k}: the span is its messages' earliest and latest timestamp`);
  }

  for (const [inboxes, label] of [[[A], 'one inbox'], [[B], 'the smaller inbox'], [[A, B], 'two inboxes']] as const) {
    const want = withWord(db, [...inboxes], 'osprey');
    for (const limit of [1, 7, 40]) {
      for (const [before, after] of [[undefined, undefined], ['2025-01-01T02:00:00.000Z', '2025-01-01T00:30:00.000Z']] as const) {
        const request = (cursor: Cursor | null, smallScope: number) => ({ q: 'osprey', inboxIds: inboxes, limit, cursor, smallScope, before, after });
        const gathered = everyPage((cursor) => searchMessages(db, request(cursor, 5000))).map((m) => m.message_id);
        const byShardSpan = everyPage((cursor) => searchMessages(db, request(cursor, 0))).map((m) => m.message_id);
        const range = before ? ` in ${after}..${before}` : '';
        t.same(byShardSpan, gathered, `${label}, limit ${limit}${range}: the same results, in the same order, as a scope gathered whole`);
        if (!before) t.same(new Set(byShardSpan), want, `${label}, limit ${limit}: every match (${want.size}), the late ones too`);
        else {
          const stamp = db.prepare('SELECT timestamp FROM messages WHERE message_id = ?').pluck();
          const inRange = new Set([...want].filter((id) => (stamp.get(id) as string) > after! && (stamp.get(id) as string) < before));
          t.same(new Set(byShardSpan), inRange, `${label}, limit ${limit}${range}: every match in the range (${inRange.size}) and nothing else`);
        }
        const threads = (smallScope: number) => everyPage((cursor) => searchThreads(db, request(cursor, smallScope))).map((th) => th.thread_id);
        t.same(threads(0), threads(5000), `${label}, limit ${limit}${range}: threads too`);
      }
    }
  }
});

/** Messages whose `hidden` disagrees with their labels (migration 37) as the service counts hidden labels today; none when the triggers keep it. */
const hiddenDrift = (db: Db) =>
  db.prepare('SELECT count(*) FROM messages m WHERE m.hidden != EXISTS (SELECT 1 FROM message_labels l WHERE l.message_rowid = m.id AND l.label IN (SELECT value FROM json_each(?)))').pluck().get(JSON.stringify(HIDDEN_LABELS)) as number;

for (const [way, scopedFrom] of LAYOUTS) t.test(`a search of one inbox checks its matches in messages_search, which follows every hidden label added or removed (${way})`, async (t) => {
  const db = await filled(scopedFrom);
  t.teardown(() => db.close());
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${A}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  const at = new Date(Date.UTC(2025, 0, 2)).toISOString();
  commitInbound(db, { inboxId: A, parsed: { ...template, messageId: '<spam@x.org>', subject: 'Spam', text: 'osprey osprey', date: at }, raw: new TextEncoder().encode('Subject: s\r\n\r\nosprey\r\n'), sourceKey: 'spam', receivedAt: at, hiddenLabels: ['spam'] });
  const label = (ids: string[], edit: { add?: string[]; remove?: string[] }) => updateMessageLabels(db, A, ids, ALL, { add: edit.add ?? [], remove: edit.remove ?? [] });
  label(['<m0@x.org>', '<m1@x.org>', '<m150@x.org>'], { add: ['spam'] });
  label(['<m2@x.org>', '<m151@x.org>', '<m153@x.org>'], { add: ['trash'] });
  label(['<m153@x.org>'], { add: ['spam'] });
  label(['<m153@x.org>', '<m2@x.org>'], { remove: ['trash'] }); // m153 stays hidden (spam), m2 is visible again
  label(['<m1@x.org>'], { remove: ['spam'] });
  t.equal(hiddenDrift(db), 0, 'hidden is 1 exactly for the messages with a hidden label');
  const hidden = new Set(['<spam@x.org>', '<m0@x.org>', '<m150@x.org>', '<m151@x.org>', '<m153@x.org>']);
  const visibleWithWord = new Set([...withWord(db, [A], 'osprey')].filter((id) => !hidden.has(id)));
  t.ok(visibleWithWord.has('<m1@x.org>') && visibleWithWord.has('<m2@x.org>'), 'unlabelled mail is among the matches');

  const plan = db.prepare(`EXPLAIN QUERY PLAN SELECT f.rowid, m.thread_id FROM messages_fts_1 AS f CROSS JOIN messages m INDEXED BY messages_search ON m.inbox_id = ? AND m.id = f.rowid AND m.hidden = 0 WHERE f.messages_fts_1 MATCH ? AND f.rowid <= ?`).all(A, 'osprey', 100) as { detail: string }[];
  t.match(plan.map((p) => p.detail).join(' | '), /COVERING INDEX messages_search \(inbox_id=\? AND id=\?\)/, 'a match is checked in the index alone');

  // A time range that takes in every message checks each row instead: the same pages, in the same order.
  const everything = '2000-01-01T00:00:00.000Z';
  for (const limit of [1, 4, 25]) {
    const keyed = everyPage((cursor) => searchMessages(db, { q: 'osprey', inboxIds: [A], limit, cursor })).map((m) => m.message_id);
    const rows = everyPage((cursor) => searchMessages(db, { q: 'osprey', inboxIds: [A], after: everything, limit, cursor })).map((m) => m.message_id);
    t.same(new Set(keyed), visibleWithWord, `limit ${limit}: every visible match and no hidden one (${visibleWithWord.size})`);
    t.same(keyed, rows, `limit ${limit}: messages in the order the rows give`);
    const keyedThreads = everyPage((cursor) => searchThreads(db, { q: 'osprey', inboxIds: [A], limit, cursor })).map((th) => th.thread_id);
    const rowThreads = everyPage((cursor) => searchThreads(db, { q: 'osprey', inboxIds: [A], after: everything, limit, cursor })).map((th) => th.thread_id);
    t.same(keyedThreads, rowThreads, `limit ${limit}: threads in the order the rows give (${rowThreads.length})`);
  }
  // Deleting a hidden message and a visible one leaves no entry behind.
  t.ok(deleteMessage(db, A, '<m150@x.org>', ALL) && deleteMessage(db, A, '<m1@x.org>', ALL), 'both deleted');
  t.equal(db.prepare('SELECT count(*) FROM messages INDEXED BY messages_search WHERE hidden = 0').pluck().get(), db.prepare('SELECT count(*) FROM messages WHERE hidden = 0').pluck().get(), 'one entry per visible message');
  t.notOk(searchMessages(db, { q: 'm1', inboxIds: [A], limit: 5, cursor: null }).items.length, 'a deleted message is not found');
});

t.test('an upgrade to schema 37 marks the messages that carry a hidden label and indexes the others', async (t) => {
  const file = path.join(tempDir(), 'svc.db');
  const key = randomBytes(32);
  const old = databaseAtSchema(file, key, 36);
  const NOW = '2026-01-01T00:00:00.000Z';
  old.prepare('INSERT INTO inboxes (inbox_id, username, domain, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(A, 'a', 'example.com', NOW, NOW);
  old.prepare("INSERT INTO threads (thread_id, inbox_id, created_at, updated_at) VALUES ('th', ?, ?, ?)").run(A, NOW, NOW);
  const insert = old.prepare("INSERT INTO messages (id, inbox_id, thread_id, message_id, to_addresses, size, timestamp, direction, created_at, updated_at) VALUES (?, ?, 'th', ?, '[]', 1, ?, 'inbound', ?, ?)");
  const labels: Record<number, string[]> = { 1: ['received'], 2: ['received', 'spam'], 3: ['trash', 'unread'], 4: ['blocked'], 5: ['unauthenticated', 'spam'], 6: ['sent'] };
  for (const [id, list] of Object.entries(labels)) {
    insert.run(Number(id), A, `<m${id}@x>`, NOW, NOW, NOW);
    for (const l of list) old.prepare('INSERT INTO message_labels (message_rowid, label) VALUES (?, ?)').run(Number(id), l);
  }
  old.close();

  const db = openDatabase(file, key, { migrate: true });
  t.teardown(() => db.close());
  t.same(db.prepare('SELECT id FROM messages WHERE hidden = 1 ORDER BY id').pluck().all(), [2, 3, 4, 5], 'each message with a hidden label is marked');
  t.same(db.prepare('SELECT id FROM messages INDEXED BY messages_search WHERE inbox_id = ? AND hidden = 0 ORDER BY id').pluck().all(A), [1, 6], 'the others are in the index');
  db.prepare("DELETE FROM message_labels WHERE message_rowid = 5 AND label = 'spam'").run();
  t.equal(db.prepare('SELECT hidden FROM messages WHERE id = 5').pluck().get(), 1, 'still hidden while another hidden label stays');
  db.prepare("DELETE FROM message_labels WHERE message_rowid = 5").run();
  t.equal(db.prepare('SELECT hidden FROM messages WHERE id = 5').pluck().get(), 0, 'visible once the last one goes');
  t.equal(hiddenDrift(db), 0);
});

t.test('an upgrade to schema 33 reads each shard\'s span from the inbox index', async (t) => {
  const file = path.join(tempDir(), 'svc.db');
  const key = randomBytes(32);
  const old = databaseAtSchema(file, key, 32);
  old.prepare('UPDATE search_layout SET bits = 4, legacy_end = 5').run();
  const NOW = '2026-01-01T00:00:00.000Z';
  old.prepare('INSERT INTO inboxes (inbox_id, username, domain, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(A, 'a', 'example.com', NOW, NOW);
  old.prepare("INSERT INTO threads (thread_id, inbox_id, created_at, updated_at) VALUES ('th', ?, ?, ?)").run(A, NOW, NOW);
  const insert = old.prepare("INSERT INTO messages (id, inbox_id, thread_id, message_id, to_addresses, size, timestamp, direction, created_at, updated_at) VALUES (?, ?, 'th', ?, '[]', 1, ?, 'inbound', ?, ?)");
  const stamps: Record<number, string> = { 1: '2026-01-03', 4: '2026-01-01', 6: '2026-01-09', 20: '2026-01-05', 21: '2026-01-02', 40: '2026-01-07' };
  for (const [id, day] of Object.entries(stamps)) insert.run(Number(id), A, `<m${id}@x>`, `${day}T00:00:00.000Z`, NOW, NOW);
  for (const k of [-1, 0, 1, 2, 9]) old.prepare('INSERT INTO search_shards (k) VALUES (?)').run(k);
  old.close();

  const db = openDatabase(file, key, { migrate: true });
  t.teardown(() => db.close());
  t.same(db.prepare('SELECT k, first_at, last_at FROM search_shards ORDER BY k').all(), [
    { k: -1, first_at: '2026-01-01T00:00:00.000Z', last_at: '2026-01-03T00:00:00.000Z' },
    { k: 0, first_at: '2026-01-09T00:00:00.000Z', last_at: '2026-01-09T00:00:00.000Z' },
    { k: 1, first_at: '2026-01-02T00:00:00.000Z', last_at: '2026-01-05T00:00:00.000Z' },
    { k: 2, first_at: '2026-01-07T00:00:00.000Z', last_at: '2026-01-07T00:00:00.000Z' },
    { k: 9, first_at: null, last_at: null },
  ], 'each shard spans its own messages; a shard with none has no span');
  const plan = db.prepare("EXPLAIN QUERY PLAN SELECT s.id FROM messages s INDEXED BY messages_inbox_time WHERE s.inbox_id = ? AND s.timestamp BETWEEN ? AND ? AND s.id BETWEEN ? AND ? LIMIT 10").all('a', 'b', 'c', 1, 2) as { detail: string }[];
  t.match(plan.map((p) => p.detail).join('; '), /COVERING INDEX messages_inbox_time \(inbox_id=\? AND timestamp>\? AND timestamp<\?\)/, 'a shard\'s share of an inbox is one range of the covering index');
});

t.test('an upgrade to schema 36 tags the words of shards made from then on only', async (t) => {
  for (const [shards, scopedFrom] of [[[-1, 0, 3], 4], [[-1], 0], [[], 0]] as const) {
    const file = path.join(tempDir(), 'svc.db');
    const key = randomBytes(32);
    const old = databaseAtSchema(file, key, 35);
    for (const k of shards) old.prepare('INSERT INTO search_shards (k) VALUES (?)').run(k);
    old.close();
    const db = openDatabase(file, key, { migrate: true });
    t.equal(shardLayout(db).scopedFrom, scopedFrom, `shards ${JSON.stringify(shards)}: scoped words from shard ${scopedFrom}`);
    db.close();
  }
});

t.test('scoped words: split as the tokenizer splits them, one inbox\'s postings apart from another\'s, and only searched as words of their scope', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, A);
  insertInbox(db, B);
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${A}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  const text = "Réunion à l'HÔTEL Zürich: write to user@host.example, 東京会議 at 10.30; see §4_b";
  const store = (inbox: string, id: string, body: string) =>
    db.transaction(() =>
      commitInbound(db, { inboxId: inbox, parsed: { ...template, messageId: id, subject: 'Plan', text: body }, raw: new TextEncoder().encode(`Subject: Plan\r\n\r\n${body}\r\n`), sourceKey: id, receivedAt: '2026-02-01T00:00:00.000Z' }),
    )();
  store(A, '<a1@x.org>', text);
  store(B, '<b1@x.org>', 'osprey osprey osprey, nothing else');
  store(A, '<a2@x.org>', 'one osprey');
  const layout = shardLayout(db);
  t.equal(layout.scopedFrom, 0, 'a new home tags every shard');

  // The index holds each inbox's words under its own tag: a term of A counts only A's messages.
  const table = shardTable(shardOf(layout, db.prepare('SELECT id FROM messages WHERE message_id = ?').pluck().get('<a2@x.org>') as number));
  db.exec(`CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, ${table}, 'row')`);
  const docs = (term: string) => (db.prepare('SELECT doc FROM temp.vocab WHERE term = ?').pluck().get(term) as number | undefined) ?? 0;
  t.equal(docs('osprey'), 2, 'the untagged word: both inboxes');
  t.equal(docs(`${scopeTag(A)}osprey`), 1, "A's tagged word: A's one message");
  t.equal(docs(`${scopeTag(B)}osprey`), 1, "B's tagged word: B's one message");
  t.equal(scopeTag(A).length, 8);
  t.not(scopeTag(A), scopeTag(B));

  // Every way of writing a word finds the message in a narrow scope (tagged words) and a wide one
  // (more inboxes than are searched by tag, untagged words), the same.
  const wide = [A, B, ...Array.from({ length: 20 }, (_, i) => `other${i}@example.com`)];
  for (const q of ['reunion', 'Réunion', 'hotel', 'hôtel zurich', "l'hôtel", 'user@host.example', 'host.ex*', 'USER@HOST*', '東京会議', '10.30', '§4_b', 'réu*']) {
    for (const [scope, inboxes] of [['narrow', [A]], ['two inboxes', [A, B]], ['wide', wide]] as const) {
      const found = searchMessages(db, { q, inboxIds: inboxes, limit: 5, cursor: null }).items.map((m) => m.message_id);
      t.same(found, ['<a1@x.org>'], `${JSON.stringify(q)}, ${scope} scope: found`);
    }
  }
  // Letters the index's tokenizer may not know (a script newer than its tables) and combining
  // accents (NFD): a query holding them is searched by its untagged words, and finds the same.
  store(A, '<a3@x.org>', 'Decomposed re\u0301union and 𞤀𞤁 kite plus café\u0301');
  for (const q of ['réunion', 're\u0301union', '𞤀*', '𞤀𞤁', 'kite 𞤀𞤁', '𞤀𞤁 kit*', 'cafe', 'µ', 'kite\u0000x']) {
    const found = (inboxes: string[]) => searchMessages(db, { q, inboxIds: inboxes, limit: 10, cursor: null }).items.map((m) => m.message_id).sort();
    t.same(found([A]), found(wide).filter((id) => id.startsWith('<a')), `${JSON.stringify(q)}: a narrow scope finds what a wide one finds in it`);
  }
  t.same(searchMessages(db, { q: 'réunion', inboxIds: [A], limit: 10, cursor: null }).items.map((m) => m.message_id).sort(), ['<a1@x.org>', '<a3@x.org>'], 'composed and decomposed accents alike');
  t.same(searchMessages(db, { q: '𞤀*', inboxIds: [A], limit: 10, cursor: null }).items.map((m) => m.message_id), searchMessages(db, { q: '𞤀*', inboxIds: wide, limit: 10, cursor: null }).items.map((m) => m.message_id), 'a prefix of an unknown letter never becomes a bare tag matching every word');
  for (const q of ['10.31', 'user@host.examples', 'réunions']) t.same(searchMessages(db, { q, inboxIds: [A], limit: 5, cursor: null }).items, [], `${JSON.stringify(q)}: not found`);
  // A tagged word is not a word of the mail: searched literally, it finds nothing in either scope.
  for (const inboxes of [[A], wide]) t.same(searchMessages(db, { q: `${scopeTag(A)}osprey`, inboxIds: inboxes, limit: 5, cursor: null }).items, [], `a tagged word searched literally (${inboxes.length} inboxes): nothing`);
  // Another inbox's mail never comes back, and the ranking within a scope is by its own mail.
  t.same(searchMessages(db, { q: 'osprey', inboxIds: [A], limit: 5, cursor: null }).items.map((m) => m.message_id), ['<a2@x.org>'], "A's search: A's mail only");
  t.same(searchMessages(db, { q: 'osprey', inboxIds: [A, B], limit: 5, cursor: null }).items.map((m) => m.message_id), ['<b1@x.org>', '<a2@x.org>'], 'both inboxes: three occurrences ranked first');
});

for (const [way, scopedFrom] of LAYOUTS) t.test(`a full shard's segments are merged into one, in bounded steps, and search finds the same (${way})`, async (t) => {
  const db = await filled(scopedFrom);
  t.teardown(() => db.close());
  const shards = db.prepare('SELECT k FROM search_shards ORDER BY k').pluck().all() as number[];
  const newest = Math.max(...shards);
  const segments = (k: number) => db.prepare(`SELECT count(DISTINCT segid) FROM ${shardTable(k)}_idx`).pluck().get() as number;
  // Commits of one message each leave a shard in several segments.
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${A}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  for (let i = 0; i < 40; i++) {
    const at = new Date(Date.UTC(2025, 1, 1) + i * 60_000).toISOString();
    db.transaction(() => commitInbound(db, { inboxId: i % 2 ? A : B, parsed: { ...template, messageId: `<single${i}@x.org>`, subject: `Single ${i}`, text: `osprey single ${i}`, date: at }, raw: new TextEncoder().encode('x'), sourceKey: `single${i}`, receivedAt: at }))();
  }
  const full = (db.prepare('SELECT k FROM search_shards ORDER BY k DESC').pluck().all() as number[]).slice(1);
  const split = full.filter((k) => segments(k) > 1);
  t.ok(split.length >= 2, `shards filled one message per commit keep several segments (${split.map((k) => `${k}: ${segments(k)}`).join(', ')})`);
  const search = () => ({
    messages: everyPage((cursor) => searchMessages(db, { q: 'osprey', inboxIds: [A], limit: 7, cursor })).map((m) => m.message_id),
    threads: everyPage((cursor) => searchThreads(db, { q: 'osprey single', inboxIds: [A, B], limit: 5, cursor })).map((th) => th.thread_id),
  });
  const before = search();

  t.same(mergeFullShards(db, 0), [], 'no time, no work');
  t.equal(db.prepare('SELECT count(*) FROM search_shards WHERE merged = 1').pluck().get(), 0);
  const finished = mergeFullShards(db, Number.POSITIVE_INFINITY);
  t.same(finished, full, 'every shard but the newest, newest first');
  t.ok(full.every((k) => segments(k) === 1), 'each full shard is one segment');
  t.same(db.prepare('SELECT k FROM search_shards WHERE merged = 0').pluck().all(), [Math.max(newest, ...full) + 1], 'only the newest shard, still written to, is left');
  t.same(mergeFullShards(db, Number.POSITIVE_INFINITY), [], 'merged once');
  t.same(search(), before, 'the same results, in the same order');
  t.equal(indexedRows(db, {}), db.prepare('SELECT count(*) FROM messages').pluck().get(), 'every message indexed once');
  const result = db.prepare("INSERT INTO messages_fts_5 (messages_fts_5, rank) VALUES ('integrity-check', 0)").run();
  t.ok(result, 'the merged index passes FTS5 integrity-check');
});

t.test('a search of one inbox gathers its messages only once two shards lack its words: a busy inbox never, a small one after two shards', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  db.prepare('UPDATE search_layout SET bits = 4').run();
  insertInbox(db, A);
  insertInbox(db, B);
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${A}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  // B's two messages come first, in the oldest shard; A's 200 fill the twelve shards after it.
  db.transaction(() => {
    for (let i = 0; i < 202; i++) {
      const at = new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString();
      commitInbound(db, { inboxId: i < 2 ? B : A, parsed: { ...template, messageId: `<g${i}@x.org>`, subject: `Note ${i}`, text: `osprey m${i}`, date: at }, raw: new TextEncoder().encode('x'), sourceKey: `g${i}`, receivedAt: at });
    }
  })();
  const shards = (db.prepare('SELECT count(*) FROM search_shards').pluck().get() as number);
  t.ok(shards >= 12, `${shards} shards`);
  const counts = countStatementRuns(db, (sql) => (sql.includes('WITH band') ? 'band' : /^SELECT s\.id FROM messages s WHERE .* LIMIT \?$/s.test(sql) ? 'gather' : 'other'));
  const search = (inbox: string, q: string, limit: number) => {
    counts.clear();
    const threads = searchThreads(db, { q, inboxIds: [inbox], limit, cursor: null }).items.map((th) => th.thread_id);
    return { threads, bands: counts.get('band') ?? 0, gathers: counts.get('gather') ?? 0 };
  };

  const busy = search(A, 'osprey', 40);
  t.equal(busy.threads.length, 40, 'a page of the busy inbox');
  t.equal(busy.gathers, 0, 'the busy inbox, its words in every shard read, is never gathered');
  t.ok(busy.bands >= 3, `read from ${busy.bands} shards`);

  const small = search(B, 'osprey', 10);
  t.same(small.threads.length, 2, 'both threads of the small inbox');
  t.equal(small.gathers, 1, 'the small inbox is gathered once');
  t.equal(small.bands, 3, 'after two shards without it; then only its own shard is read');

  const lacking = search(A, 'kestrel', 10);
  t.same(lacking.threads, [], 'a word the busy inbox lacks');
  t.equal(lacking.gathers, 1, 'gathered once, after two shards without the word');
  t.equal(lacking.bands, shards, 'every shard holds some of its mail, so every one is read');
});

t.test('a page token of tagged scores is stale once the scope is searched by untagged words; a long dotted word is not searched by tag', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  const inboxes = Array.from({ length: 17 }, (_, i) => `i${i}@example.com`);
  for (const id of inboxes) insertInbox(db, id);
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${A}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  db.transaction(() => {
    for (let i = 0; i < 60; i++) {
      const at = new Date(Date.UTC(2026, 2, 1) + i * 60_000).toISOString();
      commitInbound(db, { inboxId: inboxes[i % 16]!, parsed: { ...template, messageId: `<p${i}@x.org>`, subject: `Heron ${i}`, text: `heron ${'a.'.repeat(i % 3)} note ${i}`, date: at }, raw: new TextEncoder().encode('x'), sourceKey: `p${i}`, receivedAt: at });
    }
  })();
  const sixteen = inboxes.slice(0, 16);
  const first = searchMessages(db, { q: 'heron', inboxIds: sixteen, limit: 10, cursor: null });
  t.ok(first.next, 'a first page of sixteen inboxes');
  t.same(searchMessages(db, { q: 'heron', inboxIds: sixteen, limit: 10, cursor: first.next }).items.length, 10, 'the token goes on with the same scope');
  t.throws(() => searchMessages(db, { q: 'heron', inboxIds: inboxes, limit: 10, cursor: first.next }), { code: 'page_token_stale' }, 'a seventeenth inbox between pages: stale, not a page scored the other way');
  // 256 one-letter words in one whitespace-separated word, over 16 inboxes: searched by its untagged words.
  const dotted = Array.from({ length: 256 }, () => 'a').join('.');
  const t0 = performance.now();
  const wide = searchMessages(db, { q: `heron ${dotted}`, inboxIds: sixteen, limit: 10, cursor: null });
  t.same(wide.items, [], 'nothing has 256 a in a row');
  t.ok(performance.now() - t0 < 10_000, 'answered');
  t.equal(wide.next, null);
});

t.test('a merge step that fails in SQLite is tried again later and never stops the loop that runs it', async (t) => {
  const db = await filled(0);
  t.teardown(() => db.close());
  const full = (db.prepare('SELECT k FROM search_shards ORDER BY k DESC').pluck().all() as number[])[1]!;
  db.exec(`DROP TABLE ${shardTable(full)}`);
  t.throws(() => mergeFullShards(db, Number.POSITIVE_INFINITY), /no such table/, 'the damaged shard fails its merge');
  const schedule = new ShardMergeSchedule();
  t.equal(schedule.runIfDue(db, 1_000), null, 'the schedule keeps going');
  t.equal(schedule.runIfDue(db, 2_000), null, 'and waits before trying again');
});
