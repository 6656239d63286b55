/**
 * svc supports Node 20 and Node 24 LTS (issue 21 §4, README "Node versions"): no production
 * dependency in the lockfile may declare an `engines.node` range that excludes either (cookie 2,
 * via @fastify/cookie and light-my-request, declared `>=22`; package.json's `overrides` pin the
 * cookie 1.1 line, which has the same API and accepts Node 18+).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import semver from 'semver';

const root = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '..', '..');
const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; dev?: boolean; devOptional?: boolean; engines?: { node?: string } | string[] }> };
const SUPPORTED = ['20.19.0', '20.20.2', '24.0.0', '24.9.0'];

t.test('every production dependency accepts Node 20 and Node 24', async (t) => {
  const refused: string[] = [];
  let checked = 0;
  for (const [where, entry] of Object.entries(lock.packages)) {
    if (where === '' || entry.dev || entry.devOptional) continue;
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    if (!range) continue;
    checked++;
    for (const version of SUPPORTED) if (!semver.satisfies(version, range)) refused.push(`${where}@${entry.version}: engines.node ${range} excludes ${version}`);
  }
  t.ok(checked > 50, `${checked} declared ranges checked`);
  t.same(refused, []);
});

t.test('svc itself declares both', async (t) => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
  for (const version of SUPPORTED) t.ok(semver.satisfies(version, pkg.engines.node), `${pkg.engines.node} accepts ${version}`);
});
