/**
 * The home's one edge client (src/inbound/edge-client.ts) against a real Edge on loopback: one
 * method per edge route the relay, the delivery-events loop and the inbound loops use, and one
 * error mapping — a refused message is an answer, anything else unexpected is EdgeUnavailable
 * carrying the status (or null when nothing answered).
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Edge } from '../../src/edge/edge.js';
import { EdgeClient, EdgeUnavailable, EDGE_TIMEOUT_MS } from '../../src/inbound/edge-client.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { freePort } from '../helpers/ports.js';
import { tempDir } from '../helpers/svc.js';

const token = `edge_${randomBytes(32).toString('base64url')}`;
const message = (ref: string) => ({
  ref,
  mail_from: 'alice@home.test',
  recipients: ['bob@remote.test'],
  raw: Buffer.from(`From: alice@home.test\r\nTo: bob@remote.test\r\nSubject: hi\r\nMessage-ID: <${ref}@home.test>\r\n\r\nhello\r\n`).toString('base64'),
});

let client: EdgeClient;
let apiUrl: string;
t.before(async () => {
  // No records: the relay's delivery attempts fail quietly, which these tests never wait for.
  const dns = await startLoopbackDns({});
  const edge = new Edge({
    dataDir: path.join(tempDir('svc-edge-client-'), 'edge'),
    smtp: { host: '127.0.0.1', port: 0 },
    api: { host: '127.0.0.1', port: 0 },
    apiToken: token,
    hostname: 'mx.home.test',
    resolver: dns.resolver,
    retryScheduleMs: [60_000],
  });
  apiUrl = (await edge.start()).api.url;
  client = new EdgeClient(apiUrl, token);
  t.teardown(async () => {
    await edge.stop();
    await dns.close();
  });
});

t.test('an upload may take longer than any other request, and a long-poll gets a grace on top of its own wait', async (t) => {
  t.ok(EDGE_TIMEOUT_MS.upload > EDGE_TIMEOUT_MS.request);
  t.ok(EDGE_TIMEOUT_MS.longPollGrace > 0);
});

t.test('sendOutbound: a new message is accepted, and a repeat of the same ref is accepted again (idempotent)', async (t) => {
  t.same(await client.sendOutbound(message('ref-accept')), { accepted: true });
  t.same(await client.sendOutbound(message('ref-accept')), { accepted: true });
});

t.test('sendOutbound: a message the edge will never take is refused with its status, not thrown', async (t) => {
  t.same(await client.sendOutbound({ ...message('ref-bad'), recipients: [] }), { accepted: false, status: 400 });
});

t.test('outboundStatus: a known ref answers its status; a ref the edge never received is null', async (t) => {
  await client.sendOutbound(message('ref-known'));
  t.match(await client.outboundStatus('ref-known'), { ref: 'ref-known', status: String, recipients: [{ address: 'bob@remote.test' }] });
  t.equal(await client.outboundStatus('ref-never-sent'), null);
});

t.test('deliveryReports: a page of reports with the cursor to ask with next', async (t) => {
  const page = await client.deliveryReports(null, 10);
  t.ok(Array.isArray(page.events));
  t.type(page.next, 'string');
});

t.test('inbound routes: an empty buffer lists nothing, and a missing object is null', async (t) => {
  t.match(await client.listObjects(null, 10), { objects: [], has_more: false });
  t.match(await client.listQueue(null, 10), { entries: [], has_more: false });
  t.equal(await client.queueEntry('01890000-0000-7000-8000-000000000000'), null);
  t.equal(await client.hasObject('01890000-0000-7000-8000-000000000000'), false);
  t.equal(await client.getObjectBytes('01890000-0000-7000-8000-000000000000'), null);
});

t.test('a wrong token is EdgeUnavailable with the status the edge answered', async (t) => {
  const wrong = new EdgeClient(apiUrl, `edge_${randomBytes(32).toString('base64url')}`);
  const err = await wrong.listObjects(null, 10).catch((e: unknown) => e);
  t.ok(err instanceof EdgeUnavailable);
  t.equal((err as EdgeUnavailable).status, 401);
  const refused = await wrong.sendOutbound(message('ref-wrong-token')).catch((e: unknown) => e);
  t.ok(refused instanceof EdgeUnavailable, 'an upload with a wrong token is not a refusal of the message');
  t.equal((refused as EdgeUnavailable).status, 401);
});

t.test('an edge that does not answer at all is EdgeUnavailable with no status', async (t) => {
  const nobody = new EdgeClient(`http://127.0.0.1:${await freePort()}`, token);
  for (const call of [() => nobody.deliveryReports(null, 10), () => nobody.outboundStatus('ref'), () => nobody.sendOutbound(message('ref-nobody'))]) {
    const err = await call().catch((e: unknown) => e);
    t.ok(err instanceof EdgeUnavailable);
    t.equal((err as EdgeUnavailable).status, null);
  }
});
