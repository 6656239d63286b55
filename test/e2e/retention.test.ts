/**
 * Retention (docs/mail-store.md, "Retention"): a real home with rows of every kind made through
 * routes and SMTP, restarted with the retention pass's clock moved forward
 * (SVC_TEST_RETENTION_CLOCK_MS, docs/testing.md) — 2, 31 and 61 days. Each restart's first pass
 * deletes what is past its period and keeps what is within it, and never what is still
 * referenced: a quarantine item waiting for the owner, events a failing webhook still has to deliver.
 */
import t from 'tap';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import { Edge } from '../../src/edge/edge.js';
import { api, setupOwner, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { authorizeCode, ensureWebApp, exchange, register, type Session } from '../helpers/oauth.js';

const DAY = 24 * 3600 * 1000;
const EDGE_TOKEN = 'edge-test-token-0123456789abcdef';
const DOMAIN = 'keep.test';
const INBOX = `agent@${DOMAIN}`;
const BOUNDED_MS = 20_000;

let dns: LoopbackDns;
let edge: Edge;
let edgeDir: string;
let smtpPort = 0;
let edgeUrl = '';
let svc: RunningSvc;
let receiver: http.Server;
let delivered = 0;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, probe: () => Promise<T | undefined | null | false> | T | undefined | null | false): Promise<T> {
  const deadline = Date.now() + BOUNDED_MS;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(150);
  }
}

/** Sends over SMTP into the edge, retrying while it answers 451 (routing not pushed yet); bounded. */
async function smtpSend(message: nodemailer.SendMailOptions): Promise<void> {
  const deadline = Date.now() + BOUNDED_MS;
  for (;;) {
    try {
      await nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true, name: 'client.sender.test' }).sendMail({ envelope: { from: 'bounce@sender.test', to: message.to as string }, ...message });
      return;
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
      await sleep(200);
    }
  }
}

/** Reads the home database (the service may be running: a second connection, as svc's readers use). */
function rows<T = Record<string, unknown>>(sql: string, ...params: unknown[]): T[] {
  const db = openHomeDb(svc.home);
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}
const count = (table: string, where = '1') => rows<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE ${where}`)[0].n;

/** Restarts the home with the retention clock `aheadMs` forward, once its first pass has run (`done` says when). */
async function restartAhead(aheadMs: number, done: () => boolean): Promise<void> {
  await svc.stop();
  svc = await startSvc({ home: svc.home, init: false, env: { SVC_TEST_RETENTION_CLOCK_MS: String(aheadMs) } });
  await until('the retention pass', done);
}

let session: Session;
let firstHookSeq = 0;

t.before(async () => {
  ensureWebApp();
  dns = await startLoopbackDns({ 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] }, '_dmarc.sender.test': { TXT: ['v=DMARC1; p=none'] } });
  edgeDir = path.join(tempDir('svc-edge-'), 'edge');
  edge = new Edge({ dataDir: edgeDir, smtp: { host: '127.0.0.1', port: 0 }, api: { host: '127.0.0.1', port: 0 }, apiToken: EDGE_TOKEN, hostname: 'mx.edge.test', resolver: dns.resolver });
  const bound = await edge.start();
  smtpPort = bound.smtp.port;
  edgeUrl = bound.api.url;
  // A webhook receiver that always fails: its deliveries stay waiting.
  receiver = http.createServer((req, res) => {
    delivered++;
    req.resume();
    res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));

  svc = await startSvc();
  session = await setupOwner(svc);
  const paired = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { edge: { url: edgeUrl, token: EDGE_TOKEN } } });
  if (paired.status !== 200) throw new Error(paired.text);
  const created = await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'agent', domain: DOMAIN } });
  if (created.status !== 200) throw new Error(created.text);
  await until('the inbox at the edge', async () => {
    const routing = await fetch(`${edgeUrl}/routing`, { headers: { authorization: `Bearer ${EDGE_TOKEN}` } });
    return routing.ok && ((await routing.json()) as { addresses: string[] }).addresses.includes(INBOX);
  });
});

t.teardown(async () => {
  await svc?.stop();
  await edge?.stop();
  await dns?.close();
  receiver?.close();
});

t.test('rows of every kind, made through routes and SMTP', async (t) => {
  // A rejection: mail from a blocked sender.
  const block = await api(svc.url, 'POST', `/v0/inboxes/${encodeURIComponent(INBOX)}/lists/receive/block`, { token: svc.ownerToken, body: { entry: 'pest@sender.test' } });
  t.equal(block.status, 200);
  await smtpSend({ from: 'pest@sender.test', to: INBOX, subject: 'buy now', text: 'x' });
  await until('the rejection', () => count('inbound_rejections') === 1);

  // Two quarantine items (objects that do not open): one released (a tombstone), one left waiting.
  await svc.stop();
  await smtpSend({ from: 'alice@sender.test', to: INBOX, subject: 'first', text: 'one' });
  await smtpSend({ from: 'alice@sender.test', to: INBOX, subject: 'second', text: 'two' });
  const objects = fs.readdirSync(path.join(edgeDir, 'objects')).filter((f) => f.endsWith('.jwe')).sort().map((f) => path.join(edgeDir, 'objects', f));
  t.equal(objects.length, 2);
  const originals = objects.map((file) => fs.readFileSync(file, 'utf8'));
  for (const [i, file] of objects.entries()) {
    const parts = originals[i].split('.');
    parts[3] = parts[3].slice(0, 10) + (parts[3][10] === 'A' ? 'B' : 'A') + parts[3].slice(11);
    fs.writeFileSync(file, parts.join('.'));
  }
  svc = await startSvc({ home: svc.home, init: false });
  session = await loginAgain();
  const items = await until('two quarantine items', async () => {
    const res = await api<{ items: { quarantine_id: string }[] }>(svc.url, 'GET', '/v0/owner/quarantine', { token: svc.ownerToken });
    return res.body.items?.length === 2 && res.body.items;
  });
  // The first object is repaired: retrying both releases it and leaves the other waiting.
  fs.writeFileSync(objects[0], originals[0]);
  const outcomes = [];
  for (const item of items) outcomes.push((await api<{ status: string }>(svc.url, 'POST', `/v0/owner/quarantine/${item.quarantine_id}/retry`, { token: svc.ownerToken, body: {} })).body.status);
  t.same(outcomes.sort(), ['quarantined', 'released']);
  t.same(rows("SELECT status FROM inbound_quarantine ORDER BY status"), [{ status: 'quarantined' }, { status: 'released' }]);

  // OAuth: one code exchanged (a grant with its tokens), one never exchanged.
  const clientId = (await register(svc.url)).body.client_id;
  const resource = `${svc.url}/v0`;
  const used = await authorizeCode(svc.url, session, { clientId, resource, inbox_ids: [INBOX] });
  t.equal((await exchange(svc.url, { code: used.code, verifier: used.verifier, clientId, resource })).status, 200);
  await authorizeCode(svc.url, session, { clientId, resource, inbox_ids: [INBOX] });
  t.equal(count('oauth_codes'), 2);
  t.equal(count('oauth_grants'), 2, 'each consent is a grant');
  t.same(rows('SELECT kind FROM oauth_tokens ORDER BY kind'), [{ kind: 'access' }, { kind: 'refresh' }]);

  // A send with an Idempotency-Key, to a domain that does not exist: it fails at once, and is final.
  const sent = await api<{ message_id: string }>(svc.url, 'POST', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages/send`, {
    token: svc.ownerToken,
    headers: { 'idempotency-key': 'retention-send-1' },
    body: { to: ['someone@nowhere.test'], subject: 'hello', text: 'hi' },
  });
  t.equal(sent.status, 200, 'sent');
  await until('the send to be final', () => rows("SELECT final_at FROM idempotency_keys WHERE key = 'retention-send-1' AND final_at IS NOT NULL").length === 1);

  // A webhook whose receiver fails: events after its creation wait for it.
  firstHookSeq = rows<{ seq: number }>('SELECT max(seq) AS seq FROM events')[0].seq + 1;
  const hook = await api(svc.url, 'POST', '/v0/webhooks', { token: svc.ownerToken, body: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, event_types: ['message.received'] } });
  t.equal(hook.status, 200, 'the owner creates the webhook');
  await smtpSend({ from: 'alice@sender.test', to: INBOX, subject: 'for the webhook', text: 'three' });
  await until('a failed delivery', () => delivered > 0);
  t.ok(count('events', `seq >= ${firstHookSeq}`) >= 1, 'an event the webhook has not delivered');
  t.ok(count('events', `seq < ${firstHookSeq}`) >= 1, 'events from before the webhook');
  t.equal(count('owner_sessions'), 2, 'the setup session and a login');
});

/** Logs in with the password (a second session); returns it. */
async function loginAgain(): Promise<Session> {
  const res = await api<{ csrf_token: string }>(svc.url, 'POST', '/v0/owner/login', { body: { password: 'correct horse battery staple' } });
  if (res.status !== 200) throw new Error(res.text);
  return { cookie: (res.headers.get('set-cookie') ?? '').split(';')[0], csrf: res.body.csrf_token };
}

t.test('2 days on: expired OAuth codes, access tokens and the send key are gone; the rest is within its period', async (t) => {
  await restartAhead(2 * DAY, () => count('oauth_codes') === 0);
  t.same(rows('SELECT kind FROM oauth_tokens'), [{ kind: 'refresh' }], 'the access token expired; the refresh token lives with its grant');
  t.equal(count('owner_sessions'), 2);
  t.equal(count('inbound_rejections'), 1);
  t.equal(count('inbound_quarantine'), 2, 'the tombstone and the waiting item');
  t.ok(count('events', `seq < ${firstHookSeq}`) >= 1, 'events younger than 30 days');
  t.equal(count('oauth_grants'), 2);
  t.equal(count('idempotency_keys'), 0, 'the send key, 24 h past its final send, is gone');
});

t.test('31 days on: sessions, rejections, the tombstone and old events are gone; what is waiting stays', async (t) => {
  await restartAhead(31 * DAY, () => count('inbound_rejections') === 0);
  t.equal(count('owner_sessions'), 0, 'sessions end after 30 days at most');
  t.same(rows('SELECT status FROM inbound_quarantine'), [{ status: 'quarantined' }], 'the item waiting for the owner stays');
  t.equal(count('events', `seq < ${firstHookSeq}`), 0, 'events older than 30 days that no webhook needs');
  t.ok(count('events', `seq >= ${firstHookSeq}`) >= 1, 'the events the failing webhook still has to deliver stay');
  t.equal(count('oauth_grants'), 2, 'grants that ended a day ago are still shown');
  const list = await api<{ items: unknown[] }>(svc.url, 'GET', '/v0/owner/quarantine', { token: svc.ownerToken });
  t.equal(list.body.items.length, 1, 'the owner still sees it');
});

t.test('61 days on: ended grants are gone with their tokens and their client', async (t) => {
  await restartAhead(61 * DAY, () => count('oauth_grants') === 0);
  t.equal(count('oauth_tokens'), 0);
  t.equal(count('oauth_clients'), 0);
  t.equal(count('inbound_quarantine'), 1, 'still waiting for the owner');
  t.ok(count('events', `seq >= ${firstHookSeq}`) >= 1, 'still waiting for the webhook');
});
