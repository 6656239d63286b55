/**
 * The relay across several edges (docs/outbound.md "Several edges") against two real in-process
 * edges, the first behind a proxy that can lose the answer or drop connections: a job moves to
 * the second edge only when the first certainly took nothing; after an ambiguous handover it
 * waits until the first can be asked, and is never handed to the second while the first may
 * hold it.
 */
import t from 'tap';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3-multiple-ciphers';
import { migrate, type Db } from '../../src/db/open.js';
import { EdgeRelay, type OutboundJob } from '../../src/outbound/transports.js';
import { handoverEdges } from '../../src/outbound/edge-handovers.js';
import { edgeHealth } from '../../src/mail/edge-health.js';
import { startTestEdge } from '../helpers/edge.js';

type Mode = 'pass' | 'lose-answer' | 'reset';

/** A proxy in front of an edge API: passes requests, or loses the answer to POST /outbound after forwarding it, or resets every connection. */
async function flakyProxy(target: string) {
  const upstream = new URL(target);
  const state = { mode: 'pass' as Mode };
  const server = http.createServer((req, res) => {
    if (state.mode === 'reset') return req.socket.destroy();
    const losing = state.mode === 'lose-answer' && req.method === 'POST' && req.url === '/outbound';
    const up = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      if (losing) {
        answer.resume();
        answer.on('end', () => req.socket.destroy()); // the edge stored it; the home never hears so
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** A loopback port nothing listens on (connections are refused). */
async function deadPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

function store(): Db {
  const db = new Database(':memory:') as unknown as Db;
  migrate(db);
  return db;
}

const job = (ref: string): OutboundJob => ({
  ref,
  mailFrom: 'agent@home.test',
  recipients: ['someone@remote.test'],
  raw: Buffer.from(`From: agent@home.test\r\nTo: someone@remote.test\r\nSubject: ${ref}\r\nMessage-ID: <${ref}@home.test>\r\n\r\nhello\r\n`),
});

t.test('a refused connection fails over at once; the dead edge keeps no record', async (t) => {
  const db = store();
  t.teardown(() => db.close());
  const b = await startTestEdge(t, { route: false, deliveryPort: await deadPort() });
  const dead = { url: `http://127.0.0.1:${await deadPort()}`, token: 'edge_dead_token_0123456789' };
  const relay = new EdgeRelay(db, [dead, { url: b.apiUrl, token: b.token }]);
  const handover = await relay.send(job('refused-1'));
  t.equal(handover.kind, 'accepted', 'sent through the second edge');
  t.equal((await b.call('GET', '/outbound/refused-1')).status, 200, 'the second edge holds it');
  t.same(handoverEdges(db, 'refused-1'), [b.apiUrl], 'only the edge that took it is recorded');
  t.match(edgeHealth(db, dead.url), { healthy: false, consecutive_failures: 1, last_error: 'edge_unreachable' });
  // The next job: the unhealthy first edge is tried last, so it goes straight to the second.
  t.equal((await relay.send(job('refused-2'))).kind, 'accepted');
  t.equal(edgeHealth(db, dead.url).consecutive_failures, 1, 'the edge in backoff was not tried again');
});

t.test('a lost answer: the job waits for the first edge and is never handed to the second while it may hold it', async (t) => {
  const db = store();
  t.teardown(() => db.close());
  const a = await startTestEdge(t, { route: false, deliveryPort: await deadPort() });
  const b = await startTestEdge(t, { route: false, deliveryPort: await deadPort() });
  const proxy = await flakyProxy(a.apiUrl);
  t.teardown(() => proxy.close());
  const relay = new EdgeRelay(db, [
    { url: proxy.url, token: a.token },
    { url: b.apiUrl, token: b.token },
  ]);

  proxy.state.mode = 'lose-answer';
  const first = await relay.send(job('lost-1'));
  t.equal(first.kind, 'retry', 'an answer lost after the request went through is not a failover');
  t.equal((await a.call('GET', '/outbound/lost-1')).status, 200, 'the first edge did store it');
  t.same(handoverEdges(db, 'lost-1'), [proxy.url], 'it is recorded as maybe at the first edge');

  proxy.state.mode = 'reset';
  const second = await relay.send(job('lost-1'));
  t.equal(second.kind, 'retry', 'the first edge cannot be asked: the job waits');
  t.equal((await b.call('GET', '/outbound/lost-1')).status, 404, 'the second edge never got it');

  proxy.state.mode = 'pass';
  // Healthy again only after its backoff; the relay asks it before the second edge either way.
  const third = await relay.send(job('lost-1'));
  t.equal(third.kind, 'accepted', 'the first edge says it has it: sent, once');
  t.equal((await b.call('GET', '/outbound/lost-1')).status, 404, 'still never at the second edge');
  t.equal((await relay.status('lost-1'))?.ref, 'lost-1', 'recovery finds it at the first edge');
});

t.test('an edge that answers it never had the job releases it to the next edge', async (t) => {
  const db = store();
  t.teardown(() => db.close());
  const a = await startTestEdge(t, { route: false, deliveryPort: await deadPort() });
  const b = await startTestEdge(t, { route: false, deliveryPort: await deadPort() });
  const proxy = await flakyProxy(a.apiUrl);
  t.teardown(() => proxy.close());
  const relay = new EdgeRelay(db, [
    { url: proxy.url, token: a.token },
    { url: b.apiUrl, token: b.token },
  ]);
  // The connection dropped before the edge read anything: ambiguous to the home.
  proxy.state.mode = 'reset';
  t.equal((await relay.send(job('reset-1'))).kind, 'retry');
  t.same(handoverEdges(db, 'reset-1'), [proxy.url]);
  // The first edge still resets every connection, so it cannot be asked whether it has the job.
  t.equal((await relay.send(job('reset-1'))).kind, 'retry', 'cannot be asked: waits');
  // Back: it answers that it does not know the ref, so the job may go anywhere; healthy first.
  proxy.state.mode = 'pass';
  t.equal((await relay.send(job('reset-1'))).kind, 'accepted');
  const at = [(await a.call('GET', '/outbound/reset-1')).status, (await b.call('GET', '/outbound/reset-1')).status];
  t.equal(at.filter((s) => s === 200).length, 1, `held by exactly one edge (${at.join(', ')})`);
});

t.test('a receive-only edge (501, the Cloudflare Worker) is skipped for sending without being marked unhealthy', async (t) => {
  const db = store();
  t.teardown(() => db.close());
  const b = await startTestEdge(t, { route: false, deliveryPort: await deadPort() });
  const seen: string[] = [];
  const receiveOnly = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    res.writeHead(501, { 'content-type': 'application/json' }).end(JSON.stringify({ name: 'not_supported', message: 'This edge receives mail only.' }));
  });
  await new Promise<void>((resolve) => receiveOnly.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => receiveOnly.close(() => resolve())));
  const workerUrl = `http://127.0.0.1:${(receiveOnly.address() as AddressInfo).port}`;
  const relay = new EdgeRelay(db, [
    { url: workerUrl, token: 'edge_worker_token_0123456789' },
    { url: b.apiUrl, token: b.token },
  ]);
  t.equal((await relay.send(job('worker-1'))).kind, 'accepted', 'sent through the edge that relays');
  t.equal((await b.call('GET', '/outbound/worker-1')).status, 200);
  t.ok(seen.includes('POST /outbound'), 'the receive-only edge was tried first, in list order');
  t.same(handoverEdges(db, 'worker-1'), [b.apiUrl], 'the receive-only edge is not recorded as maybe holding it');
  t.equal(edgeHealth(db, workerUrl).healthy, true, 'its health (which pulls rely on) is untouched');
  t.equal((await relay.status('worker-1'))?.ref, 'worker-1', 'recovery finds it');
  t.equal(await relay.status('never-sent'), null, 'a 501 on the status route means "not here", not an error');

  const alone = new EdgeRelay(db, [{ url: workerUrl, token: 'edge_worker_token_0123456789' }]);
  t.same(await alone.send(job('worker-2')), { kind: 'retry', error: 'edge_does_not_relay' }, 'with only a receive-only edge the outbox says why');
});
