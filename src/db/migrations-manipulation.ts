/**
 * Migration 16: the advisory manipulation verdict of received mail (issue 20 §3,
 * src/mail/manipulation.ts, docs/manipulation.md) as JSON `{suspicious, findings}`, and the
 * domains each inbox corresponds with, against which a sender's domain is checked for lookalikes.
 * A domain is added when clean mail arrives from it (not suspicious, not hidden); the backfill
 * takes the senders of the inbox's received mail that carries no hidden label.
 */
export const MANIPULATION_MIGRATION = `
  ALTER TABLE messages ADD COLUMN manipulation TEXT;
  CREATE TABLE correspondent_domains (
    inbox_id TEXT NOT NULL REFERENCES inboxes (inbox_id) ON DELETE CASCADE,
    domain TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    PRIMARY KEY (inbox_id, domain)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX correspondent_domains_recent ON correspondent_domains (inbox_id, last_seen);
  INSERT OR IGNORE INTO correspondent_domains (inbox_id, domain, last_seen)
    SELECT m.inbox_id, substr(m.sender, instr(m.sender, '@') + 1), max(m.timestamp)
      FROM messages m
     WHERE m.direction = 'inbound' AND instr(m.sender, '@') > 0
       AND NOT EXISTS (SELECT 1 FROM message_labels l WHERE l.message_rowid = m.id AND l.label IN ('spam', 'blocked', 'unauthenticated'))
     GROUP BY m.inbox_id, substr(m.sender, instr(m.sender, '@') + 1);
`;
