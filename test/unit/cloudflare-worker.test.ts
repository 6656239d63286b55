/**
 * The Cloudflare Worker (src/edge/cloudflare/worker.ts) is one self-contained file for the Workers
 * runtime, so it repeats the constants it shares with the edge instead of importing them. This
 * checks that each copy still equals the edge's value (the formats and limits of docs/edge.md).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../helpers/svc.js';
import * as sealed from '../../src/edge/sealed.js';
import * as limits from '../../src/edge/limits.js';
import { OBJECT_KEY_PATTERN } from '../../src/edge/object-key.js';
import { EDGE_ERRORS } from '../../src/edge/api-errors.js';
import { VIA_CLOUDFLARE } from '../../src/inbound/message-auth.js';
import { CLOUDFLARE_WORKER_NAME_PATTERN } from '../../src/edge/identity.js';
import { SELFTEST_LOCAL_PART } from '../../src/edge/routing.js';

const source = fs.readFileSync(path.join(repoRoot, 'src', 'edge', 'cloudflare', 'worker.ts'), 'utf8');

/** The value of `const NAME = <expr>;` in the Worker (a literal or a product of numbers). */
function workerConstant(name: string): unknown {
  const match = new RegExp(`^const ${name} = (.+);$`, 'm').exec(source);
  if (!match) throw new Error(`${name} not found in worker.ts`);
  const expr = match[1].replace(/_/g, '');
  if (!/^(['"][^'"]*['"]|[\d\s*]+)$/.test(expr.replace(/\\n/g, ''))) throw new Error(`${name}: unexpected expression ${expr}`);
  return JSON.parse(expr.startsWith("'") ? `"${expr.slice(1, -1)}"` : String(expr.split('*').reduce((p, n) => p * Number(n), 1)));
}

t.test('the Worker\'s copies of the sealed format and limits equal the edge\'s', async (t) => {
  const pairs: [string, unknown][] = [
    ['SEAL_ALG', sealed.SEAL_ALG],
    ['SEAL_ENC', sealed.SEAL_ENC],
    ['SEAL_CONTENT_TYPE', sealed.SEAL_CONTENT_TYPE],
    ['SEAL_V2_CONTENT_TYPE', sealed.SEAL_V2_CONTENT_TYPE],
    ['SEALED_V2_MAGIC', sealed.SEALED_V2_MAGIC.toString('latin1')],
    ['BINARY_SEAL_MIN_BYTES', sealed.BINARY_SEAL_MIN_BYTES],
    ['OBJECT_KEY_PATTERN', OBJECT_KEY_PATTERN],
    ['DEFAULT_MAX_MESSAGE_BYTES', limits.DEFAULT_MAX_MESSAGE_BYTES],
    ['LIST_DEFAULT_LIMIT', limits.LIST_DEFAULT_LIMIT],
    ['LIST_MAX_LIMIT', limits.LIST_MAX_LIMIT],
    ['BATCH_MAX_KEYS', limits.BATCH_MAX_KEYS],
    ['BATCH_FETCH_MAX_BYTES', limits.BATCH_FETCH_MAX_BYTES],
    ['WAIT_MAX_MS', limits.WAIT_MAX_MS],
    ['API_BODY_LIMIT', limits.API_BODY_LIMIT],
    ['MAX_ROUTED_DOMAINS', limits.MAX_ROUTED_DOMAINS],
    ['MAX_ROUTED_ADDRESSES', limits.MAX_ROUTED_ADDRESSES],
    ['VIA_CLOUDFLARE', VIA_CLOUDFLARE],
    ['WORKER_NAME_PATTERN', CLOUDFLARE_WORKER_NAME_PATTERN],
    ['SELFTEST_LOCAL_PART', SELFTEST_LOCAL_PART],
  ];
  for (const [name, expected] of pairs) t.equal(workerConstant(name), expected, name);
});

t.test('the Worker answers every edge error code with the edge\'s status', async (t) => {
  for (const [code, status] of Object.entries(EDGE_ERRORS)) t.match(source, new RegExp(`\\b${code}: ${status},`), code);
});

t.test('the Worker has no imports and no logging', async (t) => {
  t.notMatch(source, /^import /m, 'no imports (workerd loads the one file)');
  t.notMatch(source, /\bconsole\./, 'no console calls');
  t.notMatch(source, /from ['"]node:/);
});
