/**
 * `svc edge cloudflare init|deploy|status` against hostile input: Worker names and domains that
 * would escape the deploy directory or name another zone are refused before anything is written;
 * the Cloudflare API token (by file and by environment) appears in no output and no file; --api-base
 * reaches only a loopback stand-in and --url only an https origin; the edge token is 0600; and
 * wrangler's output cannot choose the host the home pairs with. Real service, real CLI, the
 * schema-validating Cloudflare API stand-in on loopback.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { api, startSvc, svcBin, tempDir, type RunningSvc } from '../helpers/svc.js';
import { startCloudflareApi, type FakeCloudflare } from '../helpers/cloudflare-api.js';
import { NO_CLOUDFLARE_CALLS } from '../helpers/cloudflare-edge.js';
import { apiBaseOf, normalizeOrRefuse, workerOrigin, workersDevUrlOf, WORKER_NAME } from '../../src/cli/edge-cloudflare-deploy.js';

/** The CLI is slow to start on a loaded machine: every list is checked in-process, these few through the CLI too. */
const THROUGH_CLI = 3;
/*
 * CONCURRENT_RUNS: CLI runs that share no directory (or are refused before touching theirs) start
 * side by side and are checked afterwards, each against the same expectations as before; a run's
 * CPU (mostly Node's start-up) then uses both cores.
 */

const DOMAIN = 'cfdeploy-sec.test';
const WORKER_URL = 'https://svc-edge.sec-sub.workers.dev';

function svc(args: string[], env: NodeJS.ProcessEnv = {}, stdin = ''): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [svcBin, 'edge', 'cloudflare', ...args], { env: { ...process.env, ...NO_CLOUDFLARE_CALLS, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.stderr.on('data', (d) => (out += d));
    proc.stdin.end(stdin);
    proc.on('close', (code) => resolve({ code, out }));
  });
}

/** Every file under dir, recursively, with its bytes. */
function filesUnder(dir: string): { file: string; bytes: Buffer }[] {
  const out: { file: string; bytes: Buffer }[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(p));
    else if (entry.isFile()) out.push({ file: p, bytes: fs.readFileSync(p) });
  }
  return out;
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

t.test('hostile Worker names are refused with exit 1 and nothing written', async (t) => {
  const names = ['Svc-Edge', 'SVC', 'svc.edge', 'svc/edge', '../edge', '..', '.', 'a'.repeat(64), '-svc', 'svc-', 'svc edge', 'svc;id', '$(id)', '`id`', 'svc\nedge', 'svc_edge', 'svç', '%2e%2e'];
  for (const name of names) t.notOk(WORKER_NAME.test(name), `--name ${JSON.stringify(name)}`);
  // Each CLI run has a directory of its own, so they run side by side (CONCURRENT_RUNS).
  const refused = names.slice(2, 2 + THROUGH_CLI).map((name) => ({ name, dir: path.join(tempDir('svc-cfds-'), 'deploy') }));
  const empty = path.join(tempDir('svc-cfds-'), 'deploy');
  const longest = path.join(tempDir('svc-cfds-'), 'deploy');
  const [runs, r, longestRun] = await Promise.all([
    Promise.all(refused.map(({ name, dir }) => svc(['init', '--dir', dir, `--name=${name}`, '--domain', DOMAIN]))),
    svc(['init', '--dir', empty, '--name', '']),
    svc(['init', '--dir', longest, '--name', 'a'.repeat(63)]),
  ]);
  refused.forEach(({ name, dir }, i) => {
    t.equal(runs[i].code, 1, `--name ${JSON.stringify(name)}`);
    t.match(runs[i].out, /validation_error/);
    t.notOk(fs.existsSync(dir), `nothing written for ${JSON.stringify(name)}`);
  });
  t.equal(r.code, 1);
  t.notOk(fs.existsSync(empty));
  t.equal(longestRun.code, 0, '63 characters is the limit, not less');
});

t.test('hostile domains and account ids are refused with exit 1 and nothing written', async (t) => {
  const domains = [
    'example.com..', 'a..b', '.example.com', '127.0.0.1', '[::1]', '::1', '1.2.3.4.5', '0x7f.1', 'localhost', 'example', 'example.123',
    'ex ample.com', 'example.com;rm -rf ~', '$(id).example.com', '`id`.example.com', 'a|b.com', 'a&b.com', 'a>b.com', "a'b.com", 'a"b.com',
    'example.com/evil', 'user@example.com', 'example.com:25', '*.example.com', 'ex_ample.com', '-a.com', 'a-.com', 'xn--.com', 'xn--zz.com',
    'a.b\u0000.com', `${'x'.repeat(64)}.com`, `${'abcdefghi.'.repeat(26)}com`,
    // IDNA would turn these into another name silently: refused, the owner must type the name they mean.
    'exam\u200bple.com', 'exam\u00adple.com', 'example\uff0ecom', '%65xample.com', 'ex%2fample.com',
  ];
  for (const domain of domains) t.throws(() => normalizeOrRefuse(domain), { code: 'validation_error' }, `--domain ${JSON.stringify(domain)}`);
  // Each CLI run has a directory of its own, so they run side by side (CONCURRENT_RUNS).
  const byDomain = ['a..b', '$(id).example.com', '%65xample.com'].map((domain) => ({ domain, dir: path.join(tempDir('svc-cfds-'), 'deploy') }));
  const byId = ['../'.repeat(11)].map((id) => ({ id, dir: path.join(tempDir('svc-cfds-'), 'deploy') }));
  // A look-alike is a different name: it is kept in its xn-- form, never read as example.com.
  const dir = path.join(tempDir('svc-cfds-'), 'deploy');
  const [domainRuns, idRuns, r] = await Promise.all([
    Promise.all(byDomain.map(({ domain, dir }) => svc(['init', '--dir', dir, '--domain', DOMAIN, `--domain=${domain}`]))),
    Promise.all(byId.map(({ id, dir }) => svc(['init', '--dir', dir, '--account-id', id]))),
    svc(['init', '--dir', dir, '--domain', 'ex\u0430mple.com', '--domain', 'EXAMPLE.org.', '--json']),
  ]);
  byDomain.forEach(({ domain, dir }, i) => {
    t.equal(domainRuns[i].code, 1, `--domain ${JSON.stringify(domain)}`);
    t.notOk(fs.existsSync(dir), `nothing written for ${JSON.stringify(domain)}`);
  });
  byId.forEach(({ id, dir }, i) => {
    t.equal(idRuns[i].code, 1, `--account-id ${JSON.stringify(id)}`);
    t.notOk(fs.existsSync(dir));
  });
  t.equal(r.code, 0, r.out);
  t.same(JSON.parse(fs.readFileSync(path.join(dir, 'svc-cloudflare.json'), 'utf8')).domains, ['xn--exmple-4nf.com', 'example.org']);
});

t.test('a refused rerun of init leaves the deploy directory as it was', async (t) => {
  const dir = path.join(tempDir('svc-cfds-'), 'deploy');
  t.equal((await svc(['init', '--dir', dir, '--domain', DOMAIN])).code, 0);
  const before = filesUnder(dir).map((f) => [f.file, f.bytes.toString('base64')]);
  for (const args of [['--name', '../x'], ['--domain', 'a..b'], ['--account-id', 'nope']]) {
    t.equal((await svc(['init', '--dir', dir, ...args])).code, 1, args.join(' '));
  }
  t.same(filesUnder(dir).map((f) => [f.file, f.bytes.toString('base64')]), before);
});

t.test('the edge token is 0600 in a 0700 directory; every file written is private', async (t) => {
  const dir = path.join(tempDir('svc-cfds-'), 'deploy');
  // A permissive umask must not widen anything.
  const r = await new Promise<number | null>((resolve) => {
    const proc = spawn('/bin/sh', ['-c', 'umask 000 && exec "$0" "$@"', process.execPath, svcBin, 'edge', 'cloudflare', 'init', '--dir', dir, '--domain', DOMAIN], { env: { ...process.env, ...NO_CLOUDFLARE_CALLS }, stdio: 'ignore' });
    proc.on('close', resolve);
  });
  t.equal(r, 0);
  t.equal(fs.statSync(dir).mode & 0o777, 0o700);
  t.equal(fs.statSync(path.join(dir, 'api-token')).mode & 0o777, 0o600);
  for (const f of filesUnder(dir)) t.equal(fs.statSync(f.file).mode & 0o077, 0, `${path.basename(f.file)} is private`);
});

t.test('--api-base reaches only an http stand-in on a loopback address', async (t) => {
  const dir = path.join(tempDir('svc-cfds-'), 'deploy');
  t.equal((await svc(['init', '--dir', dir, '--domain', DOMAIN])).code, 0);
  const port = new URL(cf.apiBase).port;
  const bases = [
    'https://evil.example/client/v4', 'https://api.cloudflare.com.evil.example', 'http://10.0.0.1/client/v4', 'http://169.254.169.254/', 'http://evil.example',
    'file:///etc/passwd', `http://user:pw@127.0.0.1:${port}/client/v4`, `http://:pw@127.0.0.1:${port}/`, `http://localhost:${port}/client/v4`,
    `http://127.0.0.1.evil.example:${port}/`, `http://[::ffff:7f00:1]:${port}/`, `https://127.0.0.1:${port}/`, `ftp://127.0.0.1:${port}/`,
    `http://127.0.0.1:${port}/client/v4?x=1`, `http://127.0.0.1:${port}/client/v4#f`, 'javascript:alert(1)', 'not a url', '//127.0.0.1/',
  ];
  for (const base of bases) t.throws(() => apiBaseOf(base), { code: 'validation_error' }, `--api-base ${base}`);
  t.equal(apiBaseOf(`http://127.0.0.1:${port}/client/v4/`), `http://127.0.0.1:${port}/client/v4`);
  const seen = cf.requests.length;
  // Every run is refused before it reads or writes anything, so they run side by side (CONCURRENT_RUNS).
  const attempts = [bases[0], bases[2], bases[6]].flatMap((base) => ['deploy', 'status'].map((action) => ({ base, action })));
  const answers = await Promise.all(attempts.map(({ base, action }) => {
    const args = action === 'deploy' ? ['deploy', '--dir', dir, '--routing-only', '--catch-all', '--url', WORKER_URL] : ['status', '--dir', dir];
    return svc([...args, '--api-base', base, '--home', home.home], { CLOUDFLARE_API_TOKEN: cf.token });
  }));
  attempts.forEach(({ base, action }, i) => {
    t.equal(answers[i].code, 1, `${action} --api-base ${base}`);
    t.match(answers[i].out, /validation_error/);
    t.notMatch(answers[i].out, cf.token);
  });
  t.equal(cf.requests.length, seen, 'no request reached the stand-in either');
  t.same(cf.emailRouting(DOMAIN).rules, []);
});

t.test('--url must be a bare https origin; a refused one pairs nothing and changes nothing', async (t) => {
  const dir = path.join(tempDir('svc-cfds-'), 'deploy');
  t.equal((await svc(['init', '--dir', dir, '--domain', DOMAIN])).code, 0);
  const settings = fs.readFileSync(path.join(dir, 'svc-cloudflare.json'), 'utf8');
  const edgesBefore = (await api<{ edges: { url: string }[] }>(home.url, 'GET', '/v0/owner/transport', { token: home.ownerToken })).body.edges;
  const urls = [
    'http://svc-edge.sec-sub.workers.dev', 'https://user:pw@svc-edge.sec-sub.workers.dev', 'https://evil.example@svc-edge.sec-sub.workers.dev',
    'https://svc-edge.sec-sub.workers.dev@evil.example', 'https://svc-edge.sec-sub.workers.dev/path', 'https://svc-edge.sec-sub.workers.dev/..',
    'https://svc-edge.sec-sub.workers.dev?x=1', 'https://svc-edge.sec-sub.workers.dev#f', 'https://svc-edge.sec-sub.workers.dev\\@evil.example',
    'https://svc-edge.sec-sub.workers.dev%2f@evil.example', 'https://127.0.0.1', 'https://10.0.0.1:8443', 'https://[::1]', 'https://a..b',
    'https://-a.example.com', 'https://localhost', 'https://xn--.example', 'javascript:alert(1)', 'file:///etc/passwd', 'svc-edge.sec-sub.workers.dev',
    'https://svc edge.workers.dev', 'https://svc-edge.sec-sub.workers.dev\n', 'https://ex\u0430mple.com', 'http://127.0.0.1:8791',
  ];
  for (const url of urls) t.throws(() => workerOrigin(url), { code: 'validation_error' }, `--url ${JSON.stringify(url)}`);
  // Every run is refused before it writes anything, so they run side by side (CONCURRENT_RUNS).
  const refusedUrls = [urls[1], urls[4], urls[9]];
  const answers = await Promise.all(refusedUrls.map((url) => svc(['deploy', '--dir', dir, '--routing-only', `--url=${url}`, '--home', home.home])));
  refusedUrls.forEach((url, i) => {
    t.equal(answers[i].code, 1, `--url ${JSON.stringify(url)}`);
    t.match(answers[i].out, /validation_error/);
  });
  t.equal(fs.readFileSync(path.join(dir, 'svc-cloudflare.json'), 'utf8'), settings, 'the settings keep no URL');
  const edgesAfter = (await api<{ edges: { url: string }[] }>(home.url, 'GET', '/v0/owner/transport', { token: home.ownerToken })).body.edges;
  t.same(edgesAfter, edgesBefore, 'the home paired with nothing');
  // A custom domain with a port is an origin too, and is stored without a trailing slash.
  // (A home that does not exist: the test pairs nothing with a host off loopback.)
  const ok = await svc(['deploy', '--dir', dir, '--routing-only', '--url', 'https://Mail-Edge.Example.com:8443/', '--home', path.join(tempDir('svc-cfds-'), 'no-home')]);
  t.equal(ok.code, 0, ok.out);
  t.equal(JSON.parse(fs.readFileSync(path.join(dir, 'svc-cloudflare.json'), 'utf8')).url, 'https://mail-edge.example.com:8443');
});

t.test('the Cloudflare API token, by file, stdin or environment, is in no output and no file', async (t) => {
  const secretDir = tempDir('svc-cfds-tok-');
  const tokenFile = path.join(secretDir, 'cf.token');
  fs.writeFileSync(tokenFile, cf.token + '\n', { mode: 0o600 });
  const dir = path.join(tempDir('svc-cfds-'), 'deploy');
  const outputs: string[] = [];
  const run = async (args: string[], env: NodeJS.ProcessEnv = {}, stdin = '') => {
    const r = await svc(args, env, stdin);
    outputs.push(r.out);
    return r;
  };
  t.equal((await run(['init', '--dir', dir, '--domain', DOMAIN], { CLOUDFLARE_API_TOKEN: cf.token })).code, 0);
  // No running home here: the catch-all needs no inbox list, and nothing is paired with a host off loopback.
  const noHome = path.join(tempDir('svc-cfds-'), 'no-home');
  const common = ['--dir', dir, '--api-base', cf.apiBase, '--home', noHome];
  const byFile = await run(['deploy', ...common, '--routing-only', '--catch-all', '--url', WORKER_URL, '--api-token-file', tokenFile]);
  t.equal(byFile.code, 0, byFile.out);
  const byEnv = await run(['deploy', ...common, '--routing-only', '--catch-all'], { CLOUDFLARE_API_TOKEN: cf.token });
  t.equal(byEnv.code, 0, byEnv.out);
  const byStdin = await run(['status', ...common, '--api-token-file', '-', '--json'], {}, cf.token + '\n');
  t.equal(byStdin.code, 0, byStdin.out);
  t.equal(JSON.parse(byStdin.out.trim().split('\n').at(-1)!).email_routing[0].catch_all_to_worker, true, 'the token from stdin was used');
  // A token Cloudflare refuses is not echoed either, nor is one whose file is unreadable.
  const wrong = `${cf.token.slice(0, -4)}WXYZ`;
  const refused = await run(['deploy', ...common, '--routing-only', '--catch-all'], { CLOUDFLARE_API_TOKEN: wrong });
  t.equal(refused.code, 10, refused.out);
  t.notMatch(refused.out, wrong);
  const spaced = await run(['status', '--dir', dir, '--api-base', cf.apiBase], { CLOUDFLARE_API_TOKEN: `${cf.token} extra` });
  t.equal(spaced.code, 1);
  t.notMatch(spaced.out, cf.token);

  for (const out of outputs) t.notMatch(out, cf.token);
  const leaks = [...filesUnder(dir), ...filesUnder(home.home), ...(fs.existsSync(noHome) ? filesUnder(noHome) : [])].filter((f) => f.bytes.includes(cf.token) || f.bytes.includes(wrong));
  t.same(leaks.map((f) => f.file), [], 'no file of the deploy directory or the home holds the Cloudflare token');
  t.same(cf.violations, []);
});

t.test("wrangler's output cannot choose the host the home pairs with", async (t) => {
  const name = 'svc-edge';
  t.equal(workersDevUrlOf('Uploaded svc-edge (3.1 sec)\nDeployed svc-edge triggers (0.5 sec)\n  https://svc-edge.you.workers.dev\nCurrent Version ID: 1', name), 'https://svc-edge.you.workers.dev');
  t.equal(workersDevUrlOf('\x1b[32m  https://svc-edge.you.workers.dev\x1b[0m', name), 'https://svc-edge.you.workers.dev', 'colour codes around it');
  const hostile = [
    'https://evil.example',
    'https://evil.workers.dev',
    'https://other-worker.you.workers.dev',
    'https://svc-edge.you.workers.dev.evil.example',
    'https://svc-edge.you.workers.dev@evil.example',
    'https://svc-edge.you.workers.dev/../x',
    'https://svc-edge.you.workers.dev:444',
    'https://svc-edge.a.b.workers.dev',
    'https://evil.example/?u=https://svc-edge.you.workers.dev',
    'x=https://svc-edge.you.workers.dev',
    'http://svc-edge.you.workers.dev',
    'https://SVC-EDGE.you.workers.dev',
    'https://svc-edge.-you.workers.dev',
    'https://svc-edgex.you.workers.dev',
    'https://xsvc-edge.you.workers.dev',
    'https://svc-edge.you.workers.dev\x1b[0m.evil.example',
    `https://svc-edge.${'y'.repeat(64)}.workers.dev`,
    'https://svc-edge.you.workers.dev https://svc-edge.attacker.workers.dev',
    '',
  ];
  for (const line of hostile) t.equal(workersDevUrlOf(`Deployed\n  ${line}\n`, name), null, JSON.stringify(line));
  t.equal(workersDevUrlOf('https://svc-edge.you.workers.dev\nhttps://svc-edge.you.workers.dev', name), 'https://svc-edge.you.workers.dev', 'the same URL twice is one');
  t.equal(workersDevUrlOf('https://x.you.workers.dev', 'X'), null, 'an invalid configured name matches nothing');
});
