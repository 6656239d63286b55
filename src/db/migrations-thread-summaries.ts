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

const PAGE_COLUMNS = 'key, inbox_id, updated_at, shown, thread_id, subject, created_at, summary';
const pageRow = (row: string, key: string) => `${key}, ${row}.inbox_id, ${row}.updated_at, ${row}.shown, ${row}.thread_id, ${row}.subject, ${row}.created_at, ${row}.summary`;

/** Keys of one inbox's range in `thread_pages` after its first: 40 bits of sequence. */
const RANGE_LAST = 2 ** 40 - 1;

/**
 * The first key of the range of the inbox with this row id (an SQL expression; NULL for none):
 * the row id shifted past the sequence. Row ids past 2^23 share the last range, and a row id
 * below 0 the first; keys stay unique within a range, and a key only decides where a row lies,
 * never the order a page shows.
 */
const rangeOf = (inboxRowid: string) => `(max(0, min(coalesce(${inboxRowid}, 0), ${2 ** 23 - 1})) << 40)`;

/**
 * A thread's row in `thread_pages`, at one past the last key of its inbox's range: its inbox's
 * newest activity. A range that has used up its keys (a move uses one) goes on below the table's
 * lowest key instead: the rows lie apart from then on, but a commit never fails on a key.
 */
const addPage = (row: string) => `
    INSERT INTO thread_pages (${PAGE_COLUMNS})
      SELECT ${pageRow(row, `CASE WHEN r.last < r.low + ${RANGE_LAST} THEN r.last + 1 ELSE (SELECT min(key) FROM thread_pages) - 1 END`)}
      FROM (SELECT b.low, coalesce((SELECT p.key FROM thread_pages p WHERE p.key BETWEEN b.low AND b.low + ${RANGE_LAST} ORDER BY p.key DESC LIMIT 1), b.low) AS last
            FROM (SELECT ${rangeOf(`(SELECT rowid FROM inboxes WHERE inbox_id = ${row}.inbox_id)`)} AS low) b) r;`;

/**
 * Migration 38: a thread page reads a few table pages instead of a deep index. `threads_listing`
 * carried each thread's ~700-byte summary in its entries, and an index b-tree keeps whole entries
 * in its interior pages too: about four to a page, so at 250,000 threads it was eight levels deep
 * with 13,168 interior pages (51 MB), far more than a reader's cache, and a page of 20 threads
 * read about ten pages from the file (docs/benchmarks.md, "Twelfth round").
 *
 * `thread_pages` holds what a page shows in a table keyed by integer, whose interior pages hold
 * only keys: an inbox's rows lie in a range of keys of their own (`rangeOf`), and a thread moves
 * to the end of its inbox's range each time its last activity changes, so the threads a page
 * lists lie side by side. Nearly always: a thread whose newest message is deleted moves to the
 * end too, and a restore made with VACUUM INTO may renumber inboxes' row ids; either costs a list
 * a few more pages, never a wrong answer. The key is where a row lies, nothing more: it never
 * leaves SQLite (it passes 2^53, past what a JavaScript number holds exactly) and decides no order
 * a list shows. That comes from `thread_pages_order` (inbox_id, updated_at, thread_id), narrow and
 * shallow; the thread id breaks ties of equal last activity and is the cursor's second half.
 *
 * Triggers on `threads` keep the table: a move when `updated_at` changes, an update in place when
 * the summary or subject does. A migration that rebuilds `threads` must make them again
 * (test/unit/thread-pages.test.ts checks they exist). `threads_inbox_id` keeps what
 * `threads_listing` also served: the threads of an inbox by id (the thread-count metric, and the
 * foreign key when an inbox is deleted).
 */
export const THREAD_PAGES_MIGRATION = `
  CREATE TABLE thread_pages (
    key INTEGER PRIMARY KEY,
    inbox_id TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    shown INTEGER,
    thread_id TEXT NOT NULL,
    subject TEXT,
    created_at TEXT NOT NULL,
    summary TEXT
  ) STRICT;
  INSERT INTO thread_pages (${PAGE_COLUMNS})
    SELECT ${pageRow('t', `${rangeOf('i.rowid')} + row_number() OVER (PARTITION BY ${rangeOf('i.rowid')} ORDER BY t.updated_at, t.rowid)`)}
    FROM threads t LEFT JOIN inboxes i ON i.inbox_id = t.inbox_id
    ORDER BY 1;
  CREATE UNIQUE INDEX thread_pages_thread ON thread_pages (thread_id);
  CREATE INDEX thread_pages_order ON thread_pages (inbox_id, updated_at, thread_id);
  DROP INDEX threads_listing;
  CREATE INDEX threads_inbox_id ON threads (inbox_id, thread_id);

  CREATE TRIGGER thread_pages_insert AFTER INSERT ON threads BEGIN${addPage('NEW')}
  END;
  CREATE TRIGGER thread_pages_move AFTER UPDATE OF thread_id, inbox_id, updated_at ON threads
    WHEN NEW.updated_at IS NOT OLD.updated_at OR NEW.inbox_id IS NOT OLD.inbox_id OR NEW.thread_id IS NOT OLD.thread_id BEGIN
    DELETE FROM thread_pages WHERE thread_id = OLD.thread_id;${addPage('NEW')}
  END;
  CREATE TRIGGER thread_pages_update AFTER UPDATE OF shown, subject, created_at, summary ON threads BEGIN
    UPDATE thread_pages SET shown = NEW.shown, subject = NEW.subject, created_at = NEW.created_at, summary = NEW.summary WHERE thread_id = NEW.thread_id;
  END;
  CREATE TRIGGER thread_pages_delete AFTER DELETE ON threads BEGIN
    DELETE FROM thread_pages WHERE thread_id = OLD.thread_id;
  END;
`;
