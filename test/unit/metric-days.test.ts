/**
 * The stored metric counters (per day since migration 25, per hour since migration 34,
 * src/db/migrations-metric-days.ts) on a real
 * database, filled through the inbound commit path: after new mail over several UTC days, replies,
 * hidden mail, label edits (trash, spam removed, delivery labels), deletions of messages, threads
 * and an inbox, the usage and event answers made from the counters equal the ones counted from the
 * messages (the computation before the counters) for every visibility and for windows that start
 * and end inside a day or an hour, with periods of whole hours and periods that split hours; the
 * day roll-ups (migration 39) hold each day's sums of the hours; and the migrations' backfill of a
 * home stored before them equals what the triggers kept.
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { METRIC_DAYS_MIGRATION } from '../../src/db/migrations-metric-days.js';
import { INBOX_UNREAD_MIGRATION, INBOX_UNREAD_THREADS_MIGRATION, METRIC_DAY_ROLLUPS_MIGRATION, METRIC_HOURS_MIGRATION, METRIC_ROLLUPS_MIGRATION } from '../../src/db/migrations-metric-rollups.js';
import { commitInbound } from '../../src/mail/store.js';
import { deleteMessage, updateMessageLabels } from '../../src/mail/messages.js';
import { deleteThread } from '../../src/mail/threads.js';
import { countMetricEvents, usageSeries, METRIC_EVENT_TYPES, USAGE_TYPES, type MetricsWindow } from '../../src/mail/metrics.js';
import { HIDDEN_LABELS, type HiddenLabel } from '../../src/mail/labels.js';
import { parseMime } from '../../workers/pool/parse.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const INBOXES = ['counted@example.com', 'other@example.com', 'gone@example.com'];
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ALL = { excluded: [] as HiddenLabel[] };
const VIEWS: { excluded: readonly HiddenLabel[] }[] = [ALL, { excluded: HIDDEN_LABELS }, { excluded: ['trash'] }, { excluded: ['spam', 'unauthenticated'] }];
const NOW = Date.now();
const MIDNIGHT = Math.floor(NOW / DAY) * DAY;

/** Windows: the default day, several days hourly, days daily, 90 days, ends and starts inside a day or on a midnight, 6-hour buckets, periods that split hours. */
function windows(): (MetricsWindow & { periodS: number })[] {
  const w = (startMs: number, endMs: number, periodS: number) => ({ startMs, endMs, periodS, limit: 1000, descending: false });
  return [
    w(NOW - DAY, NOW, 3600),
    w(NOW - 3 * DAY - 5 * HOUR, NOW - 7 * HOUR, 3600),
    w(NOW - 10 * DAY, NOW, 86_400),
    w(NOW - 90 * DAY, NOW, 86_400),
    w(NOW - 6 * DAY - 13 * HOUR, NOW - 2 * DAY - 3 * HOUR, 86_400),
    w(NOW - 2 * DAY, NOW - DAY, 600),
    w(NOW - 7 * DAY, NOW, 21_600),
    w(NOW - 5 * DAY - 17 * 60_000, NOW - 2 * HOUR - 7 * 60_000, 5_400),
    w(NOW - 2 * DAY - HOUR / 2, NOW - 30 * HOUR, 7_200),
    // On UTC midnights, where the day roll-ups meet the hours: whole days only, and from a midnight to now.
    w(MIDNIGHT - 9 * DAY, MIDNIGHT - 2 * DAY, 86_400),
    w(MIDNIGHT - 4 * DAY, NOW, 86_400),
    w(MIDNIGHT - 6 * DAY + 1, MIDNIGHT - DAY - 1, 86_400),
  ];
}

function agree(t: typeof import('tap').default, db: Db, allInboxIds: string[], label: string): void {
  rollupsAgree(t, db, label);
  // Every inbox (the whole home's roll-ups) and one inbox (its own counters and totals).
  for (const inboxIds of [allInboxIds, allInboxIds.slice(0, 1)]) agreeFor(t, db, inboxIds, `${label} [${inboxIds.length} inbox(es)]`);
}

/** The roll-ups (migrations 28, 34 and 39) hold exactly the sums of the per-hour counters. */
function rollupsAgree(t: typeof import('tap').default, db: Db, label: string): void {
  const nonZero = (sql: string) => db.prepare(sql).all();
  // Each roll-up against the same sums made from the per-hour counters: [table, its key, its values].
  // The source's key may be an expression (a day from an hour), named as the table's column.
  const rollups: [table: string, source: string, key: string, sourceKey: string, values: string[]][] = [
    ['metric_totals', 'metric_hours', 'inbox_id, bits', 'inbox_id, bits', ['messages', 'bytes']],
    ['metric_home_hours', 'metric_hours', 'hour, bits', 'hour, bits', ['messages', 'bytes']],
    ['thread_totals', 'thread_hours', 'inbox_id, visible_to', 'inbox_id, visible_to', ['threads']],
    ['thread_home_hours', 'thread_hours', 'hour, visible_to', 'hour, visible_to', ['threads']],
    ['metric_days', 'metric_hours', 'inbox_id, day, bits', 'inbox_id, substr(hour, 1, 10) AS day, bits', ['messages', 'bytes']],
    ['thread_days', 'thread_hours', 'inbox_id, day, visible_to', 'inbox_id, substr(hour, 1, 10) AS day, visible_to', ['threads']],
    ['metric_home_days', 'metric_hours', 'day, bits', 'substr(hour, 1, 10) AS day, bits', ['messages', 'bytes']],
    ['thread_home_days', 'thread_hours', 'day, visible_to', 'substr(hour, 1, 10) AS day, visible_to', ['threads']],
  ];
  for (const [table, source, key, sourceKey, values] of rollups) {
    const anyNonZero = (v: (c: string) => string) => values.map((c) => `${v(c)} != 0`).join(' OR ');
    const order = key.split(',').map((_, i) => i + 1).join(', ');
    t.same(
      nonZero(`SELECT ${key}, ${values.join(', ')} FROM ${table} WHERE ${anyNonZero((c) => c)} ORDER BY ${order}`),
      nonZero(`SELECT ${sourceKey}, ${values.map((c) => `sum(${c}) AS ${c}`).join(', ')} FROM ${source} GROUP BY ${order} HAVING ${anyNonZero((c) => `sum(${c})`)} ORDER BY ${order}`),
      `${label}: ${table}`,
    );
  }
  const hidden = HIDDEN_LABELS.map((l) => `'${l}'`).join(', ');
  t.same(
    nonZero('SELECT inbox_id, unread FROM inbox_unread WHERE unread != 0 ORDER BY 1'),
    nonZero(
      `SELECT m.inbox_id, count(*) AS unread FROM messages m WHERE EXISTS (SELECT 1 FROM message_labels WHERE message_rowid = m.id AND label = 'unread')
         AND NOT EXISTS (SELECT 1 FROM message_labels WHERE message_rowid = m.id AND label IN (${hidden})) GROUP BY 1 ORDER BY 1`,
    ),
    `${label}: inbox_unread`,
  );
  t.same(
    nonZero('SELECT inbox_id, threads FROM inbox_unread_threads WHERE threads != 0 ORDER BY 1'),
    nonZero(
      `SELECT m.inbox_id, count(DISTINCT m.thread_id) AS threads FROM messages m WHERE EXISTS (SELECT 1 FROM message_labels WHERE message_rowid = m.id AND label = 'unread')
         AND NOT EXISTS (SELECT 1 FROM message_labels WHERE message_rowid = m.id AND label IN (${hidden})) GROUP BY 1 ORDER BY 1`,
    ),
    `${label}: inbox_unread_threads`,
  );
}

function agreeFor(t: typeof import('tap').default, db: Db, inboxIds: string[], label: string): void {
  for (const w of windows()) {
    for (const v of VIEWS) {
      const scope = { instanceWide: true, withDomains: true };
      const what = `${label}: usage ${new Date(w.startMs).toISOString()}..${new Date(w.endMs).toISOString()} /${w.periodS}s, hidden ${v.excluded.join('+') || 'none'}`;
      t.same(usageSeries(db, inboxIds, USAGE_TYPES, w, scope, v), usageSeries(db, inboxIds, USAGE_TYPES, w, scope, v, 'scan'), what);
    }
    for (const descending of [false, true]) {
      const ew = { ...w, descending, limit: 3 };
      t.same(countMetricEvents(db, inboxIds, METRIC_EVENT_TYPES, ew, true), countMetricEvents(db, inboxIds, METRIC_EVENT_TYPES, ew, true, 'scan'), `${label}: events /${w.periodS}s${descending ? ' descending' : ''}`);
    }
  }
}

const countersOf = (db: Db) => ({
  messages: db.prepare('SELECT inbox_id, hour, bits, messages, bytes FROM metric_hours WHERE messages != 0 OR bytes != 0 ORDER BY 1, 2, 3').all(),
  threads: db.prepare('SELECT inbox_id, hour, visible_to, threads FROM thread_hours WHERE threads != 0 ORDER BY 1, 2, 3').all(),
});

t.test('counters follow every change and answer as counting the messages does', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  for (const inbox of INBOXES) insertInbox(db, inbox);
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${INBOXES[0]}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  let n = 0;
  const receive = (inboxId: string, at: number, opts: { replyTo?: number; hidden?: 'spam' | 'blocked' | 'unauthenticated' } = {}) => {
    const i = n++;
    const raw = new TextEncoder().encode(`Subject: ${i}\r\n\r\n${'x'.repeat(100 + i)}\r\n`);
    commitInbound(db, {
      inboxId,
      parsed: {
        ...template,
        messageId: `<m${i}@example.net>`,
        inReplyTo: opts.replyTo === undefined ? null : `<m${opts.replyTo}@example.net>`,
        references: opts.replyTo === undefined ? [] : [`<m${opts.replyTo}@example.net>`],
        subject: `Subject ${i}`,
        date: new Date(at).toISOString(),
      },
      raw,
      sourceKey: `k${i}`,
      receivedAt: new Date(at).toISOString(),
      ...(opts.hidden ? { hiddenLabels: [opts.hidden] } : {}),
    });
    return `<m${i}@example.net>`;
  };
  // Mail over twelve days, every few hours, into three inboxes; a thread in four of five.
  db.transaction(() => {
    for (let k = 0; k < 120; k++) {
      const at = NOW - 12 * DAY + k * 2.4 * HOUR + (k % 7) * 60_000;
      const inbox = INBOXES[k % 3]!;
      const hidden = k % 11 === 3 ? 'spam' : k % 13 === 5 ? 'blocked' : k % 17 === 7 ? 'unauthenticated' : undefined;
      receive(inbox, at, { ...(k % 5 !== 0 && k >= 3 ? { replyTo: n - 3 } : {}), ...(hidden ? { hidden } : {}) });
    }
  })();
  // The last three days densely (every 47 minutes), so every hour of the hourly windows has mail.
  db.transaction(() => {
    for (let k = 0; k < 90; k++) receive(INBOXES[k % 2]!, NOW - 3 * DAY + k * 47 * 60_000, k % 9 === 4 ? { hidden: 'spam' } : k % 4 === 1 ? { replyTo: n - 2 } : {});
  })();
  // A thread whose first message is hidden and whose reply, a day later, is not.
  const first = receive(INBOXES[0]!, NOW - 4 * DAY - HOUR, { hidden: 'spam' });
  receive(INBOXES[0]!, NOW - 3 * DAY + HOUR, { replyTo: n - 1 });
  agree(t, db, INBOXES, 'new mail');

  db.transaction(() => updateMessageLabels(db, INBOXES[0]!, ['<m3@example.net>', '<m6@example.net>', '<m9@example.net>'], ALL, { add: ['trash'], remove: ['unread'] }))();
  db.transaction(() => updateMessageLabels(db, INBOXES[0]!, [first], ALL, { add: [], remove: ['spam'] }))();
  // Unread as the inbox view counts it: read and unread again, hidden and shown again, two hidden labels at once.
  db.transaction(() => updateMessageLabels(db, INBOXES[1]!, ['<m1@example.net>', '<m4@example.net>'], ALL, { add: [], remove: ['unread'] }))();
  db.transaction(() => updateMessageLabels(db, INBOXES[1]!, ['<m4@example.net>', '<m7@example.net>'], ALL, { add: ['unread'], remove: [] }))();
  db.transaction(() => updateMessageLabels(db, INBOXES[1]!, ['<m7@example.net>', '<m13@example.net>'], ALL, { add: ['trash', 'spam'], remove: [] }))();
  db.transaction(() => updateMessageLabels(db, INBOXES[1]!, ['<m13@example.net>'], ALL, { add: [], remove: ['trash'] }))();
  db.transaction(() => updateMessageLabels(db, INBOXES[1]!, ['<m13@example.net>'], ALL, { add: [], remove: ['spam'] }))();
  // Delivery outcome labels as the transport and reports set them (any code path: the triggers count).
  db.prepare("INSERT INTO message_labels (message_rowid, label) SELECT id, 'sent' FROM messages WHERE id % 4 = 0").run();
  db.prepare("INSERT INTO message_labels (message_rowid, label) SELECT id, 'delivered' FROM messages WHERE id % 8 = 0").run();
  db.prepare("INSERT INTO message_labels (message_rowid, label) SELECT id, 'bounced' FROM messages WHERE id % 12 = 0").run();
  agree(t, db, INBOXES, 'label edits');

  const before = db.prepare('SELECT sum(messages) AS n FROM metric_hours WHERE inbox_id = ?').get(INBOXES[1]) as { n: number };
  db.transaction(() => deleteMessage(db, INBOXES[1]!, '<m1@example.net>', ALL))();
  db.transaction(() => deleteMessage(db, INBOXES[1]!, '<m4@example.net>', ALL))();
  t.equal((db.prepare('SELECT sum(messages) AS n FROM metric_hours WHERE inbox_id = ?').get(INBOXES[1]) as { n: number }).n, before.n - 2, 'deletes decrement');
  const thread = (db.prepare('SELECT thread_id FROM messages WHERE message_id = ?').get('<m10@example.net>') as { thread_id: string }).thread_id;
  db.transaction(() => deleteThread(db, INBOXES[1]!, thread, ALL))();
  agree(t, db, INBOXES, 'deletions');

  db.transaction(() => db.prepare('DELETE FROM inboxes WHERE inbox_id = ?').run(INBOXES[2]))();
  t.same(db.prepare('SELECT count(*) AS n FROM metric_hours WHERE inbox_id = ?').get(INBOXES[2]), { n: 0 }, 'a deleted inbox leaves no counters');
  t.same(db.prepare('SELECT count(*) AS n FROM thread_hours WHERE inbox_id = ?').get(INBOXES[2]), { n: 0 });
  t.same(db.prepare('SELECT (SELECT count(*) FROM metric_days WHERE inbox_id = ?) + (SELECT count(*) FROM thread_days WHERE inbox_id = ?) AS n').get(INBOXES[2], INBOXES[2]), { n: 0 }, 'nor day roll-ups');
  agree(t, db, INBOXES.slice(0, 2), 'an inbox deleted');
  t.ok((db.prepare('SELECT min(messages) AS m FROM metric_hours').get() as { m: number }).m >= 0, 'no counter below zero');
  t.ok((db.prepare('SELECT min(threads) AS m FROM thread_hours').get() as { m: number }).m >= 0);

  await t.test('the migrations fill the counters of a home stored before them with what the triggers kept', async (t) => {
    const kept = countersOf(db);
    t.ok(kept.messages.length > 10 && kept.threads.length > 10, 'there is something to compare');
    // Back to the schema before migration 25, with the mail as it is now.
    for (const { name } of db.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '%_metric_%'").all() as { name: string }[]) db.exec(`DROP TRIGGER ${name}`);
    db.exec('DROP TABLE metric_hours; DROP TABLE thread_hours; ALTER TABLE threads DROP COLUMN counted;');
    db.exec('DROP TABLE metric_totals; DROP TABLE metric_home_hours; DROP TABLE thread_totals; DROP TABLE thread_home_hours; DROP TABLE inbox_unread; DROP TABLE inbox_unread_threads;');
    db.exec('DROP TABLE metric_days; DROP TABLE thread_days; DROP TABLE metric_home_days; DROP TABLE thread_home_days;');
    for (const { name } of db.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '%unread%'").all() as { name: string }[]) db.exec(`DROP TRIGGER ${name}`);
    db.exec('ALTER TABLE threads DROP COLUMN unread');
    const at = MIGRATIONS.indexOf(METRIC_DAYS_MIGRATION);
    t.equal(at, 24, 'migration 25');
    t.equal(MIGRATIONS.indexOf(METRIC_ROLLUPS_MIGRATION), 27, 'migration 28');
    db.transaction(() => db.exec(METRIC_DAYS_MIGRATION))();
    db.transaction(() => db.exec(METRIC_ROLLUPS_MIGRATION))();
    db.transaction(() => db.exec(INBOX_UNREAD_MIGRATION))();
    t.equal(MIGRATIONS.indexOf(INBOX_UNREAD_THREADS_MIGRATION), 29, 'migration 30');
    db.transaction(() => db.exec(INBOX_UNREAD_THREADS_MIGRATION))();
    const days = db.prepare('SELECT count(*) AS n, sum(messages) AS messages FROM metric_days').get() as { n: number; messages: number };
    t.ok(days.n > 10 && days.n < kept.messages.length, 'migration 25 kept fewer rows, one per day');
    t.equal(MIGRATIONS.indexOf(METRIC_HOURS_MIGRATION), 33, 'migration 34');
    db.transaction(() => db.exec(METRIC_HOURS_MIGRATION))();
    t.same(db.prepare("SELECT name FROM sqlite_schema WHERE name LIKE '%_days%'").all(), [], 'no day table or trigger is left');
    t.equal((db.prepare('SELECT sum(messages) AS n FROM metric_hours').get() as { n: number }).n, days.messages, 'the same messages, per hour');
    t.same(countersOf(db), kept, 'the backfill equals the counters kept change by change');
    t.equal(MIGRATIONS.indexOf(METRIC_DAY_ROLLUPS_MIGRATION), 38, 'migration 39');
    db.transaction(() => db.exec(METRIC_DAY_ROLLUPS_MIGRATION))();
    rollupsAgree(t, db, 'the roll-ups backfilled');
    agree(t, db, INBOXES.slice(0, 2), 'after the backfill');
    receive(INBOXES[0]!, NOW - HOUR, { replyTo: 0 });
    agree(t, db, INBOXES.slice(0, 2), 'the triggers run after the backfill');
  });
});
