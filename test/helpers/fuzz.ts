/**
 * Seeded hostile-input generation for the fuzz tests (issue 10 item 3), the REST route table
 * read from the real fastify app, and the check that an error answer is a documented one.
 * Every generator takes the PRNG so a failing case is reproduced by its seed (printed by the
 * tests) — nothing here uses Math.random.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { openDatabase } from '../../src/db/open.js';
import { buildApp } from '../../src/http/app.js';
import { ERROR_STATUS, errorName, type ErrorCode } from '../../src/core/errors.js';
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

/** The built package that bin/svc runs. */
const distRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist');

/**
 * Every route `svc serve` registers on its loopback listener, read the same way from the built
 * package (dist/, what bin/svc runs) with the context the service gives it: the remote-access, backup
 * and doctor routes (registered only with a RemoteAccess / BackupService / the health sources) and the web app's `GET /*` (registered
 * only when web/dist is next to dist/) are included, which `routeTable()` built from src/ lacks.
 * Run `npm run build` first, as for every test that starts the service.
 */
export async function servedRouteTable(): Promise<RouteEntry[]> {
  const load = <T>(file: string): Promise<T> => import(pathToFileURL(path.join(distRoot, file)).href) as Promise<T>;
  const { openDatabase: openBuilt } = await load<typeof import('../../src/db/open.js')>('src/db/open.js');
  const { buildApp: buildBuilt } = await load<typeof import('../../src/http/app.js')>('src/http/app.js');
  const { OwnerAccount: BuiltOwner } = await load<typeof import('../../src/owner/owner-account.js')>('src/owner/owner-account.js');
  const { Bus: BuiltBus } = await load<typeof import('../../src/supervisor/bus.js')>('src/supervisor/bus.js');
  const { CpuPool: BuiltPool } = await load<typeof import('../../src/supervisor/pool.js')>('src/supervisor/pool.js');
  const { RemoteAccess: BuiltRemote } = await load<typeof import('../../src/remote/remote-access.js')>('src/remote/remote-access.js');
  const { BackupService: BuiltBackups } = await load<typeof import('../../src/backup/service.js')>('src/backup/service.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-routes-'));
  const db = openBuilt(path.join(dir, 'svc.db'), randomBytes(32), { migrate: true });
  const pool = new BuiltPool();
  const bus = new BuiltBus();
  // Never started: the table is read without listening, so no tunnel listener is ever built.
  const remote = new BuiltRemote(db, bus, () => Promise.reject(new Error('the route table never opens a tunnel listener')));
  // The backup routes, as svc serve registers them with its BackupService (never asked to back up here).
  const backups = new BuiltBackups(dir, 'route-table', randomBytes(32));
  // The doctor's route, as svc serve registers it with the home and the loops' heartbeats (never run here).
  const health = { home: dir, loops: () => [] };
  const app = await buildBuilt({ db, bus, pool, owner: new BuiltOwner(db), origin: () => 'http://127.0.0.1:1', listener: 'local', remote, backups, health });
  try {
    await app.ready();
    // fastify prints the root wildcard as `*`; requests reach it as `/anything`.
    return parseRouteTree(app.printRoutes({ commonPrefix: false })).map((r) => (r.url === '*' ? { ...r, url: '/*' } : r));
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

/**
 * Sends `raw` exactly as given (bare CR and LF, NULs, 8-bit bytes) over one SMTP transaction:
 * only dot-stuffing is applied, as the protocol requires. nodemailer would normalise line
 * endings, which is what these tests must not do. Resolves with the final reply to DATA.
 */
export function smtpSendRaw(port: number, from: string, to: string, raw: Buffer): Promise<{ code: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const steps = [`EHLO fuzz.client.test\r\n`, `MAIL FROM:<${from}>\r\n`, `RCPT TO:<${to}>\r\n`, 'DATA\r\n', null, 'QUIT\r\n'];
    let buffer = '';
    let step = 0;
    let final: { code: number; text: string } | null = null;
    socket.setTimeout(60_000, () => socket.destroy(new Error('SMTP timeout')));
    socket.on('error', (err) => (final ? resolve(final) : reject(err)));
    socket.on('close', () => (final ? resolve(final) : reject(new Error(`SMTP closed early: ${buffer.slice(-200)}`))));
    socket.on('data', (chunk) => {
      if (final) return; // the answer to QUIT is not the result
      buffer += chunk.toString('latin1');
      // A complete reply ends with a line whose fourth character is a space.
      const lines = buffer.split('\r\n');
      const last = lines.length >= 2 ? lines[lines.length - 2] : '';
      if (!/^\d{3} /.test(last)) return;
      const code = Number(last.slice(0, 3));
      buffer = '';
      const expecting = step; // the reply answers the step sent before it (0 = greeting)
      if (expecting === 0 && code !== 220) return finish({ code, text: last });
      if (expecting > 0 && expecting <= 3 && code >= 400) return finish({ code, text: last });
      if (expecting === 4 && code !== 354) return finish({ code, text: last });
      if (expecting === 5) {
        final = { code, text: last };
        socket.write(steps[5]!);
        socket.end();
        return;
      }
      if (expecting === 4) {
        socket.write(Buffer.concat([dotStuff(raw), Buffer.from('\r\n.\r\n')]));
      } else {
        socket.write(steps[expecting]!);
      }
      step++;
    });
    function finish(result: { code: number; text: string }) {
      final = result;
      socket.end('QUIT\r\n');
    }
  });
}

/** Doubles a dot at the start of every line (after LF, as SMTP servers split lines there). */
function dotStuff(raw: Buffer): Buffer {
  const out: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === 0x2e && (i === 0 || raw[i - 1] === 0x0a)) out.push(0x2e);
    out.push(raw[i]);
  }
  return Buffer.from(out);
}

export const MIME_KINDS = [
  'malformed-headers',
  'broken-encodings',
  'deep-nesting',
  'huge-headers',
  'many-parts',
  'zip-bomb',
  'nul-bytes',
  'bare-cr-lf',
  'deep-html',
  'random-bytes',
  'nested-rfc822',
  'references-bomb',
] as const;
export type MimeKind = (typeof MIME_KINDS)[number];

const CHARSETS = ['utf-8', 'x-unknown-9', 'utf-7', 'utf-16', 'utf-32', 'iso-2022-jp', 'gb18030', '', '"', 'utf-8"; x="', 'shift_jis', 'koi8-r', 'windows-1258'];

/**
 * One hostile message of the given kind for `to`. Each starts with its own Message-ID line, so
 * a test can count what was stored against what the edge accepted (the home deduplicates by
 * Message-ID, and generated ones stay unique).
 */
export function hostileMime(rng: Rng, kind: MimeKind, index: number, to: string): Buffer {
  const id = `<fuzz-${index}-${rng.int(0, 1e9)}@fuzz.sender.test>`;
  const head = (extra: string[] = []) => [`Message-ID: ${id}`, 'From: Fuzzer <fuzzer@fuzz.sender.test>', `To: ${to}`, `Subject: ${kind} #${index}`, 'MIME-Version: 1.0', ...extra].join('\r\n');
  const junk = (n: number) => rng.bytes(n).toString('latin1');
  switch (kind) {
    case 'malformed-headers': {
      const broken = [
        'This line has no colon',
        ' folded continuation after nothing',
        'Bad Header Name: value',
        ': empty name',
        `X-8bit: ${junk(40)}`,
        'Subject: =?UTF-8?B?####?= =?bogus?Q?=ZZ=?= =?utf-8?X?abc?=',
        'Date: Thu, 99 Foo 99999 99:99:99 +9999',
        'From: <<<@@@>>>, "unterminated, =?utf-8?q?',
        'Content-Type: multipart/mixed',
        'Content-Type: text/plain; charset=' + rng.pick(CHARSETS),
        'Content-Transfer-Encoding: x-unknown',
        `Received: ${'from x by y; '.repeat(50)}`,
        'To: undisclosed-recipients:;',
        'Reply-To: ",,,,@@@,,,"',
      ];
      const lines = Array.from({ length: rng.int(3, 10) }, () => rng.pick(broken));
      return Buffer.from(head(lines) + '\r\n\r\nbody\r\n', 'latin1');
    }
    case 'broken-encodings': {
      const parts = [
        `Content-Type: text/plain; charset=${rng.pick(CHARSETS)}\r\nContent-Transfer-Encoding: base64\r\n\r\n${'!!notbase64$$'.repeat(rng.int(1, 200))}==A=\r\n`,
        `Content-Type: text/html; charset=${rng.pick(CHARSETS)}\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=ZZ=\r\n=0=\r\n${'=E2=82'.repeat(100)}=\r\n`,
        `Content-Type: text/plain; charset=utf-16\r\nContent-Transfer-Encoding: 8bit\r\n\r\n${junk(301)}\r\n`,
        `Content-Type: application/octet-stream; name="=?utf-8?B?////?="\r\nContent-Transfer-Encoding: uuencode\r\n\r\nbegin 644 x\r\n${junk(60)}\r\nend\r\n`,
        `Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n${Buffer.from([0xff, 0xfe, 0xc0, 0xaf, 0xed, 0xa0, 0x80]).toString('base64')}\r\n`,
      ];
      const chosen = Array.from({ length: rng.int(1, 4) }, () => rng.pick(parts));
      return Buffer.from(head(['Content-Type: multipart/mixed; boundary="b"']) + '\r\n\r\n' + chosen.map((p) => `--b\r\n${p}`).join('') + (rng.chance(0.5) ? '--b--\r\n' : ''), 'latin1');
    }
    case 'deep-nesting': {
      const depth = rng.int(100, 1_500);
      let open = '';
      let close = '';
      for (let d = 0; d < depth; d++) {
        open += `--n${d}\r\nContent-Type: multipart/mixed; boundary="n${d + 1}"\r\n\r\n`;
        close = `--n${d}--\r\n` + close;
      }
      const inner = `--n${depth}\r\nContent-Type: text/plain\r\n\r\ndeep\r\n--n${depth}--\r\n`;
      return Buffer.from(head(['Content-Type: multipart/mixed; boundary="n0"']) + '\r\n\r\n' + open + inner + (rng.chance(0.5) ? close : ''));
    }
    case 'huge-headers': {
      const extra = rng.chance(0.5) ? [`X-Huge: ${'a'.repeat(rng.int(100_000, 900_000))}`] : Array.from({ length: rng.int(2_000, 20_000) }, (_, i) => `X-Many-${i}: ${'v'.repeat(20)}`);
      return Buffer.from(head(extra) + '\r\n\r\nbody\r\n');
    }
    case 'many-parts': {
      const count = rng.int(500, 3_000);
      let body = '';
      for (let i = 0; i < count; i++) body += `--m\r\nContent-Type: ${rng.pick(['text/plain', 'application/octet-stream', 'image/png'])}\r\nContent-Disposition: attachment; filename="p${i}.bin"\r\n\r\n${i}\r\n`;
      return Buffer.from(head(['Content-Type: multipart/mixed; boundary="m"']) + '\r\n\r\n' + body + '--m--\r\n');
    }
    case 'zip-bomb': {
      // Highly compressible and large once decoded, but inside the edge's size limit.
      const decoded = Buffer.alloc(rng.int(2, 5) * 1024 * 1024, rng.pick([0, 0x41]));
      const b64 = decoded.toString('base64').replace(/.{76}/g, '$&\r\n');
      return Buffer.from(
        head(['Content-Type: multipart/mixed; boundary="z"']) +
          `\r\n\r\n--z\r\nContent-Type: text/plain\r\n\r\nsee attachment\r\n--z\r\nContent-Type: ${rng.pick(['application/zip', 'application/gzip', 'text/plain', 'text/html'])}\r\nContent-Disposition: ${rng.pick(['attachment', 'inline'])}; filename="bomb"\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64}\r\n--z--\r\n`,
      );
    }
    case 'nul-bytes': {
      const where = rng.int(0, 2);
      const nul = '\u0000'.repeat(rng.int(1, 50));
      if (where === 0) return Buffer.from(head([`X-Nul: a${nul}b`]) + `\r\n\r\nbody${nul}\r\n`, 'latin1');
      if (where === 1) return Buffer.from(head([`Subject: nul${nul}inside`]) + `\r\n\r\n${nul}\r\n`, 'latin1');
      return Buffer.from(head(['Content-Type: text/html; charset=utf-8']) + `\r\n\r\n<p>${nul}</p><script>${nul}</script>\r\n`, 'latin1');
    }
    case 'bare-cr-lf': {
      const text = head(['Content-Type: multipart/alternative; boundary="c"', 'X-Mixed: one\rX-Injected: two', 'X-Lf: three\nX-Injected: four']) + '\n\r\n--c\rContent-Type: text/plain\n\r\nbare\rcr\nlf\r\n--c\nContent-Type: text/html\r\r\n<b>x</b>\n--c--\r';
      return Buffer.from(text);
    }
    case 'deep-html': {
      const depth = rng.int(5_000, 60_000);
      const html = '<div>'.repeat(depth) + 'deep' + (rng.chance(0.5) ? '</div>'.repeat(depth) : '') + '<table>'.repeat(2_000) + '<a href="javascript:alert(1)">x</a><img src="http://tracker.test/p.png">';
      return Buffer.from(head(['Content-Type: text/html; charset=utf-8']) + '\r\n\r\n' + html.replace(/.{900}/g, '$&\r\n') + '\r\n');
    }
    case 'random-bytes':
      return Buffer.concat([Buffer.from(`Message-ID: ${id}\r\n`), rng.bytes(rng.int(10, 20_000))]);
    case 'nested-rfc822': {
      let inner = `Subject: innermost\r\n\r\nhello\r\n`;
      for (let d = rng.int(20, 200); d > 0; d--) inner = `Subject: level ${d}\r\nContent-Type: message/rfc822\r\n\r\n${inner}`;
      return Buffer.from(head(['Content-Type: message/rfc822']) + '\r\n\r\n' + inner);
    }
    case 'references-bomb': {
      const refs = Array.from({ length: rng.int(1_000, 20_000) }, (_, i) => `<r${i}@x.test>`).join(' ');
      return Buffer.from(head([`References: ${refs}`, `In-Reply-To: ${refs.slice(0, 50_000)}`]) + '\r\n\r\nbody\r\n');
    }
  }
}
