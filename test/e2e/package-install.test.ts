/**
 * A real package (issue 33 §1): the tarball `npm pack` makes installs with `npm install -g` into an
 * empty prefix, with no checkout and no build step of ours, and `svc serve --init` runs from there.
 * It carries the docs (not the screenshots of the web app), LICENSE and CHANGELOG, and no benchmark, test or TypeScript source.
 *
 * The one native module, better-sqlite3-multiple-ciphers, installs the way it does for a user
 * with internet: prebuild-install downloads its prebuilt binary. Here the download comes from a
 * loopback mirror (the package's documented `npm_config_<name>_binary_host`) serving the binary
 * this checkout already runs, packed as the release asset would be — no internet, and no
 * minutes-long compile on a 2-core CI machine.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { promisify } from 'node:util';
import t from 'tap';
import semver from 'semver';
import { api, repoRoot, tempDir } from '../helpers/svc.js';

interface InstalledPackage {
  name: string;
  version: string;
  engines?: { node?: string };
}

/** Every package.json under a node_modules tree, nested ones included. */
function packagesUnder(dir: string): InstalledPackage[] {
  const found: InstalledPackage[] = [];
  if (!fs.existsSync(dir)) return found;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === '.bin') continue;
    const full = path.join(dir, entry.name);
    if (entry.name.startsWith('@')) {
      found.push(...packagesUnder(full));
      continue;
    }
    const manifest = path.join(full, 'package.json');
    if (fs.existsSync(manifest)) found.push(JSON.parse(fs.readFileSync(manifest, 'utf8')) as InstalledPackage);
    found.push(...packagesUnder(path.join(full, 'node_modules')));
  }
  return found;
}

t.setTimeout(20 * 60_000);

const work = tempDir('svc-package-');
const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { name: string; version: string; license: string };
// dist/ and web/dist/ were built by `npm test`; --ignore-scripts keeps pack from rebuilding them under running tests.
const packed = JSON.parse(execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: repoRoot, encoding: 'utf8' })) as { filename: string; files: { path: string }[] }[];
const tarball = path.join(work, packed[0].filename);
const files = packed[0].files.map((f) => f.path);
/** Pictures of the web app for the README on the repository's page (docs/web-app.md). */
const SCREENSHOTS = 'docs/screenshots/';

t.test('the package has a free name of its own, the project licence and the command svc', async (t) => {
  t.equal(pkg.name, 'svc-mail', 'not `svc`, which belongs to another npm package');
  t.equal(pkg.license, 'Apache-2.0');
  t.match(fs.readFileSync(path.join(repoRoot, 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0/);
});

t.test('the tarball carries what a user needs and nothing of the development tree', async (t) => {
  for (const needed of ['bin/svc', 'dist/src/cli/main.js', 'web/dist/index.html', 'README.md', 'LICENSE', 'CHANGELOG.md', 'docs/security.md', 'docs/service.md', 'docs/ports.md', 'package.json']) {
    t.ok(files.includes(needed), `carries ${needed}`);
  }
  const unwanted = files.filter((f) => /^(dist\/bench|test|src|workers|web\/src)\//.test(f) || (f.startsWith('bench/') && !/^bench\/(REPORT\.md|charts\/[^/]+\.svg)$/.test(f)) || f.endsWith('.ts') || f === 'tsconfig.json' || f.startsWith('.ci/'));
  t.same(unwanted, [], 'no benchmark, test, TypeScript source or CI file (the benchmark report and its charts are documents)');
  // Every link in the README to a file of the package resolves inside the package.
  const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const links = [...readme.matchAll(/\]\(([^)#]+)\)/g)].map((m) => m[1]).filter((l) => !/^[a-z]+:/.test(l));
  t.ok(links.length > 5, 'the README links its docs');
  // The screenshots (megabytes of PNG) stay in the repository: the package leaves docs/screenshots out.
  const screenshot = (l: string) => l.startsWith(SCREENSHOTS);
  for (const link of links.filter((l) => !screenshot(l))) t.ok(files.includes(link) || (link.endsWith('/') && files.some((f) => f.startsWith(link))), `README link ${link} is in the package`);
  t.ok(links.some(screenshot), 'the README shows screenshots');
  for (const link of links.filter(screenshot)) t.ok(fs.existsSync(path.join(repoRoot, link)), `README screenshot ${link} is in the repository`);
  t.same(files.filter(screenshot), [], 'no screenshot in the package');
  t.notOk(/\.\.\/shared\//.test(readme), 'no link out of the repository');
});

/**
 * A loopback stand-in for the native module's release downloads: the addon this checkout runs
 * (built for the running Node's ABI), packed as `build/Release/better_sqlite3.node` in the
 * asset's name. Answers the one asset prebuild-install asks for and counts the requests.
 */
async function prebuildMirror(): Promise<{ host: string; served: string[]; close(): Promise<void> }> {
  const pkgDir = path.join(repoRoot, 'node_modules', 'better-sqlite3-multiple-ciphers');
  const { version } = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string };
  const stage = tempDir('svc-prebuild-');
  fs.mkdirSync(path.join(stage, 'build', 'Release'), { recursive: true });
  fs.copyFileSync(path.join(pkgDir, 'build', 'Release', 'better_sqlite3.node'), path.join(stage, 'build', 'Release', 'better_sqlite3.node'));
  const asset = `better-sqlite3-multiple-ciphers-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync('tar', ['-czf', path.join(stage, asset), '-C', stage, 'build']);
  const served: string[] = [];
  const server = http.createServer((req, res) => {
    served.push(req.url ?? '');
    if (req.url !== `/v${version}/${asset}`) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/gzip' });
    fs.createReadStream(path.join(stage, asset)).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    host: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    served,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

t.test('npm install -g into an empty prefix, then svc serve --init from there', async (t) => {
  const prefix = path.join(work, 'prefix');
  const mirror = await prebuildMirror();
  t.teardown(() => mirror.close());
  const env = {
    ...process.env,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    npm_config_better_sqlite3_multiple_ciphers_binary_host: mirror.host,
  };
  // Not execFileSync: the mirror answers from this process's event loop.
  await promisify(execFile)('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', tarball], { cwd: work, env, maxBuffer: 16 * 1024 * 1024 });
  const svc = path.join(prefix, 'bin', 'svc');
  t.ok(fs.existsSync(svc), 'the svc command is installed');
  t.equal(mirror.served.length, 1, 'the native module came as its prebuilt release asset, not compiled');
  const installed = path.join(prefix, 'lib', 'node_modules', pkg.name);
  t.notOk(fs.existsSync(path.join(installed, 'tsconfig.json')), 'a release, not a checkout');
  // What npm installed (a published package's `overrides` do not apply): every package accepts Node 20 and 24,
  // and acme-client's ASN.1 schema exists once (two copies break CSR creation, docs/acme.md).
  const installedPackages = packagesUnder(path.join(installed, 'node_modules'));
  const excluding = installedPackages.filter((p) => typeof p.engines?.node === 'string' && !['20.19.0', '24.9.0'].every((v) => semver.satisfies(v, p.engines!.node!)));
  t.same(excluding.map((p) => `${p.name}@${p.version} ${p.engines!.node}`), [], 'no installed dependency excludes Node 20 or 24');
  t.equal(installedPackages.filter((p) => p.name === '@peculiar/asn1-schema').length, 1, 'one @peculiar/asn1-schema');
  const csr = execFileSync(process.execPath, ['--input-type=module', '-e', "const { crypto } = await import('acme-client'); const [, csr] = await crypto.createCsr({ commonName: 'mx.example.test' }); console.log(csr.toString().split('\\n')[0]);"], { cwd: installed, encoding: 'utf8' });
  t.match(csr, /BEGIN CERTIFICATE REQUEST/, "the installed acme-client makes a CSR (svc edge --acme)");
  t.match(execFileSync(svc, ['--version'], { encoding: 'utf8' }), new RegExp(`^svc ${pkg.version.replace(/\./g, '\\.')} \\(Node\\.js`));

  const home = path.join(tempDir(), 'home');
  const proc = spawn(svc, ['serve', '--init', '--home', home, '--port', '0', '--local-edge', '--smtp-port', '0'], { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => void proc.kill('SIGTERM'));
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    readline.createInterface({ input: proc.stdout }).on('line', (line) => {
      const data = JSON.parse(line) as Record<string, unknown>;
      if (data.event === 'server.ready') resolve(data);
    });
    proc.on('exit', (code) => reject(new Error(`svc exited with ${code}: ${stderr}`)));
  });
  const url = String(ready.url);
  const status = await api<{ setup_required: boolean }>(url, 'GET', '/v0/owner/status');
  t.equal(status.body.setup_required, true, 'the installed service answers');
  const shell = await fetch(`${url}/inboxes`);
  t.equal(shell.status, 200, 'and serves the web app');
  t.match(await shell.text(), /<script type="module"/, 'the built app');
  const token = (JSON.parse(fs.readFileSync(path.join(home, 'connection.json'), 'utf8')) as { owner_token: string }).owner_token;
  const inbox = await api(url, 'POST', '/v0/inboxes', { token, body: { username: 'installed', domain: 'example.test' } });
  t.equal(inbox.status, 200, 'the encrypted database works');
});
