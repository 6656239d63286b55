/**
 * Several edges per home, as an attacker or a careless owner would probe it (docs/security.md
 * "Several edges"): each edge's token goes to that edge only (recorded by a proxy in front of
 * each, across a reorder and a removal), tokens never come back in a read, the list is bounded
 * and checked like the single form, and the cross-edge dedup never drops mail wrongly: it is
 * keyed on the recipient, so the same bytes for another recipient are still delivered.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startTestEdge, type RunningEdge } from '../helpers/edge.js';
import { startLoopbackDns } from '../helpers/dns.js';

const DOMAIN = 'home.test';
const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A tiny recording proxy in front of an edge API: what the home sent it, with which Authorization. */
interface Recorder {
  url: string;
  seen: { at: number; method: string; path: string; auth: string | undefined }[];
  close(): Promise<void>;
}

async function recordingProxy(target: string): Promise<Recorder> {
  const upstream = new URL(target);
  const seen: Recorder['seen'] = [];
  const server = http.createServer((req, res) => {
    seen.push({ at: Date.now(), method: req.method ?? '', path: (req.url ?? '').split('?')[0], auth: req.headers.authorization });
    const up = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const smtp = (port: number) => nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });

async function until<T>(ms: number, read: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  let value = await read();
  for (const deadline = Date.now() + ms; !check(value) && Date.now() < deadline; value = await read()) await sleep(200);
  return value;
}

/** Subjects of every stored message of the inbox (one page is plenty here). */
async function subjects(svc: RunningSvc, inbox: string): Promise<string[]> {
  const res = await api<{ messages: { subject: string | null }[] }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages?limit=100&include_unauthenticated=true&include_spam=true`, { token: svc.ownerToken });
  if (res.status !== 200) throw new Error(res.text);
  return res.body.messages.map((m) => m.subject ?? '');
}

const raw = (subject: string, to: string, messageId: string | null) =>
  ['From: Peer <peer@sender.test>', `To: ${to}`, `Subject: ${subject}`, ...(messageId ? [`Message-ID: ${messageId}`] : []), 'Date: Thu, 02 Jan 2025 03:04:05 +0000', '', `body of ${subject}`, ''].join('\r\n');

t.test('several edges', async (t) => {
  const dns = await startLoopbackDns({ 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  t.teardown(() => dns.close());
  // The home pushes its own routing (its own key): the edges start without one.
  const a: RunningEdge = await startTestEdge(t, { resolver: dns.resolver, route: false, hostname: 'a.edge.test' });
  const b: RunningEdge = await startTestEdge(t, { resolver: dns.resolver, route: false, hostname: 'b.edge.test' });
  const proxyA = await recordingProxy(a.apiUrl);
  const proxyB = await recordingProxy(b.apiUrl);
  t.teardown(() => proxyA.close());
  t.teardown(() => proxyB.close());

  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const owner = { token: svc.ownerToken };
  const put = (body: unknown) => api<Record<string, unknown>>(svc.url, 'PUT', '/v0/owner/transport', { ...owner, body });
  const both = [
    { url: proxyA.url, token: a.token },
    { url: proxyB.url, token: b.token },
  ];
  const first = await put({ edges: both });
  t.equal(first.status, 200, first.text);
  const bob = (await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { ...owner, body: { username: 'bob', domain: DOMAIN } })).body.inbox_id;
  const carol = (await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { ...owner, body: { username: 'carol', domain: DOMAIN } })).body.inbox_id;
  /** Delivers `message` to the edge, retrying while its routing has not arrived yet. */
  async function deliver(edge: RunningEdge, to: string[], message: string): Promise<void> {
    for (const deadline = Date.now() + 20_000; ; await sleep(200)) {
      try {
        await smtp(edge.smtpPort).sendMail({ envelope: { from: 'peer@sender.test', to }, raw: message });
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
      }
    }
  }

  await t.test('tokens are write-only: no read or write answer carries one', async (t) => {
    const got = await api(svc.url, 'GET', '/v0/owner/transport', owner);
    for (const text of [first.text, got.text]) {
      t.notOk(text.includes(a.token), 'edge a token absent');
      t.notOk(text.includes(b.token), 'edge b token absent');
    }
    t.same(
      (got.body as { edges: { token_set: boolean }[] }).edges.map((e) => e.token_set),
      [true, true],
    );
  });

  await t.test('the same bytes for another recipient set are that recipient\'s mail; repeats for the same recipient are dropped', async (t) => {
    // No Message-ID: only the content hash can tell the copies apart from new mail.
    const message = raw('no-id fallback', bob, null);
    await deliver(a, [bob], message);
    await deliver(b, [bob, carol], message); // MX fallback, with a recipient the first copy did not have
    await deliver(a, [bob], message); // the sender's own retry
    const bobs = await until(
      20_000,
      () => subjects(svc, bob),
      (s) => s.includes('no-id fallback'),
    );
    const carols = await until(
      20_000,
      () => subjects(svc, carol),
      (s) => s.includes('no-id fallback'),
    );
    await until(
      20_000,
      async () => [...(await a.call<{ objects: unknown[] }>('GET', '/objects')).body.objects, ...(await b.call<{ objects: unknown[] }>('GET', '/objects')).body.objects],
      (v) => v.length === 0,
    );
    t.equal((await subjects(svc, bob)).filter((s) => s === 'no-id fallback').length, 1, 'bob has it once (three copies reached the edges for him)');
    t.equal(carols.filter((s) => s === 'no-id fallback').length, 1, 'carol has it too: not dropped as a duplicate of bob\'s copy');
    t.ok(bobs.length > 0);
    // Different bytes with the same subject are different mail, even without a Message-ID.
    await deliver(b, [bob], raw('no-id fallback', bob, null).replace('body of', 'another body of'));
    const after = await until(
      20_000,
      () => subjects(svc, bob),
      (s) => s.filter((x) => x === 'no-id fallback').length >= 2,
    );
    t.equal(after.filter((s) => s === 'no-id fallback').length, 2, 'a message that differs in its bytes is stored');
  });

  await t.test("each edge's token goes to that edge only, across a reorder and a removal", async (t) => {
    await deliver(a, [bob], raw('via a', bob, '<via-a@sender.test>'));
    await deliver(b, [bob], raw('via b', bob, '<via-b@sender.test>'));
    // The other order: the token still follows its edge.
    t.equal((await put({ edges: [both[1], both[0]] })).status, 200);
    await deliver(a, [carol], raw('via a again', carol, '<via-a2@sender.test>'));
    await deliver(b, [carol], raw('via b again', carol, '<via-b2@sender.test>'));
    const send = await api(svc.url, 'POST', `/v0/inboxes/${enc(bob)}/messages/send`, { ...owner, body: { to: 'x@remote.test', subject: 'out', text: 'x' } });
    t.equal(send.status, 200, send.text);
    await until(
      20_000,
      () => subjects(svc, carol),
      (s) => s.includes('via a again') && s.includes('via b again'),
    );
    await until(
      20_000,
      async () => proxyA.seen.concat(proxyB.seen).some((r) => r.method === 'POST' && r.path === '/outbound'),
      Boolean,
    );
    t.ok(proxyA.seen.some((r) => r.path === '/routing'), 'edge a got the routing');
    t.ok(proxyB.seen.some((r) => r.path === '/routing'), 'edge b got the routing');
    t.ok(proxyA.seen.some((r) => r.path.startsWith('/objects')) && proxyB.seen.some((r) => r.path.startsWith('/objects')), 'both were pulled');
    t.same([...new Set(proxyA.seen.map((r) => r.auth))], [`Bearer ${a.token}`], 'edge a only ever saw its own token');
    t.same([...new Set(proxyB.seen.map((r) => r.auth))], [`Bearer ${b.token}`], 'edge b only ever saw its own token');

    // Removed: edge a is asked nothing new (a request already in flight may finish).
    t.equal((await put({ edges: [both[1]] })).status, 200);
    await sleep(4_000);
    const removedAt = Date.now();
    await deliver(b, [bob], raw('after removal', bob, '<after-removal@sender.test>'));
    await until(
      20_000,
      () => subjects(svc, bob),
      (s) => s.includes('after removal'),
    );
    await sleep(2_000);
    t.same(
      proxyA.seen.filter((r) => r.at >= removedAt).map((r) => `${r.method} ${r.path}`),
      [],
      'no request reached the removed edge',
    );
    t.same([...new Set(proxyB.seen.map((r) => r.auth))], [`Bearer ${b.token}`], 'and edge b still only its own token');
  });

  await t.test('the list is bounded and checked like the single form', async (t) => {
    const edge = (i: number) => ({ url: `https://edge${i}.example.com:8443`, token: `tok_${'x'.repeat(20)}${i}` });
    const tooMany = await put({ edges: Array.from({ length: 9 }, (_, i) => edge(i)) });
    t.equal(tooMany.status, 400);
    t.match(tooMany.body, { code: 'validation_error', message: /at most 8/, fix: /at most 8/ }, 'says the limit and what to do');
    t.notOk(tooMany.text.includes('tok_'), 'the refusal echoes no token');
    t.equal((await put({ edges: Array.from({ length: 100 }, (_, i) => edge(i)) })).status, 400, 'a huge list is refused by the schema');
    t.equal((await put({ edges: Array.from({ length: 8 }, (_, i) => edge(i)) })).status, 200, 'eight are fine');
    const twice = await put({ edges: [edge(1), { ...edge(1), url: `${edge(1).url}/` }] });
    t.equal(twice.status, 400, 'the same edge twice (even with a trailing slash) is refused');
    t.match(twice.text, /listed twice/);
    t.equal((await put({ edges: [edge(1), { url: 'http://edge.example.com:8443', token: 'x'.repeat(20) }] })).status, 400, 'plain http off loopback is refused in the list too');
    t.equal((await put({ edges: [{ url: 'not a url', token: 'x'.repeat(20) }] })).status, 400, 'an unparsable URL is refused');
    t.equal((await put({ edges: [{ url: 'https://e.example.com', token: 'short' }] })).status, 400, 'a short token is refused');
    t.equal((await put({ edge: edge(1), edges: [edge(2)] })).status, 400, 'both forms at once are refused');
    // An entry without token keeps the token of that same URL only: it cannot lend a paired edge's token to another host.
    const borrow = await put({ edges: [{ url: edge(1).url }, { url: 'https://attacker.example.com:8443' }] });
    t.equal(borrow.status, 400, 'an unpaired URL without token is refused');
    t.match(borrow.body, { code: 'validation_error', message: /attacker\.example\.com:8443 is not paired yet/ });
    const stored = await api<{ edges: { url: string }[] }>(svc.url, 'GET', '/v0/owner/transport', owner);
    t.equal(stored.body.edges.length, 8, 'a refused write changed nothing');
    const reordered = await put({ edges: [{ url: edge(7).url }, { url: edge(0).url }] });
    t.equal(reordered.status, 200, 'paired edges can be kept by URL alone');
    t.same(
      (reordered.body as { edges: { url: string }[] }).edges.map((e) => e.url),
      [edge(7).url, edge(0).url],
    );
    const cleared = await put({ edges: [] });
    t.equal(cleared.status, 200);
    t.same((cleared.body as { edges: unknown[]; edge: unknown }).edges, []);
    t.equal((cleared.body as { edge: unknown }).edge, null, 'an empty list unpairs');
  });
});
