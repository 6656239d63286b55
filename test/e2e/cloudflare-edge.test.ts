/**
 * The Cloudflare Email Worker edge end to end in Cloudflare's own runtime (workerd, through
 * `svc edge cloudflare dev`): a real svc home paired with it exactly as with `svc edge`, real MIME
 * mail handed to the Worker's email() as Email Routing does, pulled through the Worker's API,
 * opened and stored by the home. The Worker is started once for the whole file (workerd is slow to
 * start); the home is killed with SIGKILL mid-pull and restarted.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { api, repoRoot, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { edgeCall, filesUnder, NO_CLOUDFLARE_CALLS, sendToWorker, startCloudflareDev, type CloudflareDev } from '../helpers/cloudflare-edge.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { until } from '../helpers/until.js';

const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DOMAIN = 'cf.test';
const MAX_BYTES = 64 * 1024;

function mime(to: string, subject: string, body: string, messageId = `<${randomBytes(8).toString('hex')}@sender.test>`): string {
  return [`From: Alice <alice@sender.test>`, `To: ${to}`, `Subject: ${subject}`, `Message-ID: ${messageId}`, 'Date: Thu, 02 Jan 2025 03:04:05 +0000', 'MIME-Version: 1.0', 'Content-Type: text/plain; charset=utf-8', '', body, ''].join('\r\n');
}

let edge: CloudflareDev;
let svc: RunningSvc;
let inbox: string;
/** The zone of a domain on Email Routing as Cloudflare's enable call leaves it: three MX with priorities of Cloudflare's choosing, and its SPF record. */
const ROUTED = 'routed.example';
let dns: LoopbackDns;
const svcArgs = () => ['--dns', dns.server];

async function messages(): Promise<{ message_id: string; subject: string; text?: string; preview?: string }[]> {
  const res = await api<{ messages: { message_id: string; subject: string; preview?: string }[] }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages?limit=100&include_unauthenticated=true&include_spam=true`, { token: svc.ownerToken });
  return res.body.messages ?? [];
}

async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 30_000): Promise<T> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(200)) {
    const v = await probe();
    if (v) return v;
  }
  throw new Error(`timed out waiting for ${what}`);
}

t.before(async () => {
  dns = await startLoopbackDns({
    [ROUTED]: {
      MX: [{ exchange: 'route1.mx.cloudflare.net', priority: 13 }, { exchange: 'route2.mx.cloudflare.net', priority: 86 }, { exchange: 'route3.mx.cloudflare.net', priority: 24 }],
      TXT: ['v=spf1 include:_spf.mx.cloudflare.net ~all'],
    },
  });
  edge = await startCloudflareDev(path.join(tempDir('svc-cf-edge-'), 'edge'), ['--max-message-bytes', String(MAX_BYTES)]);
  svc = await startSvc({ env: NO_CLOUDFLARE_CALLS, args: svcArgs() });
  // Pairing is the same as with `svc edge`: the Worker's URL and its token.
  const paired = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { edge: { url: edge.url, token: edge.token } } });
  if (paired.status !== 200) throw new Error(paired.text);
  inbox = (await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'flow', domain: DOMAIN } })).body.inbox_id;
  await waitFor('the routing push', async () => {
    const r = await edgeCall<{ addresses?: string[] }>(edge.url, edge.token, 'GET', '/routing');
    return r.status === 200 && r.body.addresses?.includes(inbox);
  });
});
t.teardown(async () => {
  await svc?.stop();
  edge?.process.proc.kill('SIGTERM');
  await edge?.process.exited;
  await dns?.close();
});

t.test('edge.ready names the API URL and the token file, never the token', async (t) => {
  t.match(edge.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.equal(edge.tokenFile, path.join(edge.dataDir, 'api-token'));
  t.match(edge.token, /^edge_[A-Za-z0-9_-]{43}$/);
  t.equal((fs.statSync(edge.tokenFile).mode & 0o777).toString(8), '600');
  t.notOk(edge.output().includes(edge.token), 'the token is not printed');
  const routing = await edgeCall<{ edge: { hostname: string } }>(edge.url, edge.token, 'GET', '/routing');
  t.equal(routing.body.edge.hostname, 'route1.mx.cloudflare.net', 'the MX reported to the home');
});

t.test('a real MIME message handed to email() is sealed, stored, pulled by the home and received', async (t) => {
  const marker = `cfmarker-${randomBytes(6).toString('hex')}`;
  const id = `<first-${marker}@sender.test>`;
  // The home's event stream, as an agent would watch it.
  const ws = new WebSocket(`${svc.url.replace(/^http/, 'ws')}/v0/ws`, { headers: { authorization: `Bearer ${svc.ownerToken}` } });
  t.teardown(() => ws.close());
  const frames: { type: string; event_type?: string; message?: { message_id?: string; subject?: string } }[] = [];
  ws.on('message', (d) => frames.push(JSON.parse(String(d))));
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  ws.send(JSON.stringify({ type: 'subscribe', event_types: ['message.received'] }));
  await waitFor('the subscription', async () => frames.some((f) => f.type === 'subscribed'));
  const sent = await sendToWorker(edge.url, 'alice@sender.test', inbox, mime(inbox, `Hello ${marker}`, `Body line ${marker}\r\nsecond line`, id));
  t.equal(sent.status, 200, sent.text);
  const got = await waitFor('the message at the home', async () => (await messages()).find((m) => m.message_id === id));
  t.equal(got.subject, `Hello ${marker}`);
  const full = await api<{ text: string; from: string }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(id)}`, { token: svc.ownerToken });
  t.match(full.body.text, `Body line ${marker}`);
  t.match(full.body.from, 'alice@sender.test');
  const event = await waitFor('message.received', async () => frames.find((f) => f.event_type === 'message.received' && f.message?.message_id === id));
  t.equal(event.message?.subject, `Hello ${marker}`, 'message.received on the WebSocket');
  await waitFor('an empty buffer', async () => (await edgeCall<{ count: number }>(edge.url, edge.token, 'GET', '/objects')).body.count === 0);
  t.pass('the home acknowledged (deleted) the object after its commit');
});

t.test('an unknown recipient is rejected and nothing is stored', async (t) => {
  const sent = await sendToWorker(edge.url, 'alice@sender.test', `nobody@${DOMAIN}`, mime(`nobody@${DOMAIN}`, 'to nobody', 'x'));
  t.equal(sent.status, 400);
  t.match(sent.text, '550 5.1.1');
  const other = await sendToWorker(edge.url, 'alice@sender.test', 'someone@elsewhere.test', mime('someone@elsewhere.test', 'elsewhere', 'x'));
  t.equal(other.status, 400);
  t.equal((await edgeCall<{ count: number }>(edge.url, edge.token, 'GET', '/queue')).body.count, 0);
});

t.test('an oversized message is rejected and nothing is stored', async (t) => {
  const big = mime(inbox, 'big', 'y'.repeat(MAX_BYTES + 10));
  const sent = await sendToWorker(edge.url, 'alice@sender.test', inbox, big);
  t.equal(sent.status, 400);
  t.match(sent.text, '552 5.3.4');
  t.equal((await edgeCall<{ count: number }>(edge.url, edge.token, 'GET', '/queue')).body.count, 0);
});

t.test('the home killed with SIGKILL mid-pull: after a restart every message is there exactly once', async (t) => {
  const N = 24;
  const ids = Array.from({ length: N }, (_, i) => `<crash-${i}-${randomBytes(4).toString('hex')}@sender.test>`);
  // Deliver while the home pulls, and kill it partway.
  const delivering = (async () => {
    for (const [i, id] of ids.entries()) {
      const r = await sendToWorker(edge.url, 'alice@sender.test', inbox, mime(inbox, `crash ${i}`, `n ${i}`, id));
      if (r.status !== 200) throw new Error(r.text);
    }
  })();
  await waitFor('the first pulled message', async () => (await messages()).some((m) => ids.includes(m.message_id)), 30_000);
  svc.proc.kill('SIGKILL');
  await svc.exited;
  await delivering;
  svc = await startSvc({ home: svc.home, init: false, env: NO_CLOUDFLARE_CALLS, args: svcArgs() });
  const stored = await waitFor('every message', async () => {
    const got = (await messages()).map((m) => m.message_id).filter((m) => ids.includes(m));
    return got.length >= N ? got : null;
  }, 60_000);
  t.same([...stored].sort(), [...ids].sort(), 'each message exactly once');
  await waitFor('an empty buffer', async () => (await edgeCall<{ count: number }>(edge.url, edge.token, 'GET', '/objects')).body.count === 0);
  t.equal((await edgeCall<{ count: number }>(edge.url, edge.token, 'GET', '/queue')).body.count, 0, 'no queue entry left');
});

t.test('a domain behind the Worker plans Email Routing\u2019s three MX as Cloudflare\u2019s, and verifies them as Cloudflare publishes them', async (t) => {
  type Plan = { records: { type: string; name: string; value: string; priority?: number }[]; steps: string[]; warnings: string[] };
  type Domain = { domain_id: string; records: { type: string; value: string; state: string; reason?: string }[] };
  const owner = <T = Record<string, unknown>>(method: string, p: string, body?: unknown) => api<T>(svc.url, method, p, { token: svc.ownerToken, body });
  const d = (await owner<Domain>('POST', '/v0/domains', { domain: ROUTED })).body;
  const plan = await until('the plan from the Worker\u2019s report', async () => {
    const p = (await owner<Plan>('GET', `/v0/domains/${d.domain_id}/plan`)).body;
    return p.records.filter((r) => r.type === 'MX').length === 3 ? p : undefined;
  });
  t.same(plan.records.filter((r) => r.type === 'MX').map((r) => r.value), ['route1.mx.cloudflare.net', 'route2.mx.cloudflare.net', 'route3.mx.cloudflare.net']);
  t.same(plan.records.filter((r) => r.type === 'A' || r.type === 'AAAA' || r.type === 'PTR'), [], 'no address or reverse DNS of Cloudflare\u2019s MX');
  t.notOk(plan.records.some((r) => r.name.startsWith('_mta-sts.')), 'no MTA-STS: no edge of svc serves the policy behind Cloudflare\u2019s MX');
  t.equal(plan.records.find((r) => r.type === 'TXT' && r.name === ROUTED)?.value, 'v=spf1 include:_spf.mx.cloudflare.net -all', 'Cloudflare\u2019s SPF mechanism, no `mx` (Cloudflare\u2019s MX sends nothing of svc\u2019s)');
  t.match(plan.steps.join('\n'), /Cloudflare Email Routing publishes the MX records route1\.mx\.cloudflare\.net, route2\.mx\.cloudflare\.net, route3\.mx\.cloudflare\.net itself/);
  t.notMatch(plan.warnings.join('\n'), /no public address|public port 25/, 'none of the warnings of an edge of svc\u2019s own');
  const zone = (await owner('GET', `/v0/domains/${d.domain_id}/zone-file`)).text;
  t.match(zone, /; mx: published by Cloudflare Email Routing itself \(its priority may differ\)\n@\tIN\tMX\t10 route1\.mx\.cloudflare\.net\./);

  // The records as Cloudflare left them (priorities 13, 86, 24; its own SPF with ~all) are what the plan asks for.
  t.equal((await owner('POST', `/v0/domains/${d.domain_id}/verify`)).status < 300, true);
  const checked = await until('the MX and SPF checks', async () => {
    const r = (await owner<Domain>('GET', `/v0/domains/${d.domain_id}`)).body;
    const wanted = r.records.filter((x) => x.type === 'MX' || x.value.startsWith('v=spf1'));
    return wanted.length === 4 && wanted.every((x) => x.state !== 'pending') ? wanted : undefined;
  });
  for (const r of checked) t.equal(r.state, 'valid', `${r.type} ${r.value}: ${r.reason ?? ''}`);

  // A smart host for outbound: its provider's mechanism joins Cloudflare's, and Cloudflare's record alone no longer does.
  t.equal((await owner('PUT', '/v0/owner/transport', { edge: { url: edge.url, token: edge.token }, smtp: { host: 'smtp.relay.test', port: 587, spf_include: 'include:amazonses.com' } })).status, 200);
  const relayed = (await owner<Plan>('GET', `/v0/domains/${d.domain_id}/plan`)).body;
  t.equal(relayed.records.find((r) => r.type === 'TXT' && r.name === ROUTED)?.value, 'v=spf1 include:_spf.mx.cloudflare.net include:amazonses.com -all');
  t.equal((await owner('POST', `/v0/domains/${d.domain_id}/verify`)).status < 300, true);
  const spf = await until('the SPF check of the new plan', async () => {
    const r = (await owner<Domain>('GET', `/v0/domains/${d.domain_id}`)).body;
    const x = r.records.find((y) => y.value.includes('amazonses'));
    return x && x.state !== 'pending' ? x : undefined;
  });
  t.match(spf, { state: 'invalid', reason: /does not name include:amazonses\.com/ });
  t.equal((await owner('PUT', '/v0/owner/transport', { edge: { url: edge.url, token: edge.token } })).status, 200, 'back to the Worker alone');
});

t.test('outbound through this edge answers 501 not_supported, naming the smart host', async (t) => {
  const r = await edgeCall<{ error: string; message: string }>(edge.url, edge.token, 'POST', '/outbound', { ref: 'r1', mail_from: '', recipients: ['a@b.test'], raw: 'eA==' });
  t.equal(r.status, 501);
  t.equal(r.body.error, 'not_supported');
  t.match(r.body.message, 'smart host');
});

t.test('wrangler deploy --dry-run bundles the built Worker with its config', async (t) => {
  const dir = tempDir('svc-cf-deploy-');
  const built = path.join(repoRoot, 'dist', 'src', 'edge', 'cloudflare');
  for (const f of ['worker.js', 'wrangler.jsonc']) fs.copyFileSync(path.join(built, f), path.join(dir, f));
  const out = path.join(dir, 'out');
  const wrangler = path.join(repoRoot, 'node_modules', '.bin', 'wrangler');
  const text = execFileSync(wrangler, ['deploy', '--dry-run', '--outdir', out, '--config', path.join(dir, 'wrangler.jsonc')], {
    cwd: dir,
    env: { ...process.env, ...NO_CLOUDFLARE_CALLS, HOME: dir, XDG_CONFIG_HOME: dir },
    encoding: 'utf8',
    timeout: 120_000,
  });
  t.match(text, /--dry-run: exiting now/);
  t.match(text, /env\.BUFFER/);
  const bundle = fs.readFileSync(path.join(out, 'worker.js'), 'utf8');
  t.match(bundle, /svc-sealed-2/, 'the bundle is the Worker');
  t.notMatch(bundle, /from\s+["']node:/, 'no node: imports');
});

t.test('nothing on the Worker\'s disk and nothing it printed holds plaintext', async (t) => {
  const marker = `plainmarker-${randomBytes(6).toString('hex')}`;
  // Held at the Worker: the home is stopped, so the object stays in the buffer to be inspected.
  await svc.stop();
  const sent = await sendToWorker(edge.url, 'alice@sender.test', inbox, mime(inbox, `Subject ${marker}`, `Body ${marker}`));
  t.equal(sent.status, 200);
  t.equal((await edgeCall<{ count: number }>(edge.url, edge.token, 'GET', '/objects')).body.count, 1, 'the sealed object is stored');
  const files = filesUnder(edge.dataDir);
  t.ok(files.length > 0);
  for (const needle of [marker, Buffer.from(marker).toString('base64').slice(0, 16)]) {
    const hits = files.filter((f) => f.bytes.includes(needle)).map((f) => f.file);
    t.same(hits, [], `no stored file contains ${needle === marker ? 'the marker' : 'its base64'}`);
  }
  t.notOk(edge.output().includes(marker), 'the edge printed no message content');
  svc = await startSvc({ home: svc.home, init: false, env: NO_CLOUDFLARE_CALLS, args: svcArgs() });
  await waitFor('the held message', async () => (await messages()).some((m) => m.subject === `Subject ${marker}`));
  t.notOk(edge.output().includes(marker));
});

t.test('an installed svc without miniflare: edge.failed action_required, naming npm install -g wrangler@4.86.0', async (t) => {
  // A package laid out as npm installs it (bin, dist, package.json), with every dependency but
  // wrangler and miniflare, and an empty global npm root.
  const pkg = tempDir('svc-cf-nominiflare-');
  fs.cpSync(path.join(repoRoot, 'bin'), path.join(pkg, 'bin'), { recursive: true });
  fs.cpSync(path.join(repoRoot, 'dist'), path.join(pkg, 'dist'), { recursive: true });
  fs.copyFileSync(path.join(repoRoot, 'package.json'), path.join(pkg, 'package.json'));
  fs.mkdirSync(path.join(pkg, 'node_modules'));
  const modules = fs.realpathSync(path.join(repoRoot, 'node_modules'));
  for (const name of fs.readdirSync(modules)) {
    if (name === 'miniflare' || name === 'wrangler' || name === '.bin') continue;
    fs.symlinkSync(path.join(modules, name), path.join(pkg, 'node_modules', name));
  }
  const globalPrefix = tempDir('svc-cf-npm-prefix-');
  const { spawnSync } = await import('node:child_process');
  const run = spawnSync(process.execPath, [path.join(pkg, 'bin', 'svc'), 'edge', 'cloudflare', 'dev', '--port', '0', '--data', path.join(pkg, 'edge')], {
    env: { ...process.env, ...NO_CLOUDFLARE_CALLS, npm_config_prefix: globalPrefix, NPM_CONFIG_PREFIX: globalPrefix },
    encoding: 'utf8',
    timeout: 60_000,
  });
  t.equal(run.status, 1);
  t.equal(run.stdout, '', 'no edge.ready');
  const failed = JSON.parse(run.stderr.trim().split('\n').at(-1)!) as Record<string, string>;
  t.match(failed, { event: 'edge.failed', code: 'action_required', message: /miniflare/, fix: /npm install -g wrangler@4\.86\.0/ });
});
