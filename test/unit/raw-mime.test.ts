/**
 * Raw MIME in parts (src/mail/raw-mime.ts, migration 11) on a real database: a message larger
 * than a part is stored in parts of at most RAW_PART_BYTES and read back byte for byte, a
 * one-part and an empty message read back as stored, a message with none reads as undefined,
 * deleting the message deletes its parts, and migration 11 keeps the raw MIME of messages
 * stored before it.
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3-multiple-ciphers';
import { openDatabase, type Db } from '../../src/db/open.js';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { RAW_PART_BYTES, rawMime, storeRawMime } from '../../src/mail/raw-mime.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const INBOX = 'agent@example.com';

/** Inserts a bare message row (and its thread) and returns its rowid. */
function messageRow(db: Db | Database.Database, n: number): number {
  const now = new Date().toISOString();
  db.prepare('INSERT OR IGNORE INTO threads (thread_id, inbox_id, subject, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run('thr', INBOX, 's', now, now);
  return Number(
    db
      .prepare("INSERT INTO messages (inbox_id, thread_id, message_id, to_addresses, size, timestamp, direction, created_at, updated_at) VALUES (?, 'thr', ?, '[]', 0, ?, 'inbound', ?, ?)")
      .run(INBOX, `<m${n}@example.net>`, now, now, now).lastInsertRowid,
  );
}

t.test('a message larger than a part is stored in parts and read back byte for byte', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, INBOX);
  const big = randomBytes(2 * RAW_PART_BYTES + 12_345);
  const small = Buffer.from('Subject: hi\r\n\r\nhello\r\n');
  const empty = Buffer.alloc(0);
  const [bigRow, smallRow, emptyRow, noneRow] = [1, 2, 3, 4].map((n) => messageRow(db, n));
  db.transaction(() => {
    storeRawMime(db, bigRow!, new Uint8Array(big.buffer, big.byteOffset, big.byteLength));
    storeRawMime(db, smallRow!, small);
    storeRawMime(db, emptyRow!, empty);
  })();

  const parts = db.prepare('SELECT part, length(bytes) AS n FROM raw_message_parts WHERE message_rowid = ? ORDER BY part').all(bigRow) as { part: number; n: number }[];
  t.same(parts, [{ part: 0, n: RAW_PART_BYTES }, { part: 1, n: RAW_PART_BYTES }, { part: 2, n: 12_345 }], 'three parts, in order, none above the part size');
  t.ok(rawMime(db, bigRow!)!.equals(big), 'the large message reads back byte for byte');
  t.ok(rawMime(db, smallRow!)!.equals(small), 'a small message is one part and reads back as stored');
  t.equal(rawMime(db, emptyRow!)!.length, 0, 'an empty message reads back empty, not missing');
  t.equal(rawMime(db, noneRow!), undefined, 'a message with no raw MIME reads as undefined');

  db.prepare('DELETE FROM messages WHERE id = ?').run(bigRow);
  t.equal((db.prepare('SELECT count(*) AS n FROM raw_message_parts WHERE message_rowid = ?').get(bigRow) as { n: number }).n, 0, 'deleting the message deletes its parts');
});

t.test('migration 11 keeps the raw MIME of messages stored before it', async (t) => {
  const db = new Database(':memory:');
  t.teardown(() => db.close());
  db.pragma('foreign_keys = ON');
  for (const sql of MIGRATIONS.slice(0, 10)) db.exec(sql);
  insertInbox(db as unknown as Db, INBOX);
  const old = randomBytes(3 * RAW_PART_BYTES);
  const rows = [messageRow(db, 1), messageRow(db, 2)];
  db.prepare('INSERT INTO raw_messages (message_rowid, mime) VALUES (?, ?)').run(rows[0], old);
  db.prepare('INSERT INTO raw_messages (message_rowid, mime) VALUES (?, ?)').run(rows[1], Buffer.from('x'));
  db.exec(MIGRATIONS[10]!);
  t.ok(rawMime(db as unknown as Db, rows[0]!)!.equals(old), 'a large message stored whole before the migration reads back whole');
  t.equal(rawMime(db as unknown as Db, rows[1]!)!.toString(), 'x');
  t.equal(db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE name = 'raw_messages'").pluck().get(), 0, 'the old table is gone');
});
