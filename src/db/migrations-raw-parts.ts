/**
 * Migration 11: raw MIME in parts (src/mail/raw-mime.ts). One row per message made SQLite copy a
 * large message twice more at its insert; `raw_message_parts` holds it in parts of at most 1 MiB
 * in `part` order. Messages stored before this become one part each.
 */
export const RAW_PARTS_MIGRATION = `
  CREATE TABLE raw_message_parts (
    message_rowid INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    part INTEGER NOT NULL,
    bytes BLOB NOT NULL,
    PRIMARY KEY (message_rowid, part)
  ) STRICT;
  INSERT INTO raw_message_parts (message_rowid, part, bytes) SELECT message_rowid, 0, mime FROM raw_messages;
  DROP TABLE raw_messages;
`;
