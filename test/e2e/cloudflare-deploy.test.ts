/**
 * `svc edge cloudflare init|deploy|status` with real parts: the real wrangler (4.86.0, the
 * devDependency) bundles what init wrote (`deploy --dry-run`: no Cloudflare account is reachable
 * from the tests, so the upload and `wrangler secret put EDGE_TOKEN` are not run here), and Email
 * Routing is configured against the local Cloudflare API stand-in, which validates every request
 * against Cloudflare's published OpenAPI schema. A real home lists the addresses to route and is
 * paired with the Worker's URL.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { api, startSvc, svcBin, tempDir, type RunningSvc } from '../helpers/svc.js';
import { startCloudflareApi, type FakeCloudflare } from '../helpers/cloudflare-api.js';
import { NO_CLOUDFLARE_CALLS } from '../helpers/cloudflare-edge.js';

const DOMAIN = 'cfdeploy.test';

/** Runs `svc edge cloudflare ARGS` without blocking this process (the Cloudflare stand-in answers from here). */
function svc(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [svcBin, 'edge', 'cloudflare', ...args], { env: { ...process.env, ...NO_CLOUDFLARE_CALLS, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.stderr.on('data', (d) => (out += d));
    proc.on('close', (code) => resolve({ code, out }));
  });
}

let cf: FakeCloudflare;
let home: RunningSvc;
t.before(async () => {
  cf = await startCloudflareApi({ zones: [DOMAIN] });
  home = await startSvc({ env: NO_CLOUDFLARE_CALLS });
});
t.teardown(async () => {
  await home?.stop();
  await cf?.close();
});

t.test('init writes a config the real wrangler bundles; init again changes nothing', async (t) => {
  const dir = path.join(tempDir('svc-cfd-'), 'deploy');
  const first = await svc(['init', '--dir', dir, '--name', 'svc-edge-t', '--domain', DOMAIN]);
  t.equal(first.code, 0, first.out);
  const token = fs.readFileSync(path.join(dir, 'api-token'), 'utf8');
  t.match(token, /^edge_[A-Za-z0-9_-]{43}\n$/);
  t.equal(fs.statSync(path.join(dir, 'api-token')).mode & 0o777, 0o600);
  const wrangler = JSON.parse(fs.readFileSync(path.join(dir, 'wrangler.json'), 'utf8'));
  t.same(wrangler.r2_buckets, [{ binding: 'BUFFER', bucket_name: 'svc-edge-t-buffer' }]);
  t.same(wrangler.observability, { enabled: false });
  t.equal(wrangler.name, 'svc-edge-t');
  const again = await svc(['init', '--dir', dir]);
  t.equal(again.code, 0, again.out);
  t.match(again.out, /configuration unchanged/);
  t.equal(fs.readFileSync(path.join(dir, 'api-token'), 'utf8'), token, 'the edge token is kept');
  const dry = await svc(['deploy', '--dir', dir, '--dry-run']);
  t.equal(dry.code, 0, dry.out);
  const bundle = path.join(dir, 'bundle', 'worker.js');
  t.ok(fs.statSync(bundle).size > 1000, 'wrangler wrote the bundle');
  t.match(fs.readFileSync(bundle, 'utf8'), /cloudflare-email-routing/);
  t.notMatch(dry.out, token.trim());
});

t.test('deploy --routing-only enables Email Routing and creates exactly one rule per address; rerun adds none', async (t) => {
  const inbox = (await api<{ inbox_id: string }>(home.url, 'POST', '/v0/inboxes', { token: home.ownerToken, body: { username: 'agent1', domain: DOMAIN } })).body.inbox_id;
  const dir = path.join(tempDir('svc-cfd-'), 'deploy');
  t.equal((await svc(['init', '--dir', dir, '--domain', DOMAIN])).code, 0);
  const tokenFile = path.join(tempDir('svc-cfd-tok-'), 'cf.token');
  fs.writeFileSync(tokenFile, cf.token + '\n', { mode: 0o600 });
  const args = ['deploy', '--dir', dir, '--routing-only', '--api-token-file', tokenFile, '--api-base', cf.apiBase, '--home', home.home, '--url', 'https://svc-edge.example-sub.workers.dev'];
  const r = await svc(args);
  t.equal(r.code, 0, r.out);
  const routing = cf.emailRouting(DOMAIN);
  t.equal(routing.enabled, true);
  const routed = () => routing.rules.map((x) => (x.matchers[0] as { value: string }).value).sort();
  t.same(routed(), [inbox, `svc-selftest@${DOMAIN}`].sort());
  t.ok(routing.rules.every((x) => JSON.stringify(x.actions) === JSON.stringify([{ type: 'worker', value: ['svc-edge'] }])));
  t.same(cf.violations, []);
  const transport = await api<{ edges: { url: string }[] }>(home.url, 'GET', '/v0/owner/transport', { token: home.ownerToken });
  t.same(transport.body.edges.map((e) => e.url), ['https://svc-edge.example-sub.workers.dev'], 'the home is paired with the Worker');

  const again = await svc(args);
  t.equal(again.code, 0, again.out);
  t.match(again.out, /already enabled; 0 new rule/);
  t.match(again.out, /already paired/);
  t.equal(routing.rules.length, 2, 'no duplicate rules');

  const catchAll = await svc([...args, '--catch-all']);
  t.equal(catchAll.code, 0, catchAll.out);
  t.same(routing.catchAll.actions, [{ type: 'worker', value: ['svc-edge'] }]);
  t.same(routing.catchAll.matchers, [{ type: 'all' }]);

  const status = await svc(['status', '--dir', dir, '--api-token-file', tokenFile, '--api-base', cf.apiBase, '--home', home.home, '--json']);
  t.equal(status.code, 0, status.out);
  const view = JSON.parse(status.out.trim().split('\n').at(-1)!);
  t.equal(view.url, 'https://svc-edge.example-sub.workers.dev');
  t.equal(view.home.paired, true);
  t.equal(view.email_routing[0].enabled, true);
  t.equal(view.email_routing[0].catch_all_to_worker, true);
  t.same(view.email_routing[0].routed_addresses.sort(), routed());
  t.ok(view.wrangler, 'wrangler is found');
  t.same(cf.violations, []);
  for (const out of [r.out, again.out, catchAll.out, status.out]) t.notMatch(out, cf.token);
  for (const f of fs.readdirSync(dir)) if (fs.statSync(path.join(dir, f)).isFile()) t.notMatch(fs.readFileSync(path.join(dir, f), 'utf8'), cf.token, `${f} holds no Cloudflare token`);
});
