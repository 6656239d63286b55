/**
 * The one credential svc takes from a URL (issue 35 §3; docs/security.md, "The AgentMail SDK's
 * socket"): `?api_key=` on the WebSocket upgrade of `GET /v0`, nowhere else. An attacker tries
 * the key on other routes and other spellings of the path, on plain requests and other methods,
 * under other parameter names, twice, beside a different header credential, as the owner token,
 * wrong, revoked; from a hostile page (Origin) or a rebound name (Host). The key never shows up
 * in what svc prints, writes to its home or answers. And the inbox event list keeps the stream's
 * visibility: another inbox is 404 for a scoped key, no `message_read` is 403, and mail a hidden
 * label hides is left out.
 */
import t, { type Test } from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import WebSocket from 'ws';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { createApiKey, createInbox, deleteApiKey } from '../helpers/seed.js';
import { wireRequest } from '../helpers/wire.js';
import { until } from '../helpers/until.js';

const A = 'a@sdkws-sec.test';
const B = 'b@sdkws-sec.test';

let dns: Awaited<ReturnType<typeof startLoopbackDns>>;
let svc: RunningSvc;
let port: number;
let key: { id: string; secret: string };
/** Every answer body svc gave in this file, searched for the key at the end. */
const answers: string[] = [];

t.before(async () => {
  dns = await startLoopbackDns({});
  svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server], env: { SVC_TEST_WS_PING_MS: '500' } });
  port = Number(new URL(svc.url).port);
  await createInbox(svc, A);
  await createInbox(svc, B);
  key = await createApiKey(svc, { permissions: ['message_read'], inboxIds: [A], name: 'scoped to a' });
});
t.teardown(async () => {
  await svc.stop();
  dns.close();
});

type Upgrade = { opened: true; socket: WebSocket } | { opened: false; status: number; body: string };

/** A WebSocket upgrade of `target`: whether it opened, or the HTTP answer that refused it. */
function upgrade(target: string, headers: Record<string, string> = {}, origin?: string): Promise<Upgrade> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${target}`, { headers, ...(origin ? { origin } : {}) });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        ws.on('error', () => undefined);
        answers.push(body);
        resolve({ opened: false, status: res.statusCode ?? 0, body });
      });
    });
    ws.once('open', () => resolve({ opened: true, socket: ws }));
    ws.once('error', reject);
  });
}

async function refusedUpgrade(t: Test, target: string, headers: Record<string, string> = {}, origin?: string): Promise<number> {
  const answer = await upgrade(target, headers, origin);
  if (answer.opened) {
    answer.socket.terminate();
    t.fail(`${target}: the upgrade was accepted`);
    return 101;
  }
  return answer.status;
}

async function plain(method: string, target: string, headers: Record<string, string> = {}) {
  const answer = await wireRequest({ port, method, target, headers, ...(method === 'POST' ? { body: '{}', headers: { ...headers, 'Content-Type': 'application/json' } } : {}) });
  answers.push(answer.text);
  return answer;
}

t.test('the key in the URL opens the SDK socket at /v0, and only there', async (t) => {
  const k = encodeURIComponent(key.secret);
  const ok = await upgrade(`/v0?api_key=${k}`);
  t.ok(ok.opened, 'GET /v0?api_key= upgrades');
  if (ok.opened) ok.socket.close();

  // Other routes and other spellings of the path, as upgrades: never opened, never authenticated.
  for (const target of [`/v0/?api_key=${k}`, `/V0?api_key=${k}`, `/v0/ws?api_key=${k}`, `/v0/inboxes?api_key=${k}`, `/v0/inboxes/${A}/events?api_key=${k}`, `/%76%30?api_key=${k}`, `/v0/owner/status?api_key=${k}`, `/mcp?api_key=${k}`, `/?api_key=${k}`]) {
    const status = await refusedUpgrade(t, target);
    t.ok(status >= 400 && status < 500, `upgrade ${target.split('?')[0]}: refused with ${status}`);
  }
  // Plain requests: /v0 itself, every other method, other routes.
  for (const [method, target] of [
    ['GET', `/v0?api_key=${k}`],
    ['POST', `/v0?api_key=${k}`],
    ['DELETE', `/v0?api_key=${k}`],
    ['GET', `/v0/inboxes?api_key=${k}`],
    ['GET', `/v0/inboxes/${A}/events?api_key=${k}`],
    ['POST', `/v0/inboxes?api_key=${k}`],
    ['GET', `/v0/ws?api_key=${k}`],
  ] as const) {
    const answer = await plain(method, target);
    t.ok(answer.status === 400 || answer.status === 404 || answer.status === 401, `${method} ${target.split('?')[0]}?api_key=: ${answer.status}`);
    t.not(answer.status, 200);
  }
  const inboxes = await plain('GET', `/v0/inboxes?api_key=${k}`);
  t.equal((inboxes.body as { code?: string }).code, 'validation_error', 'a REST route says credentials are not accepted in the URL');
});

t.test('other credential names, the name twice, or a second credential are refused at /v0 too', async (t) => {
  const k = encodeURIComponent(key.secret);
  for (const query of [`access_token=${k}`, `token=${k}`, `key=${k}`, `authorization=${k}`, `api_key=${k}&api_key=${k}`, `api_key=${k}&token=${k}`, 'api_key=']) {
    const status = await refusedUpgrade(t, `/v0?${query}`);
    t.equal(status, 400, `?${query.replaceAll(k, 'KEY')}: 400`);
  }
  // Another spelling of the name is no credential at all: unauthenticated, never read as the key.
  t.equal(await refusedUpgrade(t, `/v0?API_KEY=${k}`), 401, '?API_KEY=KEY: 401');
  const other = await createApiKey(svc, { permissions: ['message_read'], name: 'another' });
  t.equal(await refusedUpgrade(t, `/v0?api_key=${k}`, { authorization: `Bearer ${other.secret}` }), 401, 'a header naming another credential: 401');
  t.equal(await refusedUpgrade(t, `/v0?api_key=${encodeURIComponent(svc.ownerToken)}`), 401, 'the owner token alone in the URL: 401');
  const both = await upgrade(`/v0?api_key=${encodeURIComponent(svc.ownerToken)}`, { authorization: `Bearer ${svc.ownerToken}` });
  t.ok(both.opened, 'the owner token in the header, copied into the URL as the SDK does, is accepted');
  if (both.opened) both.socket.close();
});

t.test('a wrong or revoked key is refused, and a revoked key closes an open socket', async (t) => {
  t.equal(await refusedUpgrade(t, `/v0?api_key=${encodeURIComponent(key.secret.slice(0, -2) + 'xx')}`), 401, 'a wrong key: 401');
  const doomed = await createApiKey(svc, { permissions: ['message_read'], name: 'doomed' });
  const open = await upgrade(`/v0?api_key=${encodeURIComponent(doomed.secret)}`);
  t.ok(open.opened, 'opened before the revocation');
  if (!open.opened) return;
  const closed = new Promise<number>((resolve) => open.socket.on('close', (code) => resolve(code)));
  open.socket.send(JSON.stringify({ type: 'subscribe' }));
  await deleteApiKey(svc, doomed.id);
  t.equal(await closed, 1008, 'the open socket closes with 1008, as with the header');
  t.equal(await refusedUpgrade(t, `/v0?api_key=${encodeURIComponent(doomed.secret)}`), 401, 'the revoked key: 401');
});

t.test('a hostile Origin or Host is refused before the upgrade', async (t) => {
  const k = encodeURIComponent(key.secret);
  t.equal(await refusedUpgrade(t, `/v0?api_key=${k}`, {}, 'https://evil.example'), 403, 'Origin: https://evil.example');
  t.equal(await refusedUpgrade(t, `/v0?api_key=${k}`, {}, 'http://127.0.0.1:1'), 403, 'another local port');
  t.equal(await refusedUpgrade(t, `/v0?api_key=${k}`, { host: `evil.example:${port}` }), 403, 'Host: evil.example (DNS rebinding)');
  t.equal(await refusedUpgrade(t, `/v0?api_key=${k}`, { 'sec-fetch-site': 'cross-site' }), 403, 'Sec-Fetch-Site: cross-site');
});

/** Sends one message over SMTP into the edge (retrying while routing is pushed). */
async function sendMail(to: string, subject: string): Promise<void> {
  const ready = svc.stdoutLines.find((l) => l.event === 'server.ready')!;
  const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: Number(String(ready.smtp).split(':')[1]), secure: false, ignoreTLS: true });
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await smtp.sendMail({ from: 'sender@elsewhere.test', to, subject, text: `This is ${subject}.` });
      return;
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

type EventsPage = { events: { message_id: string; label: string; event_type: string }[] };

t.test('the inbox event list: scope 404 before permission, hidden mail left out', async (t) => {
  await sendMail(A, 'kept');
  await sendMail(A, 'trashed');
  await sendMail(B, 'for b');
  const owner = { token: svc.ownerToken };
  const list = await until('three messages stored', async () => {
    const [a, b] = await Promise.all([api<{ messages: { message_id: string; subject: string }[] }>(svc.url, 'GET', `/v0/inboxes/${A}/messages`, owner), api<{ count: number }>(svc.url, 'GET', `/v0/inboxes/${B}/messages`, owner)]);
    return a.body.messages.length === 2 && b.body.count === 1 ? a.body.messages : null;
  });
  const trashed = list.find((m) => m.subject === 'trashed')!.message_id;
  const kept = list.find((m) => m.subject === 'kept')!.message_id;
  const patched = await api(svc.url, 'PATCH', `/v0/inboxes/${A}/messages/${encodeURIComponent(trashed)}`, { ...owner, body: { add_labels: ['trash'] } });
  t.equal(patched.status, 200, 'the owner trashes one message');

  const events = (token: string, inbox: string) => api<EventsPage>(svc.url, 'GET', `/v0/inboxes/${inbox}/events?limit=100`, { token });
  const other = await events(key.secret, B);
  t.equal(other.status, 404, "another inbox's events: 404 for a key scoped to A");
  const nobody = await events(key.secret, 'nobody@sdkws-sec.test');
  t.equal(nobody.status, 404, 'an inbox that does not exist: the same 404');
  t.same(other.body, nobody.body, 'the two 404s cannot be told apart');
  const noRead = await createApiKey(svc, { permissions: ['draft_read'], inboxIds: [A], name: 'no message_read' });
  t.equal((await events(noRead.secret, A)).status, 403, 'in scope without message_read: 403');
  t.equal((await events(noRead.secret, B)).status, 404, 'out of scope without message_read: 404 first');

  const mine = await events(key.secret, A);
  t.equal(mine.status, 200);
  const seen = new Set(mine.body.events.map((e) => e.message_id));
  t.ok(seen.has(kept), 'the kept message is listed');
  t.notOk(seen.has(trashed), 'the trashed message is left out without label_trash_read');
  t.notOk(mine.body.events.some((e) => e.label === 'trash'), 'no event names the hidden label');

  const trashReader = await createApiKey(svc, { permissions: ['message_read', 'label_trash_read'], inboxIds: [A], name: 'trash reader' });
  const all = await events(trashReader.secret, A);
  t.ok(all.body.events.some((e) => e.message_id === trashed && e.event_type === 'label.added' && e.label === 'trash'), 'with label_trash_read: the trash label event is listed');
  const ownerView = await events(svc.ownerToken, A);
  t.ok(ownerView.body.events.some((e) => e.message_id === trashed), 'the owner sees everything');
  answers.push(JSON.stringify([other.body, mine.body, all.body]));

  const deleted = await api(svc.url, 'DELETE', `/v0/inboxes/${A}/messages/${encodeURIComponent(kept)}`, owner);
  t.equal(deleted.status, 200, 'the owner deletes a message');
  const after = await events(svc.ownerToken, A);
  t.notOk(after.body.events.some((e) => e.message_id === kept), "a deleted message's label history is gone with it");
});

t.test('the key never appears in what svc prints, writes to its home, or answers', async (t) => {
  // One more of each: a refused upgrade, a refused plain GET, an accepted upgrade and its close.
  const k = encodeURIComponent(key.secret);
  await refusedUpgrade(t, `/v0/inboxes?api_key=${k}`);
  await plain('GET', `/v0?api_key=${k}&last_event_id=nope`);
  const open = await upgrade(`/v0?api_key=${k}&last_event_id=evt_unknown`);
  if (open.opened) open.socket.terminate();
  const socket = await upgrade(`/v0?api_key=${k}`);
  if (socket.opened) {
    const closed = new Promise((resolve) => socket.socket.on('close', resolve));
    socket.socket.send('not json');
    await closed;
  }
  await svc.stop();
  const printed = svc.stderr() + JSON.stringify(svc.stdoutLines);
  t.ok(printed.length > 0, 'svc printed something to search');
  t.notOk(printed.includes(key.secret), 'not on stdout or stderr');
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) files.push(full);
    }
  };
  walk(svc.home);
  t.ok(files.length > 0, `the home's files were read (${files.length})`);
  const leaking = files.filter((f) => fs.readFileSync(f).includes(Buffer.from(key.secret)));
  t.same(leaking, [], 'in no file of the home (logs, database, connection file)');
  t.ok(answers.length > 20, `the answers were recorded (${answers.length})`);
  t.notOk(answers.some((a) => a.includes(key.secret) || a.includes(k)), 'in no answer body');
});
