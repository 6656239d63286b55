/**
 * Migration 12: stored thread summaries (src/mail/thread-summaries.ts, issue 19). A thread list
 * built each summary from the thread's messages, their labels and attachments on every request;
 * `threads.summary` keeps the summary as the default view sees it (hidden mail left out), made in
 * the same transaction as the change. Triggers clear it and note the thread in `dirty_threads`
 * whenever a message, label or attachment of the thread changes, by whatever code path; the
 * transaction remakes the summaries of its dirty threads before it commits (src/db/open.ts
 * `onCommit`). A thread whose summary is NULL (stored before this migration, or changed on a
 * connection that had no hook) is summarized from its messages when read, as before. `shown`
 * says, with the summary, whether the default view lists the thread at all.
 */
const dirty = (thread: string) => `
    UPDATE threads SET summary = NULL, shown = NULL WHERE thread_id = ${thread} AND summary IS NOT NULL;
    INSERT OR IGNORE INTO dirty_threads (thread_id) SELECT t FROM (SELECT ${thread} AS t) WHERE t IS NOT NULL;`;
const ofMessage = (rowid: string) => `(SELECT thread_id FROM messages WHERE id = ${rowid})`;

/** One trigger per table and change: the threads it marks, from the old and/or new row. */
function marks(table: string, columns: string, thread: (row: 'OLD' | 'NEW') => string): string {
  const changes: ['insert' | 'delete' | 'update', ('OLD' | 'NEW')[]][] = [
    ['insert', ['NEW']],
    ['delete', ['OLD']],
    ['update', ['OLD', 'NEW']],
  ];
  return changes
    .map(([change, rows]) => {
      const event = change === 'update' && columns ? `UPDATE OF ${columns}` : change.toUpperCase();
      return `CREATE TRIGGER ${table}_summary_${change} AFTER ${event} ON ${table} BEGIN${rows.map((row) => dirty(thread(row))).join('')}
  END;`;
    })
    .join('\n  ');
}

export const THREAD_SUMMARIES_MIGRATION = `
  ALTER TABLE threads ADD COLUMN summary TEXT;
  ALTER TABLE threads ADD COLUMN shown INTEGER;      -- 1 when the default view shows the thread (a message not hidden), 0 when not; NULL with summary
  CREATE TABLE dirty_threads (thread_id TEXT PRIMARY KEY) STRICT, WITHOUT ROWID;

  ${marks('messages', 'thread_id, message_id, from_address, to_addresses, cc_addresses, bcc_addresses, subject, preview, size, timestamp, direction', (row) => `${row}.thread_id`)}
  ${marks('message_labels', '', (row) => ofMessage(`${row}.message_rowid`))}
  ${marks('attachments', '', (row) => ofMessage(`${row}.message_rowid`))}
`;

/**
 * Migration 35: a thread page is read from one index. `threads_inbox` (inbox_id, updated_at) led
 * each listed thread to its table row, one page read per thread at scale (an inbox's threads lie
 * among every other inbox's); `threads_listing` holds what a page shows, its stored summary
 * included, so a page of 20 reads the few index pages it spans (22.3 → 8.0 pages at 200,000
 * messages, docs/benchmarks.md). It replaces `threads_inbox`: its first column serves every lookup
 * by inbox that one did, and SQLite would otherwise keep choosing the narrower one.
 *
 * A wait over every inbox looked a Message-ID up in each inbox's (inbox_id, message_id) key and
 * walked each inbox's (inbox_id, timestamp) index, one seek per inbox (49 and 13 pages read per
 * request in a home of 50 inboxes, docs/benchmarks.md); `messages_message_id` and `messages_time`
 * answer both in one seek (src/mail/waits.ts). A received message's timestamp is its arrival, so
 * messages_time grows at its end.
 */
export const THREAD_LISTING_MIGRATION = `
  DROP INDEX threads_inbox;
  CREATE INDEX threads_listing ON threads (inbox_id, updated_at, shown, thread_id, subject, created_at, summary);
  CREATE INDEX messages_message_id ON messages (message_id, timestamp);
  CREATE INDEX messages_time ON messages (timestamp);
`;
