/** Group commit: writes of one event-loop turn share a transaction; a failing write is rolled back alone. */
import t from 'tap';
import Database from 'better-sqlite3-multiple-ciphers';
import { groupCommit } from '../../src/db/group-commit.js';
import type { Db } from '../../src/db/open.js';

t.test('writes of one turn share a commit; one that throws is rolled back and rejected alone', async (t) => {
  const db = new Database(':memory:') as unknown as Db;
  db.exec('CREATE TABLE t (v TEXT NOT NULL UNIQUE)');
  const insert = (v: string) => () => db.prepare('INSERT INTO t (v) VALUES (?)').run(v).changes;
  const results = await Promise.allSettled([
    groupCommit(db, insert('a')),
    groupCommit(db, () => {
      insert('b')();
      insert('a')(); // duplicate: throws after writing 'b'
    }),
    groupCommit(db, insert('c')),
  ]);
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
  t.same(
    (db.prepare('SELECT v FROM t ORDER BY v').all() as { v: string }[]).map((r) => r.v),
    ['a', 'c'],
    "the failed write's own changes ('b') are gone, the others committed",
  );
  t.equal(await groupCommit(db, () => 42), 42, 'a later turn commits on its own');
  db.close();
});
