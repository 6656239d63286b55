/**
 * Migration 28: roll-ups of the per-day metric counters (migration 25, docs/metrics.md), so a
 * usage or event query reads rows for its window only, whatever the stored history:
 *
 * - `metric_totals` / `thread_totals`: each inbox's all-time sums per label bits / visibility set.
 *   The total before a window is the all-time total less the days from the window's first day on,
 *   instead of a sum over every day before it.
 * - `metric_home_days` / `thread_home_days`: the whole home's sums per day, for a caller whose
 *   inboxes are the whole home (the owner, an unrestricted key): one row per day and bits instead
 *   of one per inbox, day and bits.
 *
 * Triggers on `metric_days` and `thread_days` keep them in the same transaction as every counter
 * change, whatever changed the counter (an insert, an upsert's update, an inbox's counters deleted).
 * The migration fills them from the counters already stored before creating the triggers.
 */

import { DAY_GRAIN, HOUR_GRAIN, metricHoursMigration, type CounterGrain } from './migrations-metric-days.js';

const upsert = (table: string, keys: string[], values: Record<string, string>) => {
  const columns = [...keys, ...Object.keys(values)];
  return `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${[...keys.map((k) => `NEW.${k}`), ...Object.values(values)].join(', ')})
      ON CONFLICT DO UPDATE SET ${Object.keys(values)
        .map((c) => `${c} = ${c} + excluded.${c}`)
        .join(', ')};`;
};
const subtract = (table: string, keys: string[], values: string[]) =>
  `UPDATE ${table} SET ${values.map((c) => `${c} = ${c} - OLD.${c}`).join(', ')} WHERE ${keys.map((k) => `${k} = OLD.${k}`).join(' AND ')};`;

/** The roll-ups of one counter table: added to on insert, moved on update, taken out on delete. */
function rollups(source: string, keys: { inbox: string[]; home: string[] }, values: string[], tables: { totals: string; home: string }): string {
  const add = (table: string, k: string[]) => upsert(table, k, Object.fromEntries(values.map((c) => [c, `NEW.${c}`])));
  // The usual update changes the counts only (the key stays): one statement per roll-up.
  const allKeys = [...new Set([...keys.inbox, ...keys.home])];
  const same = allKeys.map((k) => `NEW.${k} = OLD.${k}`).join(' AND ');
  const delta = (table: string, k: string[]) =>
    `UPDATE ${table} SET ${values.map((c) => `${c} = ${c} + NEW.${c} - OLD.${c}`).join(', ')} WHERE ${k.map((key) => `${key} = NEW.${key}`).join(' AND ')};`;
  return `
  CREATE TRIGGER ${source}_rollup_insert AFTER INSERT ON ${source} BEGIN
    ${add(tables.totals, keys.inbox)}
    ${add(tables.home, keys.home)}
  END;
  CREATE TRIGGER ${source}_rollup_count AFTER UPDATE ON ${source} WHEN ${same} BEGIN
    ${delta(tables.totals, keys.inbox)}
    ${delta(tables.home, keys.home)}
  END;
  CREATE TRIGGER ${source}_rollup_move AFTER UPDATE ON ${source} WHEN NOT (${same}) BEGIN
    ${subtract(tables.totals, keys.inbox, values)}
    ${subtract(tables.home, keys.home, values)}
    ${add(tables.totals, keys.inbox)}
    ${add(tables.home, keys.home)}
  END;
  CREATE TRIGGER ${source}_rollup_delete AFTER DELETE ON ${source} BEGIN
    ${subtract(tables.totals, keys.inbox, values)}
    ${subtract(tables.home, keys.home, values)}
  END;`;
}

/** The roll-up tables of the counters of grain `g`, filled from them, and the triggers that keep them. */
export function counterRollups(g: CounterGrain, home: { metric: string; thread: string }): string {
  const c = g.column;
  return `
  CREATE TABLE metric_totals (
    inbox_id TEXT NOT NULL,
    bits INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (inbox_id, bits)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE ${home.metric} (
    ${c} TEXT NOT NULL,
    bits INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (${c}, bits)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE thread_totals (
    inbox_id TEXT NOT NULL,
    visible_to INTEGER NOT NULL,
    threads INTEGER NOT NULL,
    PRIMARY KEY (inbox_id, visible_to)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE ${home.thread} (
    ${c} TEXT NOT NULL,
    visible_to INTEGER NOT NULL,
    threads INTEGER NOT NULL,
    PRIMARY KEY (${c}, visible_to)
  ) STRICT, WITHOUT ROWID;

  INSERT INTO metric_totals (inbox_id, bits, messages, bytes) SELECT inbox_id, bits, sum(messages), sum(bytes) FROM ${g.metric} GROUP BY inbox_id, bits;
  INSERT INTO ${home.metric} (${c}, bits, messages, bytes) SELECT ${c}, bits, sum(messages), sum(bytes) FROM ${g.metric} GROUP BY ${c}, bits;
  INSERT INTO thread_totals (inbox_id, visible_to, threads) SELECT inbox_id, visible_to, sum(threads) FROM ${g.thread} GROUP BY inbox_id, visible_to;
  INSERT INTO ${home.thread} (${c}, visible_to, threads) SELECT ${c}, visible_to, sum(threads) FROM ${g.thread} GROUP BY ${c}, visible_to;
  ${rollups(g.metric, { inbox: ['inbox_id', 'bits'], home: [c, 'bits'] }, ['messages', 'bytes'], { totals: 'metric_totals', home: home.metric })}
  ${rollups(g.thread, { inbox: ['inbox_id', 'visible_to'], home: [c, 'visible_to'] }, ['threads'], { totals: 'thread_totals', home: home.thread })}
`;
}

export const METRIC_ROLLUPS_MIGRATION = counterRollups(DAY_GRAIN, { metric: 'metric_home_days', thread: 'thread_home_days' });

/** Migration 34 (src/db/migrations-metric-days.ts): the counters and their roll-ups per UTC hour. */
export const METRIC_HOURS_MIGRATION = metricHoursMigration(counterRollups(HOUR_GRAIN, { metric: 'metric_home_hours', thread: 'thread_home_hours' }));

/** Labels that hide a message from the inbox view (src/mail/labels.ts HIDDEN_LABELS). */
const HIDDEN = "'spam', 'blocked', 'unauthenticated', 'trash'";
const hiddenCount = (rowid: string) => `(SELECT count(*) FROM message_labels WHERE message_rowid = ${rowid} AND label IN (${HIDDEN}))`;
const isUnread = (rowid: string) => `EXISTS (SELECT 1 FROM message_labels WHERE message_rowid = ${rowid} AND label = 'unread')`;
const bump = (rowid: string, by: number) => `
    INSERT INTO inbox_unread (inbox_id, unread) SELECT inbox_id, ${by} FROM messages WHERE id = ${rowid}
      ON CONFLICT DO UPDATE SET unread = unread + excluded.unread;`;

/**
 * Migration 29: each inbox's unread mail as the inbox view shows it (labelled `unread`, no hidden label), kept
 * by triggers so the live counts read a row per inbox instead of walking every unread message.
 * A message's row is deleted before its labels (the cascade), so the label triggers then find no
 * message and change nothing; the message's own delete trigger takes it out.
 */
export const INBOX_UNREAD_MIGRATION = `
  CREATE TABLE inbox_unread (
    inbox_id TEXT PRIMARY KEY,
    unread INTEGER NOT NULL
  ) STRICT, WITHOUT ROWID;
  INSERT INTO inbox_unread (inbox_id, unread)
    SELECT m.inbox_id, count(*) FROM message_labels l JOIN messages m ON m.id = l.message_rowid
     WHERE l.label = 'unread' AND ${hiddenCount('m.id')} = 0 GROUP BY m.inbox_id;

  CREATE TRIGGER message_labels_unread_insert AFTER INSERT ON message_labels WHEN NEW.label = 'unread' BEGIN
    INSERT INTO inbox_unread (inbox_id, unread) SELECT inbox_id, 1 FROM messages WHERE id = NEW.message_rowid AND ${hiddenCount('NEW.message_rowid')} = 0
      ON CONFLICT DO UPDATE SET unread = unread + 1;
  END;
  CREATE TRIGGER message_labels_unread_delete AFTER DELETE ON message_labels WHEN OLD.label = 'unread' BEGIN
    UPDATE inbox_unread SET unread = unread - 1
      WHERE inbox_id = (SELECT inbox_id FROM messages WHERE id = OLD.message_rowid AND ${hiddenCount('OLD.message_rowid')} = 0);
  END;
  CREATE TRIGGER message_labels_unread_hide AFTER INSERT ON message_labels WHEN NEW.label IN (${HIDDEN}) BEGIN
    UPDATE inbox_unread SET unread = unread - 1
      WHERE inbox_id = (SELECT inbox_id FROM messages WHERE id = NEW.message_rowid AND ${isUnread('NEW.message_rowid')} AND ${hiddenCount('NEW.message_rowid')} = 1);
  END;
  CREATE TRIGGER message_labels_unread_show AFTER DELETE ON message_labels WHEN OLD.label IN (${HIDDEN}) BEGIN
    INSERT INTO inbox_unread (inbox_id, unread) SELECT inbox_id, 1 FROM messages
      WHERE id = OLD.message_rowid AND ${isUnread('OLD.message_rowid')} AND ${hiddenCount('OLD.message_rowid')} = 0
      ON CONFLICT DO UPDATE SET unread = unread + 1;
  END;
  CREATE TRIGGER messages_unread_delete BEFORE DELETE ON messages WHEN ${isUnread('OLD.id')} AND ${hiddenCount('OLD.id')} = 0 BEGIN
    UPDATE inbox_unread SET unread = unread - 1 WHERE inbox_id = OLD.inbox_id;
  END;
  CREATE TRIGGER messages_unread_move AFTER UPDATE OF inbox_id ON messages WHEN NEW.inbox_id != OLD.inbox_id AND ${isUnread('NEW.id')} AND ${hiddenCount('NEW.id')} = 0 BEGIN
    UPDATE inbox_unread SET unread = unread - 1 WHERE inbox_id = OLD.inbox_id;${bump('NEW.id', 1)}
  END;
  CREATE TRIGGER inboxes_unread_delete AFTER DELETE ON inboxes BEGIN
    DELETE FROM inbox_unread WHERE inbox_id = OLD.inbox_id;
  END;
`;

/**
 * Migration 30: each inbox's threads with unread mail, as the owner app's mail client shows them
 * beside each inbox. `threads.unread` is 1 when a visible message of the thread is labelled
 * `unread`; the thread summary's writer (src/mail/threads.ts `writeSummary`) sets it whenever it
 * remakes the summary, which every change to the thread's messages or labels makes it do before
 * the transaction commits. Triggers on `threads` keep the count per inbox, so the count reads a
 * row per inbox instead of walking every unread message on each page load of the mail client.
 */
export const INBOX_UNREAD_THREADS_MIGRATION = `
  ALTER TABLE threads ADD COLUMN unread INTEGER NOT NULL DEFAULT 0;
  UPDATE threads SET unread = 1 WHERE thread_id IN (
    SELECT m.thread_id FROM message_labels l JOIN messages m ON m.id = l.message_rowid WHERE l.label = 'unread' AND ${hiddenCount('m.id')} = 0);
  CREATE TABLE inbox_unread_threads (
    inbox_id TEXT PRIMARY KEY,
    threads INTEGER NOT NULL
  ) STRICT, WITHOUT ROWID;
  INSERT INTO inbox_unread_threads (inbox_id, threads) SELECT inbox_id, count(*) FROM threads WHERE unread = 1 GROUP BY inbox_id;

  CREATE TRIGGER threads_unread_change AFTER UPDATE OF unread, inbox_id ON threads WHEN NEW.unread != OLD.unread OR NEW.inbox_id != OLD.inbox_id BEGIN
    UPDATE inbox_unread_threads SET threads = threads - 1 WHERE OLD.unread = 1 AND inbox_id = OLD.inbox_id;
    INSERT INTO inbox_unread_threads (inbox_id, threads) SELECT NEW.inbox_id, 1 WHERE NEW.unread = 1 ON CONFLICT DO UPDATE SET threads = threads + 1;
  END;
  CREATE TRIGGER threads_unread_delete AFTER DELETE ON threads WHEN OLD.unread = 1 BEGIN
    UPDATE inbox_unread_threads SET threads = threads - 1 WHERE inbox_id = OLD.inbox_id;
  END;
  CREATE TRIGGER inboxes_unread_threads_delete AFTER DELETE ON inboxes BEGIN
    DELETE FROM inbox_unread_threads WHERE inbox_id = OLD.inbox_id;
  END;
`;
