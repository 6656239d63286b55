/**
 * The CLI's HTTP client (src/cli/owner-client.ts) against a hostile service at SVC_URL: a
 * redirect is not followed (the API key never reaches the other address), an answer cut off
 * mid-body, one that never ends or one that is not JSON fails as "the service is unavailable"
 * (exit 10) with a clear message, and nothing of the key is printed.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { agentEnv, svcCli } from '../e2e/cli-run.js';
import { MAX_ANSWER_BYTES } from '../../src/cli/owner-client.js';

const KEY = 'svc_key_cli-transport-secret';

/** A loopback server answering every request with `answer`; records the authorization headers it saw. */
async function hostile(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const seen: (string | undefined)[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers.authorization);
    answer(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

t.test('a redirect is not followed: the key reaches only SVC_URL, and the command fails as unavailable', async (t) => {
  const target = await hostile((_req, res) => res.end('{"inboxes":[]}'));
  const redirector = await hostile((_req, res) => {
    res.writeHead(307, { location: `${target.url}/v0/inboxes` });
    res.end();
  });
  const run = await svcCli(['inboxes', 'list', '--json'], { env: agentEnv(redirector.url, KEY) });
  t.equal(run.code, 10, run.stderr);
  t.match(run.error(), { error: { code: 'service_unavailable', message: /Nothing answered at SVC_URL/ } });
  t.equal(redirector.seen.length, 1, 'one request to SVC_URL');
  t.same(target.seen, [], 'the redirect target never heard from the CLI');
  t.notMatch(run.stdout + run.stderr, KEY, 'the key is not printed');
});

t.test('an answer cut off in its body fails as unavailable', async (t) => {
  const cut = await hostile((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
    res.write('{"inboxes":[');
    setTimeout(() => res.socket?.destroy(), 50);
  });
  const run = await svcCli(['inboxes', 'list', '--json'], { env: agentEnv(cut.url, KEY) });
  t.equal(run.code, 10, run.stderr);
  t.match(run.error(), { error: { code: 'service_unavailable' } });
  t.equal(run.stdout, '', 'nothing half-read is printed');
});

t.test('an answer that never ends is cut off at MAX_ANSWER_BYTES, not read into memory', async (t) => {
  let sent = 0;
  const endless = await hostile((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    const more = () => {
      while (!res.destroyed && res.write(chunk)) sent += chunk.byteLength;
      if (!res.destroyed) res.once('drain', more);
    };
    res.socket?.once('close', () => res.destroy());
    more();
  });
  const run = await svcCli(['inboxes', 'list', '--json'], { env: agentEnv(endless.url, KEY) });
  t.equal(run.code, 10, run.stderr);
  t.match(run.error(), { error: { code: 'service_unavailable' } });
  t.ok(sent < MAX_ANSWER_BYTES * 2, `the CLI stopped reading (${Math.round(sent / 2 ** 20)} MiB sent)`);
});

t.test('an answer that is not JSON, or an error that is not svc\'s, says so', async (t) => {
  for (const status of [200, 500]) {
    const html = await hostile((_req, res) => {
      res.writeHead(status, { 'content-type': 'text/html' });
      res.end('<html>a captive portal</html>');
    });
    const run = await svcCli(['inboxes', 'list', '--json'], { env: agentEnv(html.url, KEY) });
    t.equal(run.code, 10, `${status}: ${run.stderr}`);
    t.match(run.error(), { error: { code: 'service_unavailable', message: new RegExp(`answered ${status} with something that is not JSON`) } });
  }
});

t.test('a refused key is reported as such, not as a crash', async (t) => {
  const refusing = await hostile((_req, res) => {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end('{"name":"UnauthorizedError","code":"unauthorized","message":"no"}');
  });
  const run = await svcCli(['inboxes', 'list', '--json'], { env: agentEnv(refusing.url, KEY) });
  t.not(run.code, 0);
  t.match(run.error(), { error: { code: 'unauthorized', message: /did not accept SVC_API_KEY/ } });
  t.equal(refusing.seen[0], `Bearer ${KEY}`, 'the key went to SVC_URL as a bearer token');
});
