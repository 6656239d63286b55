/**
 * svc supports Node 20 and Node 24 LTS (issue 21 §4, README "Node versions"): no production
 * dependency in the lockfile may declare an `engines.node` range that excludes either (cookie 2,
 * via @fastify/cookie 11.1.1+ and light-my-request 6.7+, declared `>=22`; package.json pins
 * @fastify/cookie 11.1.0 and light-my-request 6.6.0, which use cookie 1.x (Node 18+) — pins, not
 * `overrides`, because a published package's overrides do not apply when it is installed).
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
