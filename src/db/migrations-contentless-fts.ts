/**
 * Migration 13: a contentless search index (issue 19). FTS5 kept its own copy of every indexed
 * subject, participant list and body in `messages_fts_content`: about 9 KiB of a 10 KB message's
 * 60 KiB written at its commit, read by nothing (search needs only the index and the column sizes,
 * which `messages_fts_docsize` keeps). `content=''` drops the copy; `contentless_delete=1` keeps
 * `DELETE … WHERE rowid = ?` working (SQLite 3.43+). Rowids, tokens and bm25 scores are
 * unchanged, so search page tokens stay valid. Existing rows are indexed again from the old table.
 */
export const CONTENTLESS_FTS_MIGRATION = `
  CREATE VIRTUAL TABLE messages_fts_v2 USING fts5 (subject, participants, body, tokenize = 'unicode61 remove_diacritics 2', content = '', contentless_delete = 1);
  INSERT INTO messages_fts_v2 (rowid, subject, participants, body) SELECT rowid, subject, participants, body FROM messages_fts;
  DROP TABLE messages_fts;
  ALTER TABLE messages_fts_v2 RENAME TO messages_fts;
`;
