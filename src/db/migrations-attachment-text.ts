/**
 * Migration 22: each attachment's extracted text (docs/attachments.md). `text_status` NULL means
 * not read yet: mail stored before this migration, sent mail, and attachments the receive path
 * left for later are read on their first read. The text is also appended to the message's search
 * body (messages_fts), at the commit or when it is read later.
 */
export const ATTACHMENT_TEXT_MIGRATION = `
  ALTER TABLE attachments ADD COLUMN text TEXT;
  ALTER TABLE attachments ADD COLUMN text_status TEXT CHECK (text_status IN ('ok', 'unsupported', 'encrypted', 'too_large', 'timeout', 'failed'));
  ALTER TABLE attachments ADD COLUMN text_truncated INTEGER NOT NULL DEFAULT 0;
`;
