/**
 * kill -9 of the home at a seeded random moment during owner draft approvals (issue 10 item 2),
 * then a restart. The edge runs in this test process (as it would on a VPS, it survives the
 * home), relaying to a real SMTP sink through loopback DNS (the rig of reliability-crash.test.ts).
 * After the restart, through REST: each draft ends sent exactly once, or is still approvable and sends once when approved again
 * (same idempotency key) — never twice.
 * Replay a failing run with SVC_FUZZ_SEED=<seed>; the kill moments come from it.
 */
import t, { type Test as Tap } from 'tap';
import path from 'node:path';
import { Edge } from '../../src/edge/edge.js';
import { api, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { insertApiKey, openHomeDb } from '../helpers/db.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { Rng, fuzzSeed } from '../helpers/fuzz.js';

const SEED = fuzzSeed(9);
const TOKEN = 'edge-test-token-reliability-0123456789';
const DOMAIN = 'crash.test';
const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let dns: LoopbackDns;
let sink: Sink;
let edge: Edge;
let edgeDir: string;
let edgeUrl = '';
const rng = new Rng(SEED);

t.before(async () => {
  sink = await startSink();
  dns = await startLoopbackDns({ 'remote.test': { MX: [{ exchange: 'mx.remote.test', priority: 10 }] }, 'mx.remote.test': { A: ['127.0.0.1'] } });
  edgeDir = path.join(tempDir('svc-edge-'), 'edge');
  edge = new Edge({ dataDir: edgeDir, smtp: { host: '127.0.0.1', port: 0 }, api: { host: '127.0.0.1', port: 0 }, apiToken: TOKEN, hostname: 'mx.crash.test', resolver: dns.resolver, deliveryPort: sink.port });
  const bound = await edge.start();
  edgeUrl = bound.api.url;
});
t.teardown(async () => {
  await edge?.stop();
  await sink?.close();
  await dns?.close();
});

/** A paired home with one inbox; returns the service and the inbox id. */
async function pairedHome(t: Tap, username: string): Promise<{ svc: RunningSvc; inbox: string }> {
  const svc = await startSvc();
  t.teardown(() => svc.stop('SIGKILL')); // a failed assertion must not leave it running
  const paired = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { edge: { url: edgeUrl, token: TOKEN } } });
  if (paired.status !== 200) throw new Error(paired.text);
  const created = await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username, domain: DOMAIN } });
  if (created.status !== 200) throw new Error(created.text);
  return { svc, inbox: created.body.inbox_id };
}

/** SIGKILL after `ms`, like the power going out; resolves once the process is gone. */
async function killAfter(svc: RunningSvc, ms: number): Promise<void> {
  await sleep(ms);
  svc.proc.kill('SIGKILL');
  await svc.exited;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(150);
  }
}

/** Copies at the sink per Message-ID (with brackets, as the API names messages). */
function sinkCopies(): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of sink.messages) {
    const id = /^Message-ID:\s*(<[^>]+>)/im.exec(m.raw.toString())?.[1];
    if (id) out.set(id, (out.get(id) ?? 0) + 1);
  }
  return out;
}

t.test('kill -9 during draft approvals: each draft ends sent exactly once or stays approvable, never sent twice', async (t) => {
  const { svc, inbox } = await pairedHome(t, 'approver');
  const db = openHomeDb(svc.home);
  const agent = insertApiKey(db, { permissions: ['message_send', 'message_read', 'draft_read'], inboxIds: [inbox], sendPolicy: 'approval' }).secret;
  db.close();
  const drafts: string[] = [];
  for (let i = 0; i < 8; i++) {
    const res = await api<{ draft_id: string; code: string }>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token: agent, body: { to: `approve${i}@remote.test`, subject: `approval ${i}`, text: 'x' } });
    t.equal(res.body.code, 'approval_required');
    drafts.push(res.body.draft_id);
  }
  const killAt = rng.int(0, 400);
  t.comment(`seed ${SEED}: kill after ${killAt} ms of approvals`);
  const approvals = Promise.all(
    drafts.map((id) =>
      api(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/drafts/${id}/approve`, { token: svc.ownerToken, headers: { 'idempotency-key': `approve-${id}` } }).then(
        (r) => r.status,
        () => 0,
      ),
    ),
  );
  await killAfter(svc, killAt);
  const statuses = await approvals;
  t.comment(`approvals answered before the kill: ${statuses.filter((s) => s === 200).length} of ${drafts.length}`);
  const second = await startSvc({ home: svc.home, init: false });
  t.teardown(() => second.stop());
  let reapproved = 0;
  for (const id of drafts) {
    const draft = (await api<{ send_status: string; message_id: string | null }>(second.url, 'GET', `/v0/inboxes/${enc(inbox)}/drafts/${id}`, { token: second.ownerToken })).body;
    t.ok(['pending_approval', 'scheduled', 'sending', 'sent'].includes(draft.send_status), `${id}: ${draft.send_status} after the restart`);
    // Approving again (the owner retrying, same key) must never send a second copy.
    const again = await api<{ message_id: string }>(second.url, 'POST', `/v0/inboxes/${enc(inbox)}/drafts/${id}/approve`, { token: second.ownerToken, headers: { 'idempotency-key': `approve-${id}` } });
    t.equal(again.status, 200, `${id}: approve after the restart → ${again.text.slice(0, 120)}`);
    if (draft.message_id) t.equal(again.body.message_id, draft.message_id, 'the same message, not a new one');
    if (draft.send_status === 'pending_approval') reapproved++;
  }
  t.comment(`${reapproved} drafts were still waiting for approval after the restart`);
  const messageIds = await until('every draft sent', async () => {
    const all = await Promise.all(drafts.map(async (id) => (await api<{ send_status: string; message_id: string }>(second.url, 'GET', `/v0/inboxes/${enc(inbox)}/drafts/${id}`, { token: second.ownerToken })).body));
    return all.every((d) => d.send_status === 'sent') ? all.map((d) => d.message_id) : undefined;
  });
  await until('every approved message at the sink', async () => (messageIds.every((id) => sinkCopies().has(id)) ? true : undefined), 20_000);
  await sleep(1_000);
  const copies = sinkCopies();
  t.same(messageIds.map((id) => copies.get(id)), messageIds.map(() => 1), 'each approved draft reached the sink exactly once');
});
