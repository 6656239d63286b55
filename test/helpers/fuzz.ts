/**
 * Seeded hostile-input generation for the fuzz tests (issue 10 item 3), the REST route table
 * read from the real fastify app, and the check that an error answer is a documented one.
 * Every generator takes the PRNG so a failing case is reproduced by its seed (printed by the
 * tests) — nothing here uses Math.random.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../../src/db/open.js';
import { buildApp } from '../../src/http/app.js';
import { ERROR_STATUS, errorName, type ErrorCode } from '../../src/http/errors.js';
import { OwnerAccount } from '../../src/owner/owner-account.js';
import { Bus } from '../../src/supervisor/bus.js';
import { CpuPool } from '../../src/supervisor/pool.js';

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
export class Rng {
  #state: number;
  constructor(readonly seed: number) {
    this.#state = seed >>> 0;
  }
  next(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i++) out[i] = Math.floor(this.next() * 256);
    return out;
  }
}

/** The seed for this run: `SVC_FUZZ_SEED` to replay a failure, else a fixed default so CI is stable. */
export function fuzzSeed(fallback: number): number {
  const fromEnv = Number(process.env.SVC_FUZZ_SEED);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : fallback;
}

/** Strings that have broken parsers before: traversal, NULs, control characters, odd Unicode. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '..',
  '../../etc/passwd',
  '..\\..\\windows',
  '%2e%2e%2f',
  'a\u0000b',
  '\u0000',
  'line\r\nX-Injected: yes',
  '\r\n\r\n',
  '\ud800',
  '\udfff\ud800',
  '\u202e\u2066',
  '\uffff\ufffe',
  '😀'.repeat(100),
  'x'.repeat(70_000),
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '"; DROP TABLE messages; --',
  '${7*7}{{7*7}}',
  '__proto__',
  'constructor',
  '-1',
  '1e999',
  'NaN',
  'null',
  'true',
  '[]',
  '{}',
  'a@b',
  '@',
  'evt_00000000000000000000',
  '0000-00-00T00:00:00Z',
  '2024-13-45T99:99:99Z',
];

/** Path segments that try to escape the route or break URL decoding (sent raw, already encoded). */
export const HOSTILE_SEGMENTS: readonly string[] = [
  '..%2F..%2Fetc%2Fpasswd',
  '%2e%2e%2f%2e%2e%2f',
  '..%252F',
  '%00',
  'a%00b',
  '%0d%0aX-Injected:%20yes',
  '%FF%FE',
  '%C0%AF',
  '%E0%80',
  '%ED%A0%80',
  '%',
  '%zz',
  'x'.repeat(5_000),
  '%20',
  '..',
  '.',
  '~',
  "'%3B--",
  '%7B%7D',
  '__proto__',
  '%F0%9F%98%80',
];

/** A random JSON value of any type, nested at most `depth` levels. */
export function randomJson(rng: Rng, depth = 3): unknown {
  const kind = rng.int(0, depth > 0 ? 8 : 5);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.pick([0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308, 101, 1000]);
    case 3:
    case 4:
      return rng.pick(HOSTILE_STRINGS);
    case 5:
      return rng.bytes(rng.int(0, 40)).toString('latin1');
    case 6:
    case 7:
      return Array.from({ length: rng.int(0, 4) }, () => randomJson(rng, depth - 1));
    default: {
      const out: Record<string, unknown> = {};
      for (let i = rng.int(0, 4); i > 0; i--) out[rng.pick(['a', '__proto__', 'constructor', 'to', 'x'.repeat(300), ''])] = randomJson(rng, depth - 1);
      return out;
    }
  }
}

/** Nested arrays `depth` deep: a body that recursive validators choke on. */
export function deepJson(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

export interface RouteEntry {
  method: string;
  /** fastify pattern, e.g. `/v0/inboxes/:inbox_id`. */
  url: string;
}

/**
 * Every route of the real loopback app, read from fastify's route table (`printRoutes`): the app
 * is built in this process on a throwaway database, exactly as `svc serve` builds it, and never
 * listens. HEAD and OPTIONS are left out (fastify answers them from GET / the CORS routes).
 */
export async function routeTable(): Promise<RouteEntry[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-routes-'));
  const db = openDatabase(path.join(dir, 'svc.db'), randomBytes(32), { migrate: true });
  const pool = new CpuPool();
  const app = await buildApp({ db, bus: new Bus(), pool, owner: new OwnerAccount(db), origin: () => 'http://127.0.0.1:1', listener: 'local' });
  try {
    await app.ready();
    return parseRouteTree(app.printRoutes({ commonPrefix: false }));
  } finally {
    await app.close();
    await pool.close();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** `├── /a (GET, POST)` / `│   └── /:id (DELETE)` lines → full paths with their methods. */
export function parseRouteTree(tree: string): RouteEntry[] {
  const out: RouteEntry[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^((?:│   |    )*)(?:├── |└── )(\S+)(?: \(([^)]*)\))?/.exec(line);
    if (!m) continue;
    const depth = m[1].length / 4;
    stack.length = depth;
    stack.push(m[2]);
    const url = stack.join('');
    for (const method of (m[3] ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
      if (method !== 'HEAD' && method !== 'OPTIONS') out.push({ method, url });
    }
  }
  return out;
}

/** Error codes a client may see from `/v0` (ARCHITECTURE §5, spec §7.2): everything but internal_error. */
export const DOCUMENTED_CODES = new Set<string>(Object.keys(ERROR_STATUS).filter((c) => c !== 'internal_error'));

/**
 * Why an answer breaks the REST error contract, or null when it keeps it: never 5xx except the
 * documented 503, and every error is `{name, code, message}` with a documented code whose status
 * and name match.
 */
export function errorContractViolation(status: number, body: unknown): string | null {
  if (status < 400) return null;
  if (status >= 500 && status !== 503) return `status ${status}`;
  if (typeof body !== 'object' || body === null) return `status ${status} without a JSON error body`;
  const b = body as Record<string, unknown>;
  if (typeof b.code !== 'string' || !DOCUMENTED_CODES.has(b.code)) return `undocumented code ${JSON.stringify(b.code)}`;
  if (ERROR_STATUS[b.code as ErrorCode] !== status) return `code ${b.code} with status ${status}`;
  if (b.name !== errorName(b.code as ErrorCode)) return `name ${JSON.stringify(b.name)} for ${b.code}`;
  if (typeof b.message !== 'string' || b.message === '') return 'no message';
  return null;
}
