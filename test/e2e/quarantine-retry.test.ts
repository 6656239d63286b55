/**
 * Automatic retry of transient quarantine reasons (issue 17 §1): the real inbound-pull loop
 * retries a `parse_failed`/`commit_failed` buffer object once its backoff has passed, stores the
 * mail, releases the item with `inbound.released`, and leaves permanent reasons, used-up
 * schedules and items not yet due alone. The items are recorded as the pull loop would have
 * recorded an earlier failure (the objects themselves are real mail held at a real edge).
 */
import t from 'tap';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { Edge } from '../../src/edge/edge.js';
import { uuidv7 } from '../../src/db/ids.js';
import { nextAutoRetryAt, AUTO_RETRY_BACKOFF_MS } from '../../src/inbound/quarantine.js';
import { api, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';

const TOKEN = 'edge-test-token-0123456789abcdef';
let dns: LoopbackDns;
let edge: Edge;
let edgeUrl = '';
let svc: RunningSvc;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Item { quarantine_id: string; source_key?: string; reason_code: string; attempts: number | null; status: string }

t.test('the backoff schedule: transient reasons only, 1 min, 5 min, 30 min, 2 h, then the owner', async (t) => {
  const base = { source_kind: 'buffer_object' as const, status: 'quarantined' as const, first_seen: '2026-01-01T00:00:00.000Z' };
  const at = Date.parse('2026-01-01T00:00:00.000Z');
  t.same(AUTO_RETRY_BACKOFF_MS, [60_000, 300_000, 1_800_000, 7_200_000]);
  for (let attempts = 1; attempts <= 4; attempts++) {
    t.equal(nextAutoRetryAt({ ...base, reason_code: 'parse_failed', attempts, last_attempt_at: base.first_seen }), at + AUTO_RETRY_BACKOFF_MS[attempts - 1], `after attempt ${attempts}`);
  }
  t.equal(nextAutoRetryAt({ ...base, reason_code: 'commit_failed', attempts: 5, last_attempt_at: base.first_seen }), null, 'schedule used up');
  t.equal(nextAutoRetryAt({ ...base, reason_code: 'open_failed', attempts: 1, last_attempt_at: base.first_seen }), null, 'undecryptable is permanent');
  t.equal(nextAutoRetryAt({ ...base, source_kind: 'queue_message', reason_code: 'object_missing', attempts: null, last_attempt_at: null }), null, 'nothing to retry');
  t.equal(nextAutoRetryAt({ ...base, status: 'release_pending', reason_code: 'parse_failed', attempts: 1, last_attempt_at: base.first_seen }), null, 'owner retry in progress');
});

t.test('the pull loop retries due transient items and releases them', async (t) => {
  dns = await startLoopbackDns({});
  const edgeDir = path.join(tempDir('svc-edge-'), 'edge');
  edge = new Edge({ dataDir: edgeDir, smtp: { host: '127.0.0.1', port: 0 }, api: { host: '127.0.0.1', port: 0 }, apiToken: TOKEN, hostname: 'mx.test', resolver: dns.resolver });
  const bound = await edge.start();
  edgeUrl = bound.api.url;
  t.teardown(async () => {
    await svc?.stop();
    await edge.stop();
    await dns.close();
  });
  svc = await startSvc();
  t.equal((await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { edge: { url: edgeUrl, token: TOKEN } } })).status, 200);
  t.equal((await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'agent', domain: 'q.test' } })).status, 200);
  for (let i = 0; i < 150; i++) {
    const res = await fetch(`${edgeUrl}/routing`, { headers: { authorization: `Bearer ${TOKEN}` } });
    if (res.ok && ((await res.json()) as { addresses: string[] }).addresses.includes('agent@q.test')) break;
    await sleep(100);
  }
  await svc.stop();

  // Four messages held at the edge while the home is stopped, one per case, in key order.
  const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: bound.smtp.port, secure: false, ignoreTLS: true });
  const subjects = ['due-transient', 'permanent', 'used-up', 'not-yet-due'];
  for (const subject of subjects) await smtp.sendMail({ from: 'a@sender.test', to: 'agent@q.test', subject, text: 'x' });
  const listed = (await (await fetch(`${edgeUrl}/objects?limit=10`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { objects: { key: string; size: number }[] };
  t.equal(listed.objects.length, 4);
  const keys = listed.objects.map((o) => o.key);

  const longAgo = new Date(Date.now() - 10 * 60_000).toISOString();
  const now = new Date().toISOString();
  const rows: [string, number, string][] = [
    ['parse_failed', 1, longAgo],
    ['open_failed', 1, longAgo],
    ['commit_failed', 5, longAgo],
    ['parse_failed', 1, now],
  ];
  // SQL: quarantine items come only from inbound failures; no route makes one with a given attempt count and time.
  const db = openHomeDb(svc.home);
  // Same first_seen for all: the list orders them by id, so the ids are made in row order.
  // auto_retry_at as the pull loop stores it with a failure: nextAutoRetryAt, null when never.
  const retryAt = (reason_code: string, attempts: number, last_attempt_at: string) => {
    const at = nextAutoRetryAt({ source_kind: 'buffer_object', status: 'quarantined', reason_code, attempts, last_attempt_at, first_seen: longAgo });
    return at === null ? null : new Date(at).toISOString();
  };
  rows.forEach(([reason, attempts, last], i) =>
    db
      .prepare('INSERT INTO inbound_quarantine (quarantine_id, source_kind, source_key, reason_code, first_seen, size, inbox_id, attempts, last_attempt_at, auto_retry_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(uuidv7(Date.parse(longAgo) + i), 'buffer_object', keys[i], reason, longAgo, listed.objects[i].size, 'agent@q.test', attempts, last, retryAt(reason, attempts, last)),
  );
  db.close();

  svc = await startSvc({ home: svc.home, init: false });
  let page: { items: Item[]; count: number; total?: number } = { items: [], count: 0 };
  for (let i = 0; i < 200; i++) {
    page = (await api<typeof page>(svc.url, 'GET', '/v0/owner/quarantine', { token: svc.ownerToken })).body;
    if (page.items.length === 3) break;
    await sleep(100);
  }
  t.same(page.items.map((i) => [i.reason_code, i.attempts, i.status]), [
    ['open_failed', 1, 'quarantined'],
    ['commit_failed', 5, 'quarantined'],
    ['parse_failed', 1, 'quarantined'],
  ], 'only the due transient item left; the others were not tried');
  t.equal(page.total, 3, 'total counts every visible item');

  const messages = await api<{ messages: { subject: string }[] }>(svc.url, 'GET', '/v0/inboxes/agent@q.test/messages', { token: svc.ownerToken });
  t.same(messages.body.messages.map((m) => m.subject), ['due-transient'], 'the retried mail reached its inbox');

  const check = openHomeDb(svc.home);
  const types = (check.prepare("SELECT event_type FROM events WHERE event_type LIKE 'inbound.%' ORDER BY seq").all() as { event_type: string }[]).map((r) => r.event_type);
  check.close();
  t.same(types, ['inbound.released'], 'the release is announced');
  const edgeLeft = (await (await fetch(`${edgeUrl}/objects?limit=10`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { objects: { key: string }[] };
  t.same(edgeLeft.objects.map((o) => o.key), keys.slice(1), 'the released object was deleted at the edge; the rest stay');
});
