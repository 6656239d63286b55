/**
 * Migration 25: stored per-day counters for the usage metrics (issue 37 §1, docs/metrics.md).
 * Counting a running total from the messages themselves cost the whole stored history on every
 * query (4–9 s at 200,000 messages); these tables hold, per inbox and UTC day, what the metrics
 * count, so a query sums at most a row per day and kind instead of a row per message.
 *
 * - `metric_days`: messages and their stored raw bytes per (inbox, day of `timestamp`, label
 *   bits): the message's metric labels as bits (METRIC_LABEL_BITS), so every event type and every
 *   caller's visibility is a test on the bits.
 * - `thread_days`: threads per (inbox, day, `visible_to`): a thread counts from its first message a
 *   caller can read, which depends on which hidden labels the caller may read; `visible_to` is the
 *   set (a 16-bit mask) of those visibilities (bit i: the hidden labels of i's bits, in
 *   HIDDEN_LABELS order, are excluded) whose first readable message falls on that day.
 *   `threads.counted` keeps the thread's own entries, so a change can take them back out.
 *
 * Triggers keep both in the same transaction as every change, by whatever code path: a message
 * inserted, deleted, moved in time or thread, a metric label added or removed, a raw part stored.
 * A deleted message's counts are taken out BEFORE its row goes (its labels and parts, deleted by
 * the cascade after the row, then find no message and change nothing); an inbox's counters go with
 * it. The migration fills both tables from the rows already stored before creating the triggers.
 *
 * Migration 34 keeps the same counters per UTC hour instead (`metric_hours`, `thread_hours`, see
 * HOUR_GRAIN below): the same triggers and roll-ups, made by the same code for the other grain.
 */

/** The labels the counters follow, as bits of `metric_hours.bits` (src/mail/metrics.ts reads them). */
export const METRIC_LABEL_BITS = {
  received: 1,
  spam: 2,
  blocked: 4,
  unauthenticated: 8,
  sent: 16,
  delivered: 32,
  bounced: 64,
  complained: 128,
  rejected: 256,
  trash: 512,
} as const;

/** Bits of the hidden labels for `visible_to`, in HIDDEN_LABELS order (spam, blocked, unauthenticated, trash). */
export const HIDDEN_VISIBILITY_BITS = { spam: 1, blocked: 2, unauthenticated: 4, trash: 8 } as const;
/** Every visibility: a subset of the four hidden labels. */
const VISIBILITIES = 16;

const caseOf = (bits: Record<string, number>) =>
  `CASE label ${Object.entries(bits)
    .map(([label, bit]) => `WHEN '${label}' THEN ${bit}`)
    .join(' ')} ELSE 0 END`;
const labelList = (bits: Record<string, number>) => Object.keys(bits).map((l) => `'${l}'`).join(', ');

/** A message's metric label bits (labels are unique per message, so the sum is an OR). */
const bitsOf = (rowid: string) => `(SELECT CAST(total(${caseOf(METRIC_LABEL_BITS)}) AS INTEGER) FROM message_labels WHERE message_rowid = ${rowid})`;
/** A message's hidden labels as visibility bits. */
const hiddenOf = (rowid: string) => `(SELECT CAST(total(${caseOf(HIDDEN_VISIBILITY_BITS)}) AS INTEGER) FROM message_labels WHERE message_rowid = ${rowid})`;
/** A message's stored raw MIME bytes (lengths come from the record headers, not the bytes). */
const bytesOf = (rowid: string) => `(SELECT CAST(total(length(bytes)) AS INTEGER) FROM raw_message_parts WHERE message_rowid = ${rowid})`;
/**
 * The grain the counters are kept at: migration 25 kept UTC days (`metric_days.day`,
 * `YYYY-MM-DD`); migration 34 replaces them with UTC hours (`metric_hours.hour`, `YYYY-MM-DDTHH`),
 * so a window of hourly buckets reads counters instead of the messages of its days.
 */
export interface CounterGrain {
  metric: string;
  thread: string;
  column: string;
  /** SQL for the grain's key of a stored ISO time. */
  keyOf: (timestamp: string) => string;
  /** What the key is, for the tables' column comments. */
  key: string;
  /** Whether a thread's entries are found from its first message alone when it carries no hidden label (migration 34). */
  firstShown?: boolean;
}

export const DAY_GRAIN: CounterGrain = { metric: 'metric_days', thread: 'thread_days', column: 'day', keyOf: (timestamp) => `substr(${timestamp}, 1, 10)`, key: 'UTC day, YYYY-MM-DD,' };
export const HOUR_GRAIN: CounterGrain = { metric: 'metric_hours', thread: 'thread_hours', column: 'hour', keyOf: (timestamp) => `substr(${timestamp}, 1, 13)`, key: 'UTC hour, YYYY-MM-DDTHH,', firstShown: true };

const ADD_MESSAGES = 'ON CONFLICT DO UPDATE SET messages = messages + excluded.messages, bytes = bytes + excluded.bytes';

/** Adds the message `rowid` as it stands now (its bits and bytes) to its day. */
const addMessage = (g: CounterGrain, rowid: string) => `
    INSERT INTO ${g.metric} (inbox_id, ${g.column}, bits, messages, bytes)
      SELECT m.inbox_id, ${g.keyOf('m.timestamp')}, ${bitsOf('m.id')}, 1, ${bytesOf('m.id')} FROM messages m WHERE m.id = ${rowid} ${ADD_MESSAGES};`;

/** Takes out one message with the given bits and bytes from (inbox, timestamp's day). */
const takeMessage = (g: CounterGrain, inbox: string, timestamp: string, bits: string, bytes: string) => `
    UPDATE ${g.metric} SET messages = messages - 1, bytes = bytes - ${bytes} WHERE inbox_id = ${inbox} AND ${g.column} = ${g.keyOf(timestamp)} AND bits = ${bits};`;

/**
 * A thread's entries in `thread_days` as JSON `[[visible_to, day], ...]`: for each visibility the
 * day of its first readable message (messages_thread's order stops at the first that passes),
 * grouped by day.
 */
const countedOf = (g: CounterGrain, thread: string) => {
  const everyVisibility = `(
      SELECT json_group_array(json_array(visible_to, day)) FROM (
        SELECT day, CAST(total(1 << v) AS INTEGER) AS visible_to FROM (
          SELECT v.column1 AS v, (SELECT ${g.keyOf('m.timestamp')} FROM messages m INDEXED BY messages_thread
                                   WHERE m.thread_id = ${thread} AND (${hiddenOf('m.id')} & v.column1) = 0 ORDER BY m.timestamp LIMIT 1) AS day
            FROM (VALUES ${Array.from({ length: VISIBILITIES }, (_, i) => `(${i})`).join(', ')}) v
        ) WHERE day IS NOT NULL GROUP BY day ORDER BY day
      ))`;
  if (!g.firstShown) return everyVisibility;
  // A thread's first message (in the same order) carrying no hidden label is every visibility's
  // first readable one: one entry with all 16 bits, as the full computation would group it, for one
  // seek instead of sixteen. That is nearly every thread; a message stored gets its labels after it.
  return `(
      SELECT CASE WHEN hidden = 0 THEN json_array(json_array(${(1 << VISIBILITIES) - 1}, day)) ELSE ${everyVisibility} END FROM (
        SELECT ${g.keyOf('m.timestamp')} AS day, ${hiddenOf('m.id')} AS hidden FROM messages m INDEXED BY messages_thread
         WHERE m.thread_id = ${thread} ORDER BY m.timestamp LIMIT 1)
      UNION ALL SELECT '[]' LIMIT 1)`;
};

/** Takes a thread's entries out, remakes them from its messages, and adds them back (a no-op for a deleted thread). */
const recountThread = (g: CounterGrain, thread: string) => `
    UPDATE ${g.thread} SET threads = threads - 1
      WHERE (inbox_id, ${g.column}, visible_to) IN (SELECT t.inbox_id, json_extract(c.value, '$[1]'), json_extract(c.value, '$[0]') FROM threads t, json_each(t.counted) c WHERE t.thread_id = ${thread});
    UPDATE threads SET counted = ${countedOf(g, 'threads.thread_id')} WHERE thread_id = ${thread};
    INSERT INTO ${g.thread} (inbox_id, ${g.column}, visible_to, threads)
      SELECT t.inbox_id, json_extract(c.value, '$[1]'), json_extract(c.value, '$[0]'), 1 FROM threads t, json_each(t.counted) c WHERE t.thread_id = ${thread}
      ON CONFLICT DO UPDATE SET threads = threads + 1;`;

const HIDDEN_LIST = labelList(HIDDEN_VISIBILITY_BITS);

/** The counters' contents, computed from the stored mail (and each thread's `counted`). */
const fillCounters = (g: CounterGrain) => `
  INSERT INTO ${g.metric} (inbox_id, ${g.column}, bits, messages, bytes)
    SELECT inbox_id, k, bits, count(*), total(bytes) FROM (
      SELECT m.inbox_id AS inbox_id, ${g.keyOf('m.timestamp')} AS k, ${bitsOf('m.id')} AS bits, ${bytesOf('m.id')} AS bytes FROM messages m
    ) GROUP BY inbox_id, k, bits;
  UPDATE threads SET counted = ${countedOf(g, 'threads.thread_id')};
  INSERT INTO ${g.thread} (inbox_id, ${g.column}, visible_to, threads)
    SELECT t.inbox_id, json_extract(c.value, '$[1]'), json_extract(c.value, '$[0]'), count(*) FROM threads t, json_each(t.counted) c GROUP BY 1, 2, 3;`;

/**
 * The names of the triggers `counterTriggers` creates, on the mail's tables: migration 34 drops
 * migration 25's by name (the roll-up triggers are on the counter tables and go with them).
 */
export const COUNTER_TRIGGERS = [
  'messages_metric_insert',
  'messages_metric_delete',
  'messages_metric_deleted',
  'messages_metric_move',
  'message_labels_metric_insert',
  'message_labels_metric_delete',
  'message_labels_metric_hidden_insert',
  'message_labels_metric_hidden_delete',
  'raw_message_parts_metric_insert',
  'raw_message_parts_metric_delete',
  'threads_metric_delete',
  'inboxes_metric_delete',
] as const;

/** The triggers that keep the counters of grain `g`, in the order migration 25 created them. */
export const counterTriggers = (g: CounterGrain) => `
  CREATE TRIGGER messages_metric_insert AFTER INSERT ON messages BEGIN${addMessage(g, 'NEW.id')}${recountThread(g, 'NEW.thread_id')}
  END;
  CREATE TRIGGER messages_metric_delete BEFORE DELETE ON messages BEGIN${takeMessage(g, 'OLD.inbox_id', 'OLD.timestamp', bitsOf('OLD.id'), bytesOf('OLD.id'))}
  END;
  CREATE TRIGGER messages_metric_deleted AFTER DELETE ON messages BEGIN${recountThread(g, 'OLD.thread_id')}
  END;
  CREATE TRIGGER messages_metric_move AFTER UPDATE OF inbox_id, thread_id, timestamp ON messages BEGIN${takeMessage(g, 'OLD.inbox_id', 'OLD.timestamp', bitsOf('NEW.id'), bytesOf('NEW.id'))}${addMessage(g, 'NEW.id')}${recountThread(g, 'OLD.thread_id')}${recountThread(g, 'NEW.thread_id')}
  END;
  CREATE TRIGGER message_labels_metric_insert AFTER INSERT ON message_labels WHEN NEW.label IN (${labelList(METRIC_LABEL_BITS)}) BEGIN
    UPDATE ${g.metric} SET messages = messages - 1, bytes = bytes - ${bytesOf('NEW.message_rowid')}
      WHERE (inbox_id, ${g.column}, bits) = (SELECT m.inbox_id, ${g.keyOf('m.timestamp')}, ${bitsOf('m.id')} - ${caseOf(METRIC_LABEL_BITS).replace('CASE label', 'CASE NEW.label')} FROM messages m WHERE m.id = NEW.message_rowid);${addMessage(g, 'NEW.message_rowid')}
  END;
  CREATE TRIGGER message_labels_metric_delete AFTER DELETE ON message_labels WHEN OLD.label IN (${labelList(METRIC_LABEL_BITS)}) BEGIN
    UPDATE ${g.metric} SET messages = messages - 1, bytes = bytes - ${bytesOf('OLD.message_rowid')}
      WHERE (inbox_id, ${g.column}, bits) = (SELECT m.inbox_id, ${g.keyOf('m.timestamp')}, ${bitsOf('m.id')} + ${caseOf(METRIC_LABEL_BITS).replace('CASE label', 'CASE OLD.label')} FROM messages m WHERE m.id = OLD.message_rowid);${addMessage(g, 'OLD.message_rowid')}
  END;
  CREATE TRIGGER message_labels_metric_hidden_insert AFTER INSERT ON message_labels WHEN NEW.label IN (${HIDDEN_LIST}) BEGIN${recountThread(g, '(SELECT thread_id FROM messages WHERE id = NEW.message_rowid)')}
  END;
  CREATE TRIGGER message_labels_metric_hidden_delete AFTER DELETE ON message_labels WHEN OLD.label IN (${HIDDEN_LIST}) BEGIN${recountThread(g, '(SELECT thread_id FROM messages WHERE id = OLD.message_rowid)')}
  END;
  CREATE TRIGGER raw_message_parts_metric_insert AFTER INSERT ON raw_message_parts BEGIN
    UPDATE ${g.metric} SET bytes = bytes + length(NEW.bytes)
      WHERE (inbox_id, ${g.column}, bits) = (SELECT m.inbox_id, ${g.keyOf('m.timestamp')}, ${bitsOf('m.id')} FROM messages m WHERE m.id = NEW.message_rowid);
  END;
  CREATE TRIGGER raw_message_parts_metric_delete AFTER DELETE ON raw_message_parts BEGIN
    UPDATE ${g.metric} SET bytes = bytes - length(OLD.bytes)
      WHERE (inbox_id, ${g.column}, bits) = (SELECT m.inbox_id, ${g.keyOf('m.timestamp')}, ${bitsOf('m.id')} FROM messages m WHERE m.id = OLD.message_rowid);
  END;
  CREATE TRIGGER threads_metric_delete BEFORE DELETE ON threads BEGIN
    UPDATE ${g.thread} SET threads = threads - 1
      WHERE (inbox_id, ${g.column}, visible_to) IN (SELECT OLD.inbox_id, json_extract(c.value, '$[1]'), json_extract(c.value, '$[0]') FROM json_each(OLD.counted) c);
  END;
  CREATE TRIGGER inboxes_metric_delete AFTER DELETE ON inboxes BEGIN
    DELETE FROM ${g.metric} WHERE inbox_id = OLD.inbox_id;
    DELETE FROM ${g.thread} WHERE inbox_id = OLD.inbox_id;
  END;
`;

/** The counter tables of grain `g`. */
export const counterTables = (g: CounterGrain) => `
  CREATE TABLE ${g.metric} (
    inbox_id TEXT NOT NULL,
    ${g.column} TEXT NOT NULL,                   -- ${g.key} of messages.timestamp
    bits INTEGER NOT NULL,                -- the messages' metric labels (src/db/migrations-metric-days.ts)
    messages INTEGER NOT NULL,
    bytes INTEGER NOT NULL,               -- their stored raw MIME
    PRIMARY KEY (inbox_id, ${g.column}, bits)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE ${g.thread} (
    inbox_id TEXT NOT NULL,
    ${g.column} TEXT NOT NULL,                   -- ${g.key} of the thread's first message readable with these visibilities
    visible_to INTEGER NOT NULL,          -- set of visibilities (bit i: hidden labels i excluded)
    threads INTEGER NOT NULL,
    PRIMARY KEY (inbox_id, ${g.column}, visible_to)
  ) STRICT, WITHOUT ROWID;`;

export const METRIC_DAYS_MIGRATION = `${counterTables(DAY_GRAIN)}
  ALTER TABLE threads ADD COLUMN counted TEXT;   -- the thread's entries in thread_days, JSON [[visible_to, day], ...]
${fillCounters(DAY_GRAIN)}
${counterTriggers(DAY_GRAIN)}`;

/**
 * Migration 34: the counters kept per UTC hour instead of per day (issue 37: a day of hourly
 * buckets at a million messages read the messages of up to two days, 76 ms). `metric_hours`,
 * `thread_hours` and their roll-ups replace the day tables (migration 39 adds day roll-ups of the
 * hours back, src/db/migrations-metric-rollups.ts). Everything is refilled from the stored mail (each thread's `counted` now names hours), so the
 * upgrade reads every message once, as migration 25 did.
 */
export const metricHoursMigration = (rollups: string) => `
  ${[...COUNTER_TRIGGERS].map((name) => `DROP TRIGGER ${name};`).join('\n  ')}
  DROP TABLE metric_days;
  DROP TABLE thread_days;
  DROP TABLE metric_home_days;
  DROP TABLE thread_home_days;
  DROP TABLE metric_totals;
  DROP TABLE thread_totals;
${counterTables(HOUR_GRAIN)}
${fillCounters(HOUR_GRAIN)}
${counterTriggers(HOUR_GRAIN)}
${rollups}`;
