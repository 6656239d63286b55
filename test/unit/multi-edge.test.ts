/**
 * Several edges per home, the parts without a network: migration 20 turns the single edge of a
 * home made before it into a list of one (its delivery-report cursor and edge report move with
 * it); the inbound dedup claim holds once per content hash and recipient within its window; the
 * domain plan has one MX per edge in list order, the A and PTR records of each, and the DNS check
 * takes every planned MX as expected.
 */
import t from 'tap';
import Database from 'better-sqlite3-multiple-ciphers';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { migrate, type Db } from '../../src/db/open.js';
import { readEdgeReport, readTransport, storeEdgeReport, writeTransport } from '../../src/mail/transport.js';
import { reportCursor } from '../../src/mail/delivery-reports.js';
import { INBOUND_DEDUP_WINDOW_MS, claimSeen, forgetExpiredSeen, seenRecently } from '../../src/inbound/dedup.js';
import { edgeHealth, recordEdgeFailure, recordEdgeSuccess } from '../../src/mail/edge-health.js';
import { domainPlan } from '../../src/domains/plan.js';

const TOKEN_A = 'edge-token-a-0123456789abcdef';
const TOKEN_B = 'edge-token-b-0123456789abcdef';

function at19(): Database.Database {
  const db = new Database(':memory:');
  for (const sql of MIGRATIONS.slice(0, 19)) db.exec(sql);
  db.pragma('user_version = 19');
  return db;
}

const identity = (hostname: string, ip: string) => ({ hostname, public_addresses: [ip], smart_host: null });

t.test('migration 20: the single edge becomes a list of one, with its cursor and report', async (t) => {
  const db = at19();
  t.teardown(() => db.close());
  const set = db.prepare('INSERT INTO settings (key, value) VALUES (?, ?)');
  set.run('transport', JSON.stringify({ edge: { url: 'https://a.example.com:8443', token: TOKEN_A }, smtp: { host: 'smtp.example.com', port: 587 } }));
  set.run('delivery_events_cursor', 'cursor-17');
  set.run('edge_report', JSON.stringify({ url: 'https://a.example.com:8443', identity: identity('mx.example.com', '203.0.113.7'), reported_at: '2026-01-01T00:00:00.000Z' }));
  migrate(db as unknown as Db);
  const stored = JSON.parse((db.prepare("SELECT value FROM settings WHERE key = 'transport'").get() as { value: string }).value);
  t.same(stored, { edges: [{ url: 'https://a.example.com:8443', token: TOKEN_A }], smtp: { host: 'smtp.example.com', port: 587 } });
  const transport = readTransport(db as unknown as Db);
  t.equal(transport.edge?.url, 'https://a.example.com:8443', 'the first edge is still the single edge');
  t.equal(reportCursor(db as unknown as Db, 'https://a.example.com:8443'), 'cursor-17', 'the delivery-report cursor is that edge\'s');
  t.equal(readEdgeReport(db as unknown as Db, 'https://a.example.com:8443')?.identity?.hostname, 'mx.example.com', 'and so is its report');
});

t.test('migration 20 on a home without a transport, or with the edge removed', async (t) => {
  const db = at19();
  t.teardown(() => db.close());
  db.prepare('INSERT INTO settings (key, value) VALUES (?, ?)').run('transport', JSON.stringify({ edge: null, smtp: null }));
  db.prepare('INSERT INTO settings (key, value) VALUES (?, ?)').run('delivery_events_cursor', 'c');
  migrate(db as unknown as Db);
  t.same(readTransport(db as unknown as Db), { edges: [], edge: null, smtp: null });
});

function fresh(): Db {
  const db = new Database(':memory:') as unknown as Db;
  migrate(db);
  return db;
}

t.test('dedup: one claim per content hash and recipient within the window', async (t) => {
  const db = fresh();
  t.teardown(() => db.close());
  const now = Date.parse('2026-06-01T00:00:00Z');
  t.equal(seenRecently(db, 'h1', 'bob@x', now), false);
  t.equal(claimSeen(db, 'h1', 'bob@x', now), true, 'the first copy is claimed');
  t.equal(claimSeen(db, 'h1', 'bob@x', now + 1_000), false, 'a second copy (the other edge) is not');
  t.equal(claimSeen(db, 'h1', 'carol@x', now + 1_000), true, 'another recipient of the same bytes is claimed');
  t.equal(seenRecently(db, 'h1', 'bob@x', now + 1_000), true);
  const later = now + INBOUND_DEDUP_WINDOW_MS + 1;
  t.equal(seenRecently(db, 'h1', 'bob@x', later), false, 'past the window it is new mail');
  t.equal(claimSeen(db, 'h1', 'bob@x', later), true, 'and is claimed anew');
  t.equal(forgetExpiredSeen(db, later + 2_000), 1, 'the sweep drops only the expired row (carol)');
});

t.test('health: failures back off and count, a success clears them', async (t) => {
  const db = fresh();
  t.teardown(() => db.close());
  const url = 'https://a.example.com:8443';
  t.match(edgeHealth(db, url), { healthy: true, consecutive_failures: 0, last_success_at: null });
  const now = Date.now();
  recordEdgeFailure(db, url, 'edge_unreachable', now);
  const second = recordEdgeFailure(db, url, 'edge_status_503', now);
  t.ok(second > 1_000, 'the backoff grows');
  t.match(edgeHealth(db, url, now), { healthy: false, consecutive_failures: 2, last_error: 'edge_status_503' });
  t.ok(edgeHealth(db, url, now).backoff_until);
  recordEdgeSuccess(db, url, now + 5);
  t.match(edgeHealth(db, url, now + 10), { healthy: true, consecutive_failures: 0, backoff_until: null, last_error: 'edge_status_503' });
});

t.test('the domain plan: one MX per edge in list order, each edge\'s A and PTR', async (t) => {
  const db = fresh();
  t.teardown(() => db.close());
  db.transaction(() =>
    writeTransport(db, {
      edges: [
        { url: 'https://a.example.com:8443', token: TOKEN_A },
        { url: 'https://b.example.com:8443', token: TOKEN_B },
      ],
    }),
  )();
  storeEdgeReport(db, 'https://a.example.com:8443', identity('mx1.example.com', '203.0.113.7'));
  storeEdgeReport(db, 'https://b.example.com:8443', identity('mx2.example.com', '198.51.100.9'));
  const plan = await domainPlan(db, 'example.com');
  const pick = (purpose: string) => plan.records.filter((r) => r.purpose === purpose).map((r) => [r.name, r.value, r.priority ?? null]);
  t.same(pick('mx'), [
    ['example.com', 'mx1.example.com', 10],
    ['example.com', 'mx2.example.com', 20],
  ]);
  t.same(pick('mx_address'), [
    ['mx1.example.com', '203.0.113.7', null],
    ['mx2.example.com', '198.51.100.9', null],
  ]);
  t.same(
    pick('ptr').map(([, value]) => value),
    ['mx1.example.com', 'mx2.example.com'],
  );
  t.match(plan.steps.join('\n'), /mx1\.example\.com and mx2\.example\.com/);
  t.same(plan.warnings, [], 'both edges reported: nothing to warn about');
});
