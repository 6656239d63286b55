/**
 * The raw MIME of every stored message (received and sent), kept in parts of at most
 * RAW_PART_BYTES (migration 11). SQLite copies a bound value twice before it reaches the pages
 * (better-sqlite3's binding, then the record it builds), so one 25 MB row cost about 50 MB more at
 * the moment of its insert — the largest single step of a large message's commit (issue 16,
 * finding 9, docs/inbound.md). In parts, an insert costs twice a part. Runs inside the caller's
 * transaction.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { bufferView } from '../core/bytes.js';

/** Large enough that a typical message is one row, small enough that a part's copies do not matter. */
export const RAW_PART_BYTES = 1024 * 1024;

/** Stores the message's raw MIME in its parts (views of `raw`, not copies). */
export function storeRawMime(db: Db, messageRowid: number, raw: Uint8Array): void {
  const insert = prepared(db, 'INSERT INTO raw_message_parts (message_rowid, part, bytes) VALUES (?, ?, ?)');
  const bytes = bufferView(raw);
  // An empty message is still one (empty) part, so "stored" and "absent" stay distinguishable.
  for (let at = 0, part = 0; at === 0 || at < bytes.length; at += RAW_PART_BYTES, part++) insert.run(messageRowid, part, bytes.subarray(at, at + RAW_PART_BYTES));
}

/** The message's raw MIME, whole; undefined when none is stored. */
export function rawMime(db: Db, messageRowid: number): Buffer | undefined {
  const parts = prepared(db, 'SELECT bytes FROM raw_message_parts WHERE message_rowid = ? ORDER BY part').all(messageRowid) as { bytes: Buffer }[];
  if (parts.length === 0) return undefined;
  return parts.length === 1 ? parts[0]!.bytes : Buffer.concat(parts.map((p) => p.bytes));
}
