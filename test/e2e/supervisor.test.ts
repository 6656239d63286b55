/** The supervisor: loops run in workers, a crashing loop stops the service, signals stop it cleanly. */
import t from 'tap';
import http from 'node:http';
import { api, startSvc } from '../helpers/svc.js';

const LOOPS = ['outbox', 'inbound-pull', 'inbound-reconcile', 'delivery-events', 'scheduled-drafts', 'provisioning', 'webhooks', 'remote-access'];

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`${signal} stops the service with exit 0`, async (t) => {
    const svc = await startSvc();
    t.equal((await api(svc.url, 'GET', '/v0/owner/status')).status, 200);
    t.equal(await svc.stop(signal), 0);
    await t.rejects(fetch(svc.url + '/v0/owner/status'), 'no longer listening');
  });
}

t.test('a crash in any loop stops the whole service', async (t) => {
  // Each crash has a service (and home) of its own and mostly waits (for the 2 s fault delay and
  // the other loops' stop), so four run at a time.
  t.jobs = 4;
  for (const loop of LOOPS) {
    t.test(`a crash in the ${loop} loop stops the whole service with server.failed`, async (t) => {
      const svc = await startSvc({ env: { SVC_TEST_FAULT: `loop-crash:${loop}` } });
      const code = await svc.exited;
      t.equal(code, 1, 'exit 1');
      const lines = svc.stderr().trim().split('\n');
      t.equal(lines.length, 1, 'one line on stderr');
      const failure = JSON.parse(lines[0]);
      t.match(failure, { event: 'server.failed', code: 'service_unavailable', cause: 'LoopCrashed', message: new RegExp(loop), fix: String });
      t.notMatch(svc.stderr(), /injected fault|\n\s+at /, 'no raw error details');
    });
  }
});

t.test('in-flight requests finish during the 5 s drain after SIGTERM', async (t) => {
  const svc = await startSvc();
  const url = new URL(svc.url + '/v0/owner/login');
  const body = JSON.stringify({ password: 'not the password at all' });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let data = '';
      res.on('data', (d) => (data += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
    });
    req.on('error', reject);
    req.write(body.slice(0, 10));
    setTimeout(() => {
      svc.proc.kill('SIGTERM');
      setTimeout(() => req.end(body.slice(10)), 1_000);
    }, 300);
  });
  const res = await response;
  t.equal(res.status, 403, 'the request begun before the signal was answered (no owner yet → forbidden)');
  t.equal(JSON.parse(res.body).code, 'forbidden');
  t.equal(await svc.exited, 0);
});

t.test('a request still running after 5 s is cut off and the service exits 0', async (t) => {
  const svc = await startSvc();
  const started = Date.now();
  const outcome = new Promise<string>((resolve) => {
    const req = http.request(new URL(svc.url + '/v0/owner/login'), { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': 100 } });
    req.on('response', (res) => resolve(`status ${res.statusCode}`));
    req.on('error', () => resolve('closed'));
    req.write('{"pass');
    setTimeout(() => svc.proc.kill('SIGTERM'), 200);
  });
  t.equal(await svc.exited, 0);
  const elapsed = Date.now() - started;
  t.ok(elapsed >= 5_000 && elapsed < 9_000, `stopped after the drain period (${elapsed} ms)`);
  t.match(await outcome, /closed|status 503/);
});
