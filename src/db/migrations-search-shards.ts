/**
 * Migration 31: the search index in shards by message row id (src/mail/search-index.ts). Mail
 * stored before it stays where it is indexed, in `messages_fts` (shard -1, row ids below
 * `legacy_end`); later mail goes to a shard of 2^13 = 8,192 row ids, each an FTS5 table of its
 * own made with its first message. Nothing is indexed again, so the migration costs nothing
 * whatever the home holds.
 */
export const SEARCH_SHARDS_MIGRATION = `
  CREATE TABLE search_layout (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    bits INTEGER NOT NULL CHECK (bits BETWEEN 1 AND 40),
    legacy_end INTEGER NOT NULL
  ) STRICT;
  INSERT INTO search_layout (id, bits, legacy_end) SELECT 1, 13, coalesce(max(id), 0) + 1 FROM messages;
  CREATE TABLE search_shards (k INTEGER PRIMARY KEY) STRICT;
  INSERT INTO search_shards (k) SELECT -1 WHERE EXISTS (SELECT 1 FROM messages);
`;

/**
 * Migration 33: each shard's time span, `first_at`..`last_at`, the earliest and latest timestamp
 * of its messages. Search reads a scope's share of a shard from the (inbox_id, timestamp) index
 * within that span (src/mail/search.ts shardScope) instead of looking up the message of every
 * match to check its inbox. The spans are read from that index alone (it holds each message's
 * timestamp and row id), so the migration reads no message row.
 */
export const SHARD_SPANS_MIGRATION = `
  ALTER TABLE search_shards ADD COLUMN first_at TEXT;
  ALTER TABLE search_shards ADD COLUMN last_at TEXT;
  UPDATE search_shards SET first_at = spans.first_at, last_at = spans.last_at
  FROM (
    SELECT CASE WHEN m.id < l.legacy_end THEN -1 ELSE m.id >> l.bits END AS k, min(m.timestamp) AS first_at, max(m.timestamp) AS last_at
    FROM search_layout l CROSS JOIN messages m INDEXED BY messages_inbox_time
    GROUP BY 1
  ) AS spans
  WHERE spans.k = search_shards.k;
`;

/**
 * Migration 36: shards made from now on also index each message's words tagged with its inbox
 * (src/mail/search-index.ts, "Scoped words"), so a search of a few inboxes reads their own
 * postings instead of every inbox's. `scoped_from` is the first such shard: the one after the
 * newest shard existing now. Older shards stay as they are indexed (nothing is indexed again),
 * and search reads them as before. `merged`: whether a shard no longer written to has had its
 * FTS5 segments merged into one (src/db/search-merge.ts); none has yet.
 */
export const SCOPED_SHARDS_MIGRATION = `
  ALTER TABLE search_layout ADD COLUMN scoped_from INTEGER NOT NULL DEFAULT 0;
  UPDATE search_layout SET scoped_from = coalesce((SELECT max(k) + 1 FROM search_shards WHERE k >= 0), 0);
  ALTER TABLE search_shards ADD COLUMN merged INTEGER NOT NULL DEFAULT 0;
`;

/** The hidden labels as an SQL list, as they were when migration 37 was written (spam, blocked, unauthenticated, trash). */
const HIDDEN_AT_37 = "'spam', 'blocked', 'unauthenticated', 'trash'";

/**
 * Migration 37: a search of one inbox checks each match in a dense index instead of its message's
 * row. Search looks up every match of a band to check its inbox and visibility and to take its
 * thread; the message row is about a page of its own at scale (an inbox's mail lies among every
 * other inbox's), and its labels another, so a band of a few matches in each of eight shards read
 * about 73 pages at 1,000,000 messages (docs/benchmarks.md, "Eleventh round"). `messages_search`
 * holds (inbox_id, id, thread_id) of every message without a hidden label: an inbox's matches in
 * a shard lie in one or two of its pages.
 *
 * `hidden` is 1 while the message carries a hidden label, kept by triggers on its labels whatever
 * adds or removes one. It is the record's last column, after the bodies, so reading it from the
 * row can cost the row's overflow pages: queries read it only through the index, where
 * `hidden = 0` holds for every entry.
 */
export const SEARCH_KEYS_MIGRATION = `
  ALTER TABLE messages ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
  UPDATE messages SET hidden = 1 WHERE id IN (SELECT message_rowid FROM message_labels INDEXED BY message_labels_label WHERE label IN (${HIDDEN_AT_37}));
  CREATE INDEX messages_search ON messages (inbox_id, id, thread_id) WHERE hidden = 0;
  CREATE TRIGGER message_labels_hidden_insert AFTER INSERT ON message_labels WHEN NEW.label IN (${HIDDEN_AT_37}) BEGIN
    UPDATE messages SET hidden = 1 WHERE id = NEW.message_rowid AND hidden = 0;
  END;
  CREATE TRIGGER message_labels_hidden_delete AFTER DELETE ON message_labels WHEN OLD.label IN (${HIDDEN_AT_37}) BEGIN
    UPDATE messages SET hidden = 0 WHERE id = OLD.message_rowid AND hidden = 1
      AND NOT EXISTS (SELECT 1 FROM message_labels WHERE message_rowid = OLD.message_rowid AND label IN (${HIDDEN_AT_37}));
  END;
`;
