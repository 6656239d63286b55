/**
 * Migration 21: the label change log (docs/agentmail-compat.md, `inboxes.events.list`). AgentMail's
 * inbox events are `label.added` / `label.removed` per message. Triggers on `message_labels` write
 * them in the same transaction as the change, by whatever code path makes it (receipt, send
 * outcomes, delivery reports, label edits), as the thread-summary triggers do. Rows belong to their
 * message: deleting a message forgets its history (ON DELETE CASCADE), and a label row removed by
 * that cascade records nothing, since its message is already gone. AUTOINCREMENT keeps `seq` (the
 * event id) from ever being reused. Labels stored before the migration are recorded as added
 * when their message was created.
 */
const NOW_MS = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;

const record = (row: 'NEW' | 'OLD', eventType: 'label.added' | 'label.removed') => `
    INSERT INTO label_events (message_rowid, inbox_id, event_type, label, created_at)
    SELECT ${row}.message_rowid, m.inbox_id, '${eventType}', ${row}.label, ${NOW_MS} FROM messages m WHERE m.id = ${row}.message_rowid;`;

export const LABEL_EVENTS_MIGRATION = `
  CREATE TABLE label_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    message_rowid INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    inbox_id TEXT NOT NULL,
    event_type TEXT NOT NULL CHECK (event_type IN ('label.added', 'label.removed')),
    label TEXT NOT NULL,
    created_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX label_events_inbox ON label_events (inbox_id, seq);
  CREATE INDEX label_events_message ON label_events (message_rowid);

  INSERT INTO label_events (message_rowid, inbox_id, event_type, label, created_at)
    SELECT l.message_rowid, m.inbox_id, 'label.added', l.label, m.created_at
    FROM message_labels l JOIN messages m ON m.id = l.message_rowid ORDER BY m.id, l.label;

  CREATE TRIGGER message_labels_event_insert AFTER INSERT ON message_labels BEGIN${record('NEW', 'label.added')}
  END;
  CREATE TRIGGER message_labels_event_delete AFTER DELETE ON message_labels BEGIN${record('OLD', 'label.removed')}
  END;
`;
