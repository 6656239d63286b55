/**
 * Quarantine and reconcile rules (spec §2.11, §3.2, §4.13, §6.2 inbound events): owner only,
 * not_found, not_supported for queue-message items, action_required without the buffer or while
 * a deletion is pending, service_unavailable when the edge is down, idempotent delete.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import nodemailer from 'nodemailer';
import { Edge } from '../../src/edge/edge.js';
import { uuidv7 } from '../../src/db/ids.js';
import { api, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { createApiKey } from '../helpers/seed.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';

const TOKEN = 'edge-test-token-0123456789abcdef';
let dns: LoopbackDns;
let edge: Edge;
let edgeDir: string;
let edgeUrl = '';
let edgePort = 0;
let smtpPort = 0;
let svc: RunningSvc;

async function startEdge() {
  edge = new Edge({ dataDir: edgeDir, smtp: { host: '127.0.0.1', port: smtpPort }, api: { host: '127.0.0.1', port: edgePort }, apiToken: TOKEN, hostname: 'mx.test', resolver: dns.resolver });
  const bound = await edge.start();
  edgeUrl = bound.api.url;
  edgePort = bound.api.port;
  smtpPort = bound.smtp.port;
}

/**
 * Mail the edge accepted while the home was stopped, whose sealed object file is then lost on
 * disk: the edge still lists it and holds its queue entry, but cannot produce the object.
 */
async function orphanQueueEntry(): Promise<void> {
  // The home must have pushed its routing before it stops, or the edge refuses the address.
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    const res = await fetch(`${edgeUrl}/routing`, { headers: { authorization: `Bearer ${TOKEN}` } });
    if (res.ok && ((await res.json()) as { addresses: string[] }).addresses.includes('agent@q.test')) break;
  }
  await svc.stop();
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true }).sendMail({ from: 'a@sender.test', to: 'agent@q.test', subject: 'lost', text: 'x' });
      break;
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  for (const f of fs.readdirSync(path.join(edgeDir, 'objects'))) fs.rmSync(path.join(edgeDir, 'objects', f));
  svc = await startSvc({ home: svc.home, init: false });
}

async function items(s: RunningSvc) {
  return (await api<{ items: { quarantine_id: string; source_kind: string; reason_code: string; status: string; size: number; inbox_id: string }[] }>(s.url, 'GET', '/v0/owner/quarantine', { token: s.ownerToken })).body.items;
}

t.before(async () => {
  dns = await startLoopbackDns({});
  edgeDir = path.join(tempDir('svc-edge-'), 'edge');
  await startEdge();
  svc = await startSvc();
  const paired = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { edge: { url: edgeUrl, token: TOKEN } } });
  if (paired.status !== 200) throw new Error(paired.text);
  const inbox = await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'agent', domain: 'q.test' } });
  if (inbox.status !== 200) throw new Error(inbox.text);
  await orphanQueueEntry();
});
t.teardown(async () => {
  await svc.stop();
  await edge.stop();
  await dns.close();
});

t.test('a queue entry whose object is lost becomes a queue_message item', async (t) => {
  let list: Awaited<ReturnType<typeof items>> = [];
  const deadline = Date.now() + 15_000;
  while (!list.length && Date.now() < deadline) {
    list = await items(svc);
    await new Promise((r) => setTimeout(r, 150));
  }
  t.match(list[0], { source_kind: 'queue_message', reason_code: 'object_missing', status: 'quarantined', size: Number, inbox_id: 'agent@q.test', attempts: null });
  t.notMatch(JSON.stringify(list), /raw|subject|body/, 'listing carries metadata only');
});

t.test('agents get 403 on every quarantine route', async (t) => {
  const key = await createApiKey(svc, { permissions: ['inbox_read', 'message_read', 'message_update', 'message_delete'] });
  const [item] = await items(svc);
  for (const [method, url] of [
    ['GET', '/v0/owner/quarantine'],
    ['POST', `/v0/owner/quarantine/${item.quarantine_id}/retry`],
    ['DELETE', `/v0/owner/quarantine/${item.quarantine_id}`],
  ] as const) {
    const res = await api(svc.url, method, url, { token: key.secret, body: method === 'POST' ? {} : undefined });
    t.equal(res.status, 403, `${method} ${url}`);
  }
});

t.test('an unknown id is not_found', async (t) => {
  for (const [method, url] of [
    ['POST', `/v0/owner/quarantine/${uuidv7()}/retry`],
    ['DELETE', `/v0/owner/quarantine/${uuidv7()}`],
  ] as const) {
    const res = await api(svc.url, method, url, { token: svc.ownerToken, body: method === 'POST' ? {} : undefined });
    t.equal(res.status, 404);
    t.equal((res.body as { code: string }).code, 'not_found');
  }
});

t.test('retrying a queue-message item is not_supported', async (t) => {
  const [item] = await items(svc);
  const res = await api(svc.url, 'POST', `/v0/owner/quarantine/${item.quarantine_id}/retry`, { token: svc.ownerToken, body: {} });
  t.equal(res.status, 400);
  t.match(res.body, { code: 'not_supported', fix: String });
});

t.test('delete removes the edge entry, emits inbound.deleted, and repeating answers 200', async (t) => {
  const ws = new WebSocket(svc.url.replace('http', 'ws') + '/v0/ws', { headers: { authorization: `Bearer ${svc.ownerToken}` } });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const frames: { event_type: string; quarantine?: { quarantine_id: string; reason_code: string } }[] = [];
  ws.on('message', (d) => frames.push(JSON.parse(String(d))));
  ws.send(JSON.stringify({ type: 'subscribe', event_types: ['inbound.deleted'] }));
  await new Promise((r) => setTimeout(r, 200));
  const [item] = await items(svc);
  const entries = () => fs.readdirSync(path.join(edgeDir, 'queue')).filter((f) => f.endsWith('.json'));
  t.equal(entries().length, 1);
  const del = await api(svc.url, 'DELETE', `/v0/owner/quarantine/${item.quarantine_id}`, { token: svc.ownerToken });
  t.equal(del.status, 200);
  t.equal(entries().length, 0, 'the queue entry is gone at the edge');
  t.same(await items(svc), []);
  const again = await api(svc.url, 'DELETE', `/v0/owner/quarantine/${item.quarantine_id}`, { token: svc.ownerToken });
  t.equal(again.status, 200, 'repeating the delete answers 200');
  const deadline = Date.now() + 5_000;
  const deleted = () => frames.find((f) => f.event_type === 'inbound.deleted');
  while (!deleted() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.match(deleted(), { event_type: 'inbound.deleted', quarantine: { quarantine_id: item.quarantine_id, reason_code: 'object_missing' } });
  ws.close();
});

t.test('with the edge down, delete is service_unavailable and leaves the deletion pending', async (t) => {
  await orphanQueueEntry();
  let item: Awaited<ReturnType<typeof items>>[number] | undefined;
  for (const deadline = Date.now() + 15_000; !item && Date.now() < deadline; await new Promise((r) => setTimeout(r, 150))) item = (await items(svc))[0];
  if (!item) throw new Error('no quarantine item');
  await edge.stop();
  const res = await api(svc.url, 'DELETE', `/v0/owner/quarantine/${item.quarantine_id}`, { token: svc.ownerToken });
  t.equal(res.status, 503);
  t.equal((res.body as { code: string }).code, 'service_unavailable');
  const [after] = await items(svc);
  t.equal(after.status, 'delete_pending');
  const retry = await api(svc.url, 'POST', `/v0/owner/quarantine/${item.quarantine_id}/retry`, { token: svc.ownerToken, body: {} });
  t.equal(retry.status, 409);
  t.equal((retry.body as { code: string }).code, 'action_required', 'no retry while a deletion is pending');
  await startEdge();
});

t.test('without a configured buffer, retry and delete are action_required', async (t) => {
  await orphanQueueEntry();
  let list: Awaited<ReturnType<typeof items>> = [];
  const deadline = Date.now() + 15_000;
  while (!list.some((i) => i.status === 'quarantined') && Date.now() < deadline) {
    list = await items(svc);
    await new Promise((r) => setTimeout(r, 150));
  }
  const fresh = list.find((i) => i.status === 'quarantined')!;
  t.ok(fresh, 'a new item was quarantined');
  await api(svc.url, 'DELETE', '/v0/owner/transport', { token: svc.ownerToken });
  const del = await api(svc.url, 'DELETE', `/v0/owner/quarantine/${fresh.quarantine_id}`, { token: svc.ownerToken });
  t.equal(del.status, 409);
  t.equal((del.body as { code: string }).code, 'action_required');
});
