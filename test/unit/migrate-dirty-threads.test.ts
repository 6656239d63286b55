/**
 * An upgrade of a home whose `dirty_threads` still lists threads (their summaries to be remade by
 * the next write transaction): the migrations run no commit hook, whose summary writer is made for
 * the newest schema (it sets `threads.unread`, which migration 30 adds), so the upgrade from
 * schema 25 succeeds; the next write remakes the summary and the unread counts hold the thread.
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { openDatabase } from '../../src/db/open.js';
import { listThreads } from '../../src/mail/threads.js';
import { HIDDEN_LABELS } from '../../src/mail/labels.js';
import { databaseAtSchema } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const NOW = '2026-11-01T00:00:00.000Z';
const OLD_SCHEMA = 25;

t.test('a home at schema 25 with dirty threads upgrades, and its summaries and counts follow', async (t) => {
  const file = path.join(tempDir(), 'svc.db');
  const key = randomBytes(32);
  // The home as an svc of schema 25 left it, through a connection of its own (no commit hook).
  const old = databaseAtSchema(file, key, OLD_SCHEMA);
  old.prepare('INSERT INTO inboxes (inbox_id, username, domain, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run('a@home.example', 'a', 'home.example', NOW, NOW);
  old.prepare("INSERT INTO threads (thread_id, inbox_id, created_at, updated_at) VALUES ('th1', 'a@home.example', ?, ?)").run(NOW, NOW);
  const rowid = Number(
    old
      .prepare("INSERT INTO messages (inbox_id, thread_id, message_id, to_addresses, size, timestamp, direction, created_at, updated_at) VALUES ('a@home.example', 'th1', '<m1@x>', '[]', 1, ?, 'inbound', ?, ?)")
      .run(NOW, NOW, NOW).lastInsertRowid,
  );
  old.prepare("INSERT INTO message_labels (message_rowid, label) VALUES (?, 'unread')").run(rowid);
  t.same(old.prepare('SELECT thread_id FROM dirty_threads').pluck().all(), ['th1'], 'the thread waits for its summary');
  old.close();

  const db = openDatabase(file, key, { migrate: true });
  t.teardown(() => db.close());
  t.equal(db.pragma('user_version', { simple: true }), MIGRATIONS.length, 'upgraded to the newest schema');
  t.same(db.prepare('SELECT inbox_id, threads FROM inbox_unread_threads').all(), [{ inbox_id: 'a@home.example', threads: 1 }], 'migration 30 counted the unread thread from its messages');
  // The next write transaction remakes what the migrations left dirty.
  db.transaction(() => db.prepare("INSERT INTO settings (key, value) VALUES ('probe', '1')").run())();
  t.same(db.prepare('SELECT count(*) AS n FROM dirty_threads').get(), { n: 0 }, 'remade by the next write');
  t.same(db.prepare('SELECT unread, shown FROM threads').get(), { unread: 1, shown: 1 });
  const listed = listThreads(db, ['a@home.example'], {}, { excluded: HIDDEN_LABELS }, { limit: 10, ascending: false, cursor: null }).items;
  t.same(listed.map((th) => [th.thread_id, th.labels]), [['th1', ['unread']]], 'listed from its stored summary');
  t.same(db.prepare('SELECT inbox_id, threads FROM inbox_unread_threads').all(), [{ inbox_id: 'a@home.example', threads: 1 }], 'still counted once');
});
