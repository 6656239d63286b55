/**
 * The quarantine's automatic retry (src/inbound/quarantine.ts, quarantine-actions.ts) on a real
 * database: `auto_retry_at` is nextAutoRetryAt stored with each item and each failed retry, and
 * migration 10 backfills the same value; dueForAutoRetry finds due items in SQL, oldest first,
 * at most `limit`; and an object already gone from a real edge counts as done when any copy of
 * it was handled — stored, or refused by a block list — and as another failed try otherwise.
 */
import t, { type Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3-multiple-ciphers';
import { openDatabase, type Db } from '../../src/db/open.js';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { uuidv7 } from '../../src/db/ids.js';
import { AUTO_RETRY_BACKOFF_MS, dueForAutoRetry, nextAutoRetryAt, quarantine, quarantineByKey, recordFailedRetry, setStatus, type QuarantineRow } from '../../src/inbound/quarantine.js';
import { retryDueQuarantine } from '../../src/inbound/quarantine-actions.js';
import { recordRejection } from '../../src/inbound/rejections.js';
import { commitKey } from '../../src/inbound/commit-keys.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { startTestEdge } from '../helpers/edge.js';

const INBOX = 'agent@example.com';
const MINUTE = 60_000;

function store(t: Test): Db {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, INBOX);
  return db;
}

/** An item recorded as the pull loop records a failure; returns its stored row. */
function failed(db: Db, reasonCode: string, sourceKind: QuarantineRow['source_kind'] = 'buffer_object'): QuarantineRow {
  const sourceKey = uuidv7();
  quarantine(db, { sourceKind, sourceKey, reasonCode, size: 100, inboxId: INBOX, attempts: sourceKind === 'buffer_object' ? 1 : null });
  return quarantineByKey(db, sourceKey)!;
}

const storedRule = (r: QuarantineRow) => {
  const at = nextAutoRetryAt({ ...r, status: 'quarantined' });
  return at === null ? null : new Date(at).toISOString();
};
const ids = (rows: QuarantineRow[]) => rows.map((r) => r.quarantine_id);

t.test('auto_retry_at is the rule, stored with the item and with each failed retry', async (t) => {
  const db = store(t);
  const transient = failed(db, 'parse_failed');
  t.equal(transient.auto_retry_at, new Date(Date.parse(transient.last_attempt_at!) + AUTO_RETRY_BACKOFF_MS[0]).toISOString(), 'a minute after the first failure');
  t.equal(failed(db, 'open_failed').auto_retry_at, null, 'a permanent reason is never retried');
  t.equal(failed(db, 'parse_limit_exceeded').auto_retry_at, null, 'a parse out of time or memory is never retried on its own');
  t.equal(failed(db, 'object_missing', 'queue_message').auto_retry_at, null, 'a queue-message item has nothing to retry');
  let row = transient;
  for (let attempts = 2; attempts <= AUTO_RETRY_BACKOFF_MS.length + 1; attempts++) {
    row = recordFailedRetry(db, row.quarantine_id, 'commit_failed');
    t.equal(row.attempts, attempts);
    t.equal(row.auto_retry_at, storedRule(row), `after attempt ${attempts}`);
  }
  t.equal(row.auto_retry_at, null, 'the schedule used up: left to the owner');
  t.equal(recordFailedRetry(db, failed(db, 'parse_failed').quarantine_id, 'open_failed').auto_retry_at, null, 'a retry that failed for good is not retried');
  t.equal(recordFailedRetry(db, failed(db, 'parse_failed').quarantine_id, 'parse_limit_exceeded').auto_retry_at, null, 'a retry that ran out of time or memory is not retried');
});

t.test('due items: transient, past their time, quarantined (not in an owner action), oldest first, at most the limit', async (t) => {
  const db = store(t);
  const a = failed(db, 'parse_failed');
  const b = failed(db, 'commit_failed');
  failed(db, 'open_failed');
  failed(db, 'object_missing', 'queue_message');
  const used = failed(db, 'parse_failed');
  for (let i = 0; i < AUTO_RETRY_BACKOFF_MS.length; i++) recordFailedRetry(db, used.quarantine_id, 'parse_failed');
  const firstDue = Date.parse(a.auto_retry_at!);
  t.same(dueForAutoRetry(db, firstDue - 1, 10), [], 'nothing before its time');
  const later = Date.now() + 10 * MINUTE;
  t.same(ids(dueForAutoRetry(db, later, 10)), ids([a, b]), 'the two transient ones');
  t.same(ids(dueForAutoRetry(db, later, 1)), ids([a]), 'the oldest within the limit');
  setStatus(db, a.quarantine_id, 'release_pending');
  t.same(ids(dueForAutoRetry(db, later, 10)), ids([b]), 'an item in an owner action waits');
  setStatus(db, a.quarantine_id, 'quarantined');
  t.same(ids(dueForAutoRetry(db, later, 10)), ids([a, b]), 'and is due again once back');
  const plan = db.prepare("EXPLAIN QUERY PLAN SELECT * FROM inbound_quarantine WHERE status = 'quarantined' AND auto_retry_at <= ? ORDER BY first_seen, quarantine_id LIMIT ?").all('x', 1) as { detail: string }[];
  t.ok(plan.some((p) => p.detail.includes('inbound_quarantine_auto_retry')), 'the query uses the index');
});

t.test('migration 10 backfills auto_retry_at with the rule for the items already there', async (t) => {
  const db = new Database(':memory:');
  t.teardown(() => db.close());
  for (const sql of MIGRATIONS.slice(0, 9)) db.exec(sql);
  const seen = '2026-01-01T00:00:00.000Z';
  const last = '2026-01-01T01:02:03.456Z';
  const insert = db.prepare('INSERT INTO inbound_quarantine (quarantine_id, source_kind, source_key, reason_code, first_seen, size, inbox_id, attempts, last_attempt_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
  const items: [string, string, number | null, string | null, string][] = [
    ['buffer_object', 'parse_failed', 1, last, 'quarantined'],
    ['buffer_object', 'commit_failed', 2, last, 'quarantined'],
    ['buffer_object', 'parse_failed', 4, last, 'release_pending'],
    ['buffer_object', 'parse_failed', 5, last, 'quarantined'],
    ['buffer_object', 'parse_failed', null, null, 'quarantined'],
    ['buffer_object', 'open_failed', 1, last, 'quarantined'],
    ['queue_message', 'object_missing', null, null, 'quarantined'],
  ];
  items.forEach(([kind, reason, attempts, lastAt, status], i) => insert.run(`q${i}`, kind, `k${i}`, reason, seen, 1, INBOX, attempts, lastAt, status));
  db.exec(MIGRATIONS[9]);
  const rows = db.prepare('SELECT * FROM inbound_quarantine ORDER BY quarantine_id').all() as QuarantineRow[];
  for (const row of rows) t.equal(row.auto_retry_at, storedRule(row), `${row.reason_code}, attempts ${row.attempts}, ${row.status}`);
  t.equal(rows.filter((r) => r.auto_retry_at !== null).length, 4, 'four are retryable');
});

t.test('an object gone from the edge: done when a copy was handled, another failed try when not', async (t) => {
  const db = store(t);
  const edge = await startTestEdge(t, { route: false });
  const published: number[] = [];
  // The retry looks for the object at every paired edge (here one).
  const deps = { db, edges: [{ url: edge.apiUrl, token: edge.token }], open: () => Promise.reject(new Error('nothing is opened here')), publish: (seq: number) => void published.push(seq) };
  const due = (row: QuarantineRow) => db.prepare('UPDATE inbound_quarantine SET auto_retry_at = ? WHERE quarantine_id = ?').run(new Date(Date.now() - MINUTE).toISOString(), row.quarantine_id);

  // Handled earlier for its one recipient, then deleted at the edge; each is due now.
  const rejected = failed(db, 'parse_failed');
  recordRejection(db, { sourceKey: commitKey(rejected.source_key, INBOX), inboxId: INBOX, sender: 'spam@example.org', reason: 'receive_block_list', receivedAt: new Date().toISOString() });
  const stored = failed(db, 'commit_failed');
  await seedMail(db, simpleMail({ subject: 'stored' }), { inboxId: INBOX, sourceKey: commitKey(stored.source_key, INBOX) });
  const lost = failed(db, 'parse_failed');
  for (const row of [rejected, stored, lost]) due(row);

  t.equal(await retryDueQuarantine(deps), 3, 'three were due');
  t.equal(quarantineByKey(db, rejected.source_key)!.status, 'released', 'refused by a block list: done');
  t.equal(quarantineByKey(db, stored.source_key)!.status, 'released', 'stored: done');
  const left = quarantineByKey(db, lost.source_key)!;
  t.match(left, { status: 'quarantined', attempts: 2, reason_code: 'parse_failed' }, 'never handled: one more failed try');
  const released = db.prepare("SELECT seq FROM events WHERE event_type = 'inbound.released' ORDER BY seq").all() as { seq: number }[];
  t.equal(released.length, 2, 'inbound.released for each');
  t.same(published.slice(-2), released.map((r) => r.seq), 'and published');
});
