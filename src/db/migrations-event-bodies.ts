/**
 * Migration 32: a received message's event no longer stores a copy of the message's bodies; it
 * reads them from the message row when it is delivered (src/events/log.ts deliveredPayload).
 * `bodies_from_message = 1` marks such an event. Whatever deletes a message (a message, thread or
 * inbox deletion, or a cascade), the trigger first writes the bodies into its events as null, as
 * redaction leaves them, and ends the reference: a row id SQLite later gives another message
 * never lends that message's bodies to an old event. Events stored before keep their copy.
 */
export const EVENT_BODIES_MIGRATION = `
  ALTER TABLE events ADD COLUMN bodies_from_message INTEGER NOT NULL DEFAULT 0 CHECK (bodies_from_message IN (0, 1));
  CREATE TRIGGER messages_event_bodies BEFORE DELETE ON messages BEGIN
    UPDATE events SET
      payload = json_set(payload, '$.message.text', NULL, '$.message.html', NULL, '$.message.extracted_text', NULL, '$.message.extracted_html', NULL),
      bodies_from_message = 0
    WHERE message_rowid = OLD.id AND bodies_from_message = 1;
  END;
`;
