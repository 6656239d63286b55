/** The retention pass (src/db/retention.ts): each rule's period, what it never deletes, and the batching. */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { appendEvent } from '../../src/events/log.js';
import { pruneExpired, pruneTable, RETENTION_RULES, RetentionSchedule, RETENTION_PASS_INTERVAL_MS } from '../../src/db/retention.js';
import { tempDir } from '../helpers/svc.js';

const DAY = 24 * 3600 * 1000;
const NOW = Date.now();
const ago = (ms: number) => new Date(NOW - ms).toISOString();

function fixture(): Db {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  return db;
}
const count = (db: Db, sql: string) => (db.prepare(sql).get() as { n: number }).n;
const rule = (table: string) => RETENTION_RULES.find((r) => r.table === table)!;

// SQL: rows of a given age; no route can backdate a row.
function rejection(db: Db, id: string, age: number): void {
  db.prepare("INSERT INTO inbound_rejections (rejection_id, source_key, inbox_id, reason, received_at, created_at) VALUES (?, ?, 'a@x.test', 'blocked', ?, ?)").run(id, `k-${id}`, ago(age), ago(age));
}
function quarantineItem(db: Db, id: string, status: string, resolvedAge: number | null): void {
  db.prepare("INSERT INTO inbound_quarantine (quarantine_id, source_kind, source_key, reason_code, first_seen, status, resolved_at) VALUES (?, 'buffer_object', ?, 'open_failed', ?, ?, ?)")
    .run(id, `obj-${id}`, ago(90 * DAY), status, resolvedAge === null ? null : ago(resolvedAge));
}
function sendKey(db: Db, key: string, kind: string, finalAge: number | null): void {
  db.prepare("INSERT INTO idempotency_keys (inbox_id, key, request_hash, kind, final_at, created_at) VALUES ('a@x.test', ?, 'h', ?, ?, ?)").run(key, kind, finalAge === null ? null : ago(finalAge), ago(60 * DAY));
}

t.test('a batch deletes at most its limit; the table is pruned to the end one batch per transaction', async (t) => {
  const db = fixture();
  for (let i = 0; i < 10; i++) rejection(db, `old${i}`, 31 * DAY);
  rejection(db, 'young', 29 * DAY);
  t.equal(db.transaction(() => rule('inbound_rejections').deleteBatch(db, NOW, 3))(), 3, 'one batch: three rows');
  t.equal(count(db, 'SELECT count(*) AS n FROM inbound_rejections'), 8);
  t.equal(pruneTable(db, rule('inbound_rejections'), NOW, 3), 7, 'the rest, in batches of three');
  t.same(db.prepare('SELECT rejection_id FROM inbound_rejections').all(), [{ rejection_id: 'young' }]);
  t.equal(pruneTable(db, rule('inbound_rejections'), NOW, 3), 0, 'nothing left to do');
});

t.test('quarantine: tombstones go 30 days after resolution, items waiting for the owner never', async (t) => {
  const db = fixture();
  quarantineItem(db, 'released-old', 'released', 31 * DAY);
  quarantineItem(db, 'deleted-old', 'deleted', 31 * DAY);
  quarantineItem(db, 'released-young', 'released', 29 * DAY);
  quarantineItem(db, 'waiting', 'quarantined', null);
  quarantineItem(db, 'pending', 'delete_pending', null);
  t.equal(pruneExpired(db, NOW).inbound_quarantine, 2);
  t.same(db.prepare('SELECT quarantine_id FROM inbound_quarantine ORDER BY quarantine_id').all().map((r) => (r as { quarantine_id: string }).quarantine_id), ['pending', 'released-young', 'waiting']);
  t.equal(pruneExpired(db, NOW + 400 * DAY).inbound_quarantine, 1, 'a year on, only the tombstone went');
});

t.test('idempotency: send keys go 24 h after the send is final; others and unfinished sends stay', async (t) => {
  const db = fixture();
  sendKey(db, 'final-old', 'send', DAY + 1000);
  sendKey(db, 'final-young', 'send', DAY - 60_000);
  sendKey(db, 'not-final', 'send', null);
  sendKey(db, 'approval', 'approval', null);
  sendKey(db, 'draft', 'draft_send', 400 * DAY);
  t.equal(pruneExpired(db, NOW).idempotency_keys, 1);
  t.same(db.prepare('SELECT key FROM idempotency_keys ORDER BY key').all().map((r) => (r as { key: string }).key), ['approval', 'draft', 'final-young', 'not-final']);
});

t.test('sessions and OAuth: expired sessions, requests, codes and access tokens go; ended grants 30 days later with their tokens', async (t) => {
  const db = fixture();
  const session = db.prepare("INSERT INTO owner_sessions (session_id, token_hash, csrf_token, created_at, last_seen_at, expires_at) VALUES (?, ?, 'c', ?, ?, ?)");
  session.run('expired', 'h1', ago(20 * DAY), ago(15 * DAY), ago(DAY));
  session.run('live', 'h2', ago(DAY), ago(0), new Date(NOW + 13 * DAY).toISOString());
  db.prepare("INSERT INTO oauth_clients (client_id, client_name, redirect_uris, grant_types, response_types, created_at, granted) VALUES ('c1', 'x', '[]', '[]', '[]', ?, 1)").run(ago(80 * DAY));
  const grant = db.prepare("INSERT INTO oauth_grants (grant_id, client_id, resource, origin, audience, inbox_ids, permissions, send_policy, created_at, expires_at, revoked_at) VALUES (?, 'c1', 'r', 'o', '/v0', '[]', '[]', 'direct', ?, ?, ?)");
  grant.run('g-ended', ago(70 * DAY), ago(40 * DAY), null);
  grant.run('g-live', ago(DAY), new Date(NOW + 29 * DAY).toISOString(), null);
  const code = db.prepare("INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, expires_at, used_at) VALUES (?, ?, 'u', 'c', ?, ?)");
  code.run('unused-expired', 'g-live', ago(1000), null);
  code.run('used-recent', 'g-live', ago(60_000), ago(200_000));
  code.run('used-old', 'g-live', ago(2 * 3600_000), ago(2 * 3600_000));
  code.run('ended-grant', 'g-ended', ago(60 * DAY), ago(60 * DAY));
  const token = db.prepare("INSERT INTO oauth_tokens (token_id, grant_id, kind, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)");
  token.run('access-expired', 'g-live', 'access', 't1', ago(3600_000), ago(1000));
  token.run('refresh-live', 'g-live', 'refresh', 't2', ago(DAY), new Date(NOW + 29 * DAY).toISOString());
  token.run('refresh-ended', 'g-ended', 'refresh', 't3', ago(45 * DAY), ago(40 * DAY));
  const deleted = pruneExpired(db, NOW);
  t.equal(deleted.owner_sessions, 1);
  t.same(db.prepare('SELECT session_id FROM owner_sessions').all(), [{ session_id: 'live' }]);
  t.same(db.prepare('SELECT code_hash FROM oauth_codes').all(), [{ code_hash: 'used-recent' }], 'codes: only the used one within its hour stays');
  t.same(db.prepare('SELECT token_id FROM oauth_tokens').all(), [{ token_id: 'refresh-live' }], "the ended grant's refresh token went with it");
  t.same(db.prepare('SELECT grant_id FROM oauth_grants').all(), [{ grant_id: 'g-live' }]);
  t.equal(count(db, 'SELECT count(*) AS n FROM oauth_clients'), 1, 'a client with a live grant stays');
  pruneExpired(db, NOW + 31 * DAY + 1000);
  t.equal(count(db, 'SELECT count(*) AS n FROM oauth_grants'), 1, 'the grant ended at +29 days is kept for 30 more');
  pruneExpired(db, NOW + 60 * DAY);
  t.equal(count(db, 'SELECT count(*) AS n FROM oauth_grants'), 0);
  t.equal(count(db, 'SELECT count(*) AS n FROM oauth_clients'), 0, 'its client, now without grants, went too');
});

t.test('events: 30 days, in batches, keeping what an enabled webhook has not delivered', async (t) => {
  const db = fixture();
  const seqs: number[] = [];
  for (let i = 0; i < 5; i++) seqs.push(appendEvent(db, { eventType: 'domain.verified', inboxId: null, payloadKey: 'domain', payload: { domain: 'x.test' } }).seq);
  db.prepare('UPDATE events SET created_at = ?').run(ago(31 * DAY));
  db.prepare("INSERT INTO webhooks (webhook_id, url, secret, event_types, owner_kind, created_at, updated_at, cursor_seq, enabled) VALUES ('wh', 'https://r.test/', 's', '[]', 'owner', ?, ?, ?, 1)").run(ago(40 * DAY), ago(40 * DAY), seqs[1]);
  t.equal(pruneTable(db, rule('events'), NOW, 1), 2, 'the two the webhook delivered');
  t.same(db.prepare('SELECT seq FROM events ORDER BY seq').all().map((r) => (r as { seq: number }).seq), seqs.slice(2));
});

t.test('the schedule runs at once, then not again within the hour', async (t) => {
  const db = fixture();
  rejection(db, 'old', 31 * DAY);
  const schedule = new RetentionSchedule();
  t.equal(schedule.runIfDue(db, 0, NOW)?.inbound_rejections, 1);
  rejection(db, 'later', 31 * DAY);
  t.equal(schedule.runIfDue(db, 0, NOW + RETENTION_PASS_INTERVAL_MS - 1), null);
  t.equal(schedule.runIfDue(db, 0, NOW + RETENTION_PASS_INTERVAL_MS)?.inbound_rejections, 1);
  rejection(db, 'young', 10 * DAY);
  t.equal(schedule.runIfDue(db, 0, NOW + 3 * RETENTION_PASS_INTERVAL_MS)?.inbound_rejections, 0);
  t.equal(new RetentionSchedule().runIfDue(db, 21 * DAY, NOW)?.inbound_rejections, 1, 'with the clock ahead, the young one is old');
});

t.test('the tables that grow with mail find their expired rows through an index, never by reading the table in order', async (t) => {
  const db = fixture();
  // The statements one pass prepares, asked for their query plans (SQLite's EXPLAIN QUERY PLAN).
  const statements: string[] = [];
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    statements.push(sql);
    return prepare(sql);
  }) as typeof db.prepare;
  try {
    pruneExpired(db, NOW);
  } finally {
    db.prepare = prepare;
  }
  const plans = new Map(
    statements
      .filter((sql) => sql.startsWith('DELETE FROM '))
      .map((sql) => [sql.split(' ')[2]!, (prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array<string>((sql.match(/\?/g) ?? []).length).fill('x')) as { detail: string }[]).map((r) => r.detail)]),
  );
  const byIndex: Record<string, RegExp> = {
    events: /USING COVERING INDEX events_created \(created_at<\?\)/,
    idempotency_keys: /USING COVERING INDEX idempotency_final/,
    inbound_quarantine: /USING INDEX inbound_quarantine_resolved/,
    inbound_rejections: /USING INDEX inbound_rejections_created/,
  };
  for (const [table, index] of Object.entries(byIndex)) {
    const plan = plans.get(table) ?? [];
    t.ok(plan.some((step) => index.test(step)), `${table}: ${plan.join(' | ')}`);
    t.notOk(plan.some((step) => /^SCAN |INTEGER PRIMARY KEY \(rowid<\?\)/.test(step)), `${table}: no walk over the table's rows`);
  }
});
