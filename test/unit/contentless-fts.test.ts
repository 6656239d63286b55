/**
 * Migration 13: the search index drops its copy of the indexed text, and everything search does
 * with it still works: the same rows match with the same bm25 scores, deletes by rowid remove a
 * row from the index, new rows are indexed, and the text is no longer stored in it.
 */
import t from 'tap';
import Database from 'better-sqlite3-multiple-ciphers';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { CONTENTLESS_FTS_MIGRATION } from '../../src/db/migrations-contentless-fts.js';

const RANKED = "SELECT rowid AS id, round(bm25(messages_fts, 10.0, 4.0, 1.0), 9) AS score FROM messages_fts WHERE messages_fts MATCH ? ORDER BY score, rowid";

t.test('an index made before migration 13 answers the same after it, without a copy of the text', async (t) => {
  const db = new Database(':memory:');
  t.teardown(() => db.close());
  const at = MIGRATIONS.indexOf(CONTENTLESS_FTS_MIGRATION);
  t.ok(at > 0, 'the migration is in the list');
  for (const sql of MIGRATIONS.slice(0, at)) db.exec(sql);
  const insert = db.prepare('INSERT INTO messages_fts (rowid, subject, participants, body) VALUES (?, ?, ?, ?)');
  for (let i = 1; i <= 300; i++) insert.run(i, `Report ${i % 7 === 0 ? 'osprey' : 'note'}`, `Sender ${i} <s${i}@example.com>`, `the osprey ${'flies '.repeat(i % 5)}over water ${i}`);
  const before = db.prepare(RANKED).all('"osprey"');
  t.equal(before.length, 300);
  t.equal(db.prepare('SELECT body FROM messages_fts WHERE rowid = 5').pluck().get(), 'the osprey over water 5', 'before: the index keeps the text');

  db.transaction(() => db.exec(CONTENTLESS_FTS_MIGRATION))();

  t.same(db.prepare(RANKED).all('"osprey"'), before, 'the same matches, in the same order, with the same scores');
  t.same(db.prepare(RANKED).all('"s42" "example"').map((r) => (r as { id: number }).id), [42], 'phrases of participants still match');
  t.equal(db.prepare('SELECT body FROM messages_fts WHERE rowid = 5').pluck().get(), null, 'the text is no longer stored');
  t.equal(db.prepare("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'messages_fts%content%' OR name LIKE 'messages_fts_v2%'").pluck().get(), 0, 'no content table, no leftover');

  db.prepare('DELETE FROM messages_fts WHERE rowid = ?').run(7);
  db.prepare('DELETE FROM messages_fts WHERE rowid IN (SELECT value FROM json_each(?))').run(JSON.stringify([14, 21]));
  const left = (db.prepare(RANKED).all('"osprey" "report"') as { id: number }[]).map((r) => r.id);
  t.notOk(left.includes(7) || left.includes(14) || left.includes(21), 'deleted rows no longer match');
  t.equal(left.length, 297, "the others still do");
  insert.run(1000, 'Osprey report', 'New <n@example.com>', 'fresh');
  t.same(db.prepare("SELECT rowid FROM messages_fts WHERE messages_fts MATCH '\"fresh\"'").pluck().all(), [1000], 'new rows are indexed');
});
