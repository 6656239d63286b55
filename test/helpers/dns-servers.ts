/**
 * Real authoritative DNS servers from Debian packages, each a private instance on a free loopback
 * port with its configuration and data in a temp dir (never /etc, never the system service):
 * Knot (RFC 2136 with TSIG) and PowerDNS with its HTTP API (sqlite3 backend). They are installed
 * by scripts/ensure-dns-servers.sh when missing (as root), else the tests that need them skip.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import dgram from 'node:dgram';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3-multiple-ciphers';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Installs the servers when missing; the reason they are not available, or null. */
export function dnsServersMissing(): string | null {
  try {
    execFileSync(path.join(repoRoot, 'scripts', 'ensure-dns-servers.sh'), { stdio: ['ignore', 'inherit', 'inherit'] });
    return null;
  } catch {
    const reason = 'knot and pdns-server are not installed (scripts/ensure-dns-servers.sh)';
    // CI installs them (it runs as root); a run there that cannot must fail, not skip.
    if (process.env.CI) throw new Error(reason);
    return reason;
  }
}

/** A port free for both TCP and UDP on 127.0.0.1. */
export async function freeDnsPort(): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const port = await new Promise<number>((resolve, reject) => {
      const s = net.createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const udpFree = await new Promise<boolean>((resolve) => {
      const u = dgram.createSocket('udp4');
      u.once('error', () => resolve(false));
      u.bind(port, '127.0.0.1', () => u.close(() => resolve(true)));
    });
    if (udpFree) return port;
  }
  throw new Error('no free loopback port for DNS');
}

async function waitForTcp(port: number, proc: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`the DNS server exited (${proc.exitCode}): ${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the DNS server did not listen on ${port}: ${log()}`);
}

export interface RunningDnsServer {
  port: number;
  /** `127.0.0.1:<port>` for `svc serve --dns`. */
  server: string;
  dir: string;
  /** The server's own output so far. */
  log(): string;
  stop(): Promise<void>;
}

function start(cmd: string, args: string[], dir: string): { proc: ChildProcess; log: () => string } {
  let out = '';
  const proc = spawn(cmd, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  proc.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  return { proc, log: () => out };
}

function stopper(proc: ChildProcess, dir: string): () => Promise<void> {
  return async () => {
    if (proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (proc.exitCode === null) proc.kill('SIGKILL');
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
}

export interface KnotOptions {
  zone: string;
  keyName: string;
  algorithm?: 'hmac-sha256' | 'hmac-sha512';
  /** Base64; a fresh one when omitted. */
  secret?: string;
  /** Extra zone file lines (relative names), e.g. the owner's own records. */
  records?: string[];
  /** Further zones the same server answers (read-only), e.g. a reverse zone with PTR records. */
  extraZones?: { zone: string; records: string[] }[];
}

export interface RunningKnot extends RunningDnsServer {
  secret: string;
  /** Answers of `kdig @server name type` (+short), one per line. */
  dig(name: string, type: string): string[];
}

/** knotd with one zone that accepts updates signed with one TSIG key. */
export async function startKnot(o: KnotOptions): Promise<RunningKnot> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-knot-'));
  const port = await freeDnsPort();
  const algorithm = o.algorithm ?? 'hmac-sha256';
  const secret = o.secret ?? randomBytes(32).toString('base64');
  // Knot keeps its journal there and fails updates (SERVFAIL, "not exists") without it.
  fs.mkdirSync(path.join(dir, 'db'));
  fs.writeFileSync(
    path.join(dir, `${o.zone}.zone`),
    [`$ORIGIN ${o.zone}.`, '$TTL 300', `@ SOA ns1.${o.zone}. hostmaster.${o.zone}. 1 3600 900 604800 300`, `@ NS ns1.${o.zone}.`, 'ns1 A 127.0.0.1', ...(o.records ?? [])].join('\n') + '\n',
  );
  for (const z of o.extraZones ?? []) {
    fs.writeFileSync(path.join(dir, `${z.zone}.zone`), [`$ORIGIN ${z.zone}.`, '$TTL 300', `@ SOA ns1.${o.zone}. hostmaster.${o.zone}. 1 3600 900 604800 300`, `@ NS ns1.${o.zone}.`, ...z.records].join('\n') + '\n');
  }
  fs.writeFileSync(
    path.join(dir, 'knot.conf'),
    `server:
    listen: 127.0.0.1@${port}
    rundir: "${dir}"
log:
  - target: stderr
    any: info
database:
    storage: "${dir}/db"
key:
  - id: ${o.keyName}
    algorithm: ${algorithm}
    secret: ${secret}
acl:
  - id: svc_update
    key: ${o.keyName}
    action: update
template:
  - id: default
    storage: "${dir}"
    zonefile-sync: -1
    journal-content: changes
zone:
  - domain: ${o.zone}
    file: "${o.zone}.zone"
    acl: svc_update
${(o.extraZones ?? []).map((z) => `  - domain: ${z.zone}\n    file: "${z.zone}.zone"\n`).join('')}`,
  );
  const { proc, log } = start('/usr/sbin/knotd', ['-c', path.join(dir, 'knot.conf')], dir);
  await waitForTcp(port, proc, log);
  return {
    port,
    server: `127.0.0.1:${port}`,
    dir,
    secret,
    log,
    stop: stopper(proc, dir),
    dig: (name, type) =>
      execFileSync('kdig', [`@127.0.0.1`, '-p', String(port), '+short', '+tcp', name, type], { encoding: 'utf8' })
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean),
  };
}

export interface RunningPowerDns extends RunningDnsServer {
  apiKey: string;
  /** The API's base URL, `http://127.0.0.1:<port>`. */
  url: string;
  /** A call to the API with the key. */
  api(method: string, pathname: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  /** The records of `name` (FQDN with dot) and `type` as PowerDNS content. */
  contents(zone: string, name: string, type: string): Promise<string[]>;
}

/** pdns_server (gsqlite3 backend, webserver + API on another loopback port) with `zone` created through the API. */
export async function startPowerDns(o: { zone: string; records?: { name: string; type: string; content: string }[] }): Promise<RunningPowerDns> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pdns-'));
  const port = await freeDnsPort();
  const apiPort = await freeDnsPort();
  const apiKey = randomBytes(18).toString('base64url');
  const schema = fs.readFileSync('/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql', 'utf8');
  const db = new Database(path.join(dir, 'pdns.sqlite3'));
  db.exec(schema);
  db.close();
  fs.writeFileSync(
    path.join(dir, 'pdns.conf'),
    [
      'launch=gsqlite3',
      `gsqlite3-database=${dir}/pdns.sqlite3`,
      'local-address=127.0.0.1',
      `local-port=${port}`,
      'api=yes',
      `api-key=${apiKey}`,
      'webserver=yes',
      'webserver-address=127.0.0.1',
      `webserver-port=${apiPort}`,
      'webserver-allow-from=127.0.0.0/8',
      `socket-dir=${dir}`,
      'guardian=no',
      'daemon=no',
      'disable-syslog=yes',
      'setuid=',
      'setgid=',
      'loglevel=4',
    ].join('\n') + '\n',
  );
  const { proc, log } = start('/usr/sbin/pdns_server', [`--config-dir=${dir}`], dir);
  await waitForTcp(apiPort, proc, log);
  const url = `http://127.0.0.1:${apiPort}`;
  const api = async (method: string, pathname: string, body?: unknown) => {
    const res = await fetch(`${url}${pathname}`, { method, headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
  };
  const created = await api('POST', '/api/v1/servers/localhost/zones', {
    name: `${o.zone}.`,
    kind: 'Native',
    nameservers: [`ns1.${o.zone}.`],
    rrsets: (o.records ?? []).map((r) => ({ name: r.name, type: r.type, ttl: 300, changetype: 'REPLACE', records: [{ content: r.content, disabled: false }] })),
  });
  if (created.status !== 201) throw new Error(`creating the zone: ${created.status} ${JSON.stringify(created.body)}`);
  return {
    port,
    server: `127.0.0.1:${port}`,
    dir,
    apiKey,
    url,
    log,
    api,
    stop: stopper(proc, dir),
    contents: async (zone, name, type) => {
      const res = await api('GET', `/api/v1/servers/localhost/zones/${zone}.`);
      const sets = (res.body as { rrsets: { name: string; type: string; records: { content: string }[] }[] }).rrsets;
      return sets.filter((s) => s.name === name && s.type === type).flatMap((s) => s.records.map((r) => r.content));
    },
  };
}
