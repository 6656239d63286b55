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

import { counterTables, DAY_GRAIN, HOUR_GRAIN, metricHoursMigration, type CounterGrain } from './migrations-metric-days.js';

/** A roll-up's key column and its value in a row of the source (`NEW` or `OLD`). */
interface RollupKey {
  column: string;
  of: (row: 'NEW' | 'OLD') => string;
}
/** A key column that is the source's column of the same name. */
const same = (column: string): RollupKey => ({ column, of: (row) => `${row}.${column}` });
/** A day key from the source's hour key (`YYYY-MM-DDTHH` to `YYYY-MM-DD`). */
const dayOf = (hourColumn: string): RollupKey => ({ column: 'day', of: (row) => `substr(${row}.${hourColumn}, 1, 10)` });

interface RollupTarget {
  table: string;
  keys: RollupKey[];
}

const upsert = (target: RollupTarget, values: string[]) => {
  const columns = [...target.keys.map((k) => k.column), ...values];
  return `INSERT INTO ${target.table} (${columns.join(', ')}) VALUES (${[...target.keys.map((k) => k.of('NEW')), ...values.map((c) => `NEW.${c}`)].join(', ')})
      ON CONFLICT DO UPDATE SET ${values.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')};`;
};
const keyed = (target: RollupTarget, row: 'NEW' | 'OLD') => target.keys.map((k) => `${k.column} = ${k.of(row)}`).join(' AND ');
const subtract = (target: RollupTarget, values: string[]) => `UPDATE ${target.table} SET ${values.map((c) => `${c} = ${c} - OLD.${c}`).join(', ')} WHERE ${keyed(target, 'OLD')};`;

/**
 * Triggers that keep each target the sums of `values` of the `source` counter table, grouped by
 * the target's keys: added to on insert, moved on update, taken out on delete. `name` prefixes the
 * four triggers' names.
 */
function rollups(name: string, source: string, targets: RollupTarget[], values: string[]): string {
  // The usual update changes the counts only (every target's key stays): one statement per target.
  const keyExpressions = [...new Map(targets.flatMap((t) => t.keys).map((k) => [k.of('NEW'), k])).values()];
  const unmoved = keyExpressions.map((k) => `${k.of('NEW')} = ${k.of('OLD')}`).join(' AND ');
  const delta = (target: RollupTarget) => `UPDATE ${target.table} SET ${values.map((c) => `${c} = ${c} + NEW.${c} - OLD.${c}`).join(', ')} WHERE ${keyed(target, 'NEW')};`;
  const each = (f: (target: RollupTarget) => string) => targets.map(f).join('\n    ');
  return `
  CREATE TRIGGER ${name}_insert AFTER INSERT ON ${source} BEGIN
    ${each((t) => upsert(t, values))}
  END;
  CREATE TRIGGER ${name}_count AFTER UPDATE ON ${source} WHEN ${unmoved} BEGIN
    ${each(delta)}
  END;
  CREATE TRIGGER ${name}_move AFTER UPDATE ON ${source} WHEN NOT (${unmoved}) BEGIN
    ${each((t) => subtract(t, values))}
    ${each((t) => upsert(t, values))}
  END;
  CREATE TRIGGER ${name}_delete AFTER DELETE ON ${source} BEGIN
    ${each((t) => subtract(t, values))}
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
  ${rollups(`${g.metric}_rollup`, g.metric, [{ table: 'metric_totals', keys: [same('inbox_id'), same('bits')] }, { table: home.metric, keys: [same(c), same('bits')] }], ['messages', 'bytes'])}
  ${rollups(`${g.thread}_rollup`, g.thread, [{ table: 'thread_totals', keys: [same('inbox_id'), same('visible_to')] }, { table: home.thread, keys: [same(c), same('visible_to')] }], ['threads'])}
`;
}

export const METRIC_ROLLUPS_MIGRATION = counterRollups(DAY_GRAIN, { metric: 'metric_home_days', thread: 'thread_home_days' });

/** Migration 34 (src/db/migrations-metric-days.ts): the counters and their roll-ups per UTC hour. */
export const METRIC_HOURS_MIGRATION = metricHoursMigration(counterRollups(HOUR_GRAIN, { metric: 'metric_home_hours', thread: 'thread_home_hours' }));

/**
 * Migration 39: per-day roll-ups of the per-hour counters (issue 37: a 90-day series of daily
 * buckets summed 2,160 hours a label set, and a key of many inboxes 60,000 rows at a million
 * messages). `metric_days` / `thread_days` per inbox and `metric_home_days` / `thread_home_days`
 * for the whole home hold each UTC day's sums of the hours, kept by triggers on the hour tables in
 * the same transaction as every counter change, and filled from them here. src/mail/metrics.ts
 * reads a window's whole days from them when its buckets are whole days, and its hours elsewhere.
 */
export const METRIC_DAY_ROLLUPS_MIGRATION = `
${counterTables(DAY_GRAIN)}
  CREATE TABLE metric_home_days (
    day TEXT NOT NULL,
    bits INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (day, bits)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE thread_home_days (
    day TEXT NOT NULL,
    visible_to INTEGER NOT NULL,
    threads INTEGER NOT NULL,
    PRIMARY KEY (day, visible_to)
  ) STRICT, WITHOUT ROWID;

  INSERT INTO metric_days (inbox_id, day, bits, messages, bytes) SELECT inbox_id, substr(hour, 1, 10), bits, sum(messages), sum(bytes) FROM metric_hours GROUP BY 1, 2, 3;
  INSERT INTO thread_days (inbox_id, day, visible_to, threads) SELECT inbox_id, substr(hour, 1, 10), visible_to, sum(threads) FROM thread_hours GROUP BY 1, 2, 3;
  INSERT INTO metric_home_days (day, bits, messages, bytes) SELECT substr(hour, 1, 10), bits, sum(messages), sum(bytes) FROM metric_home_hours GROUP BY 1, 2;
  INSERT INTO thread_home_days (day, visible_to, threads) SELECT substr(hour, 1, 10), visible_to, sum(threads) FROM thread_home_hours GROUP BY 1, 2;
  ${rollups('metric_hours_days', 'metric_hours', [{ table: 'metric_days', keys: [same('inbox_id'), dayOf('hour'), same('bits')] }], ['messages', 'bytes'])}
  ${rollups('thread_hours_days', 'thread_hours', [{ table: 'thread_days', keys: [same('inbox_id'), dayOf('hour'), same('visible_to')] }], ['threads'])}
  ${rollups('metric_home_hours_days', 'metric_home_hours', [{ table: 'metric_home_days', keys: [dayOf('hour'), same('bits')] }], ['messages', 'bytes'])}
  ${rollups('thread_home_hours_days', 'thread_home_hours', [{ table: 'thread_home_days', keys: [dayOf('hour'), same('visible_to')] }], ['threads'])}
  -- An inbox's hours are deleted with it (inboxes_metric_delete), which takes them out of its days; its rows go too.
  CREATE TRIGGER inboxes_metric_days_delete AFTER DELETE ON inboxes BEGIN
    DELETE FROM metric_days WHERE inbox_id = OLD.inbox_id;
    DELETE FROM thread_days WHERE inbox_id = OLD.inbox_id;
  END;
`;

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
