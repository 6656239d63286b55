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
