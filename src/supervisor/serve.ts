/**
 * `svc serve`: unlock → open the database → listen on 127.0.0.1 → start the loops → print
 * the startup lines. Stops on SIGINT/SIGTERM or when a loop dies.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import type { FastifyInstance } from 'fastify';
import { unlockHome } from '../keys/unlock.js';
import { homeFiles, writeFileAtomic } from '../keys/home.js';
import { StartupError, asStartupError } from '../keys/startup-error.js';
import { openDatabase, type Db } from '../db/open.js';
import { buildApp } from '../http/app.js';
import { OwnerAccount } from '../owner/owner-account.js';
import { Bus } from './bus.js';
import { LoopSupervisor } from './loops.js';
import type { LocalEdgeHandover } from './loop-table.js';
import { CpuPool } from './pool.js';
import { Readers } from './readers.js';
import { WriteGate } from '../db/write-gate.js';
import { ensurePageKey } from '../core/pagination.js';
import type { LocalEdgeThread } from '../edge/edge-thread.js';
import { newSecret } from '../auth/secrets.js';
import { MAX_EDGES, keepLocalEdgeToken, readTransport, writeTransport } from '../mail/transport.js';
import { storeCheckServers } from '../domains/checks.js';
import { RemoteAccess } from '../remote/remote-access.js';
import { limitHeapGrowth } from '../core/heap-limits.js';
import { MessageWaits } from '../events/waits.js';
import { DEFAULT_LOCAL_SMTP_PORT, DEFAULT_SERVICE_PORT, DEV_PORT_TRIES, firstFreePort, isAddressInUse } from '../core/ports.js';
import type { Flavor } from '../keys/home.js';
import { recoveryCodeLine } from '../backup/recovery-file.js';
import { BackupService } from '../backup/service.js';

export interface ServeOptions {
  home: string;
  init: boolean;
  /** `--port`; null: DEFAULT_SERVICE_PORT (src/core/ports.ts), or the next free one for a development home. */
  port: number | null;
  flavor?: Flavor;
  /** Run the built-in edge in-process on loopback and pair with it (ARCHITECTURE §6); `smtpPort` null: DEFAULT_LOCAL_SMTP_PORT likewise. */
  localEdge: { smtpPort: number | null; dns: string[] | null; relayPort?: number | null } | null;
  /** Name servers for the domain checks (`--dns`); null: the system's (docs/domains.md). */
  dns?: string[] | null;
}

/** In-flight requests get this long after a stop signal (spec §8). */
const DRAIN_MS = 5_000;

const line = (stream: NodeJS.WriteStream, data: Record<string, unknown>) => stream.write(JSON.stringify(data) + '\n');

/** Test-only fault switch (docs/testing.md): `loop-crash:<loop>` makes that loop throw. */
function faultSwitch(): string | null {
  return process.env.SVC_TEST_FAULT || null;
}

export async function serve(opts: ServeOptions): Promise<number> {
  let dbKey: Buffer | null = null;
  let db: Db | null = null;
  let app: FastifyInstance | null = null;
  let edge: LocalEdgeThread | null = null;
  let remote: RemoteAccess | null = null;
  let reads: Readers | null = null;
  let waits: MessageWaits | null = null;
  const bus = new Bus();
  let stopping: Promise<number> | null = null;
  let resolveExit!: (code: number) => void;
  const exited = new Promise<number>((r) => (resolveExit = r));

  const pool = new CpuPool();
  /** svc.db's write lock, taken in turn by the request thread and the loops (src/db/write-gate.ts). */
  const writeGate = new WriteGate();
  const loops = new LoopSupervisor(bus, pool, (name: string) => {
    line(process.stderr, {
      event: 'server.failed',
      code: 'service_unavailable',
      cause: 'LoopCrashed',
      message: `The background loop "${name}" stopped unexpectedly; svc stopped to protect your mail.`,
      fix: 'Start svc again; if this repeats, check disk space and the logs.',
    });
    void stop(1);
  });

  /** Stop loops and drain HTTP → close the pool, readers and database → zero the key. */
  function stop(code: number): Promise<number> {
    stopping ??= (async () => {
      // Loops stop while the listeners drain: a loop still loading right after start finishes
      // loading before it can stop, which must not hold up the drain.
      const loopsStopped = loops.stop().catch(() => undefined);
      // The remote-access loop stops the connector; then the tunnel listener drains.
      const tunnelClosed = loopsStopped.then(() => remote?.stop().catch(() => undefined));
      // Waiting requests answer at once instead of holding the drain for up to a minute.
      waits?.close();
      if (app) {
        const drain = app.close();
        const timer = setTimeout(() => app?.server.closeAllConnections(), DRAIN_MS);
        await drain.catch(() => undefined);
        clearTimeout(timer);
      }
      await loopsStopped;
      await tunnelClosed;
      await edge?.stop().catch(() => undefined);
      await pool.close().catch(() => undefined);
      await reads?.close().catch(() => undefined);
      try {
        db?.close();
      } catch {
        /* closing anyway */
      }
      dbKey?.fill(0);
      resolveExit(code);
      return code;
    })();
    return stopping;
  }

  // Every file svc creates in the home (database, WAL, logs) is private to this user.
  process.umask(0o077);
  try {
    const unlocked = unlockHome(opts.home, opts.init);
    dbKey = unlocked.dbKey;
    // Shown once, before anything else can fail: a home created now is not created again, so a
    // code lost to a later start-up failure could only be replaced with `svc key recovery --rotate`.
    if (unlocked.recoveryCode) line(process.stdout, recoveryCodeLine(unlocked.recoveryCode));
    const files = homeFiles(opts.home);
    const backups = new BackupService(opts.home, unlocked.homeId, dbKey);
    backups.clearLeftovers();
    // An upgrade reads the whole database at least once (its snapshot), minutes for a large home: said before it starts.
    const onUpgrade = (from: number, to: number) =>
      line(process.stdout, { event: 'database.upgrading', from_schema: from, to_schema: to, message: 'Upgrading the database: a snapshot of it first, then the schema changes. A large home can take several minutes; svc is ready when it prints server.ready.' });
    db = openDatabase(files.db, dbKey, { migrate: true, gate: writeGate, onUpgrade });
    fs.chmodSync(files.db, 0o600);
    ensurePageKey(db);
    const readers = new Readers(files.db, dbKey);
    reads = readers;
    const messageWaits = new MessageWaits(readers, bus);
    waits = messageWaits;
    const owner = new OwnerAccount(db);
    storeCheckServers(db, opts.dns ?? null);
    let smtp: { host: string; port: number } | null = null;
    let handover: LocalEdgeHandover | null = null;
    if (opts.localEdge) {
      const smtpPort = await portToUse(opts.localEdge.smtpPort, DEFAULT_LOCAL_SMTP_PORT, opts.flavor, 'edge.port_changed', 'SMTP port', '--smtp-port');
      const started = await startLocalEdge(db, opts.home, { ...opts.localEdge, smtpPort }, () => {
        line(process.stderr, {
          event: 'server.failed',
          code: 'service_unavailable',
          cause: 'LocalEdgeCrashed',
          message: 'The built-in edge stopped unexpectedly; svc stopped to protect your mail.',
          fix: 'Start svc again; mail the edge accepted is on disk in the home and is fetched after the restart.',
        });
        void stop(1);
      });
      edge = started.edge;
      smtp = started.smtp;
      handover = started.handover;
    }
    const opened = db;
    remote = new RemoteAccess(db, bus, (tunnelOrigin) => buildApp({ db: opened, bus, pool, reads: readers, waits: messageWaits, owner, origin: () => tunnelOrigin, listener: 'tunnel' }));
    // The tunnel listener's record is written before the remote-access loop first reads it.
    try {
      await remote.start();
    } catch {
      throw new StartupError('service_unavailable', 'TunnelListenFailed', 'svc could not start the remote-access listener on 127.0.0.1.', 'Check that loopback ports are available, then start svc again.');
    }
    let origin = '';
    app = await buildApp({ db, bus, pool, reads: readers, waits: messageWaits, owner, origin: () => origin, listener: 'local', remote, backups, health: { home: opts.home, loops: () => loops.health() } });
    const wanted = await portToUse(opts.port, DEFAULT_SERVICE_PORT, opts.flavor, 'server.port_changed', 'port', '--port');
    try {
      await app.listen({ host: '127.0.0.1', port: wanted });
    } catch (err) {
      if (isAddressInUse(err)) {
        throw new StartupError(
          'service_unavailable',
          'PortInUse',
          `Port ${wanted} on 127.0.0.1 is already in use, so svc cannot listen there.`,
          `Stop the program that uses port ${wanted} (another svc? \`svc status\` shows it), or start with --port N (and install the background service with \`svc service install --port N\`).`,
        );
      }
      throw new StartupError('service_unavailable', 'ListenFailed', `svc could not listen on 127.0.0.1:${wanted}.`, 'Choose another port with --port, or stop the program that uses it.');
    }
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : wanted;
    origin = `http://127.0.0.1:${port}`;

    try {
      writeFileAtomic(files.connection, JSON.stringify({ url: origin, owner_token: owner.bearerToken, pid: process.pid, started_at: new Date().toISOString() }, null, 2) + '\n');
    } catch {
      throw new StartupError('service_unavailable', 'ConnectionError', 'connection.json could not be written to the home.', 'Make sure the home directory is writable and has free space.');
    }

    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void stop(0));
    if (owner.setupCode) line(process.stdout, { event: 'owner.setup_required', code: owner.setupCode, url: `${origin}/setup` });
    line(process.stdout, { event: 'server.ready', url: origin, home: opts.home, ...(smtp ? { smtp: `${smtp.host}:${smtp.port}` } : {}) });
    // After the ready line: while start-up loads modules the heap only grows, and a small growth
    // step then costs full collections for nothing (about 45 ms of start-up).
    limitHeapGrowth();
    // Serving now. The loops start after the ready line: each loads its modules and opens the
    // database in its own thread, which on a small machine took most of start-up (issue 19),
    // while the request path needs none of them. One that cannot start stops the service, as a
    // loop that dies later does.
    loops.start(files.db, dbKey, writeGate, faultSwitch(), handover).catch(() => {
      line(process.stderr, {
        event: 'server.failed',
        code: 'service_unavailable',
        cause: 'LoopStartFailed',
        message: 'A background loop could not start; svc stopped to protect your mail.',
        fix: 'Start svc again; if this repeats, check disk space and that svc.db in the home is intact.',
      });
      void stop(1);
    });
    readers.start();
  } catch (err) {
    process.stderr.write(asStartupError(err).toLine() + '\n');
    await stop(1);
    return 1;
  }
  return exited;
}

/**
 * `--local-edge`: the built-in edge on loopback, its data under <home>/edge, its API token kept in
 * the database, and the home paired with it on every start (its API port changes each time).
 */
/**
 * The port to listen on: the one asked for, else the default; a development home whose default
 * is taken moves to the next free one and says so on stdout (production fails on the default
 * with an error naming it, docs/ports.md).
 */
async function portToUse(asked: number | null, fallback: number, flavor: Flavor | undefined, event: string, what: string, flag: string): Promise<number> {
  if (asked !== null) return asked;
  if (flavor !== 'development') return fallback;
  const port = await firstFreePort('127.0.0.1', fallback, DEV_PORT_TRIES);
  if (port !== fallback) {
    line(process.stdout, { event, wanted: fallback, port, message: `The default ${what} ${fallback} is in use, so this development svc uses ${port}.`, fix: `Stop the program that uses ${fallback}, or choose a port with ${flag}.` });
  }
  return port;
}

async function startLocalEdge(
  db: Db,
  home: string,
  opts: NonNullable<ServeOptions['localEdge']> & { smtpPort: number },
  onCrash: () => void,
): Promise<{ edge: LocalEdgeThread; smtp: { host: string; port: number }; handover: LocalEdgeHandover }> {
  // Loaded only when asked for: a home paired with a remote edge never loads the SMTP stack.
  const { LocalEdgeThread, LocalEdgeStartFailed } = await import('../edge/edge-thread.js');
  const token = keepLocalEdgeToken(db, newSecret('edge_'));
  // The inbound loop takes its mail from the edge thread over this channel, not over loopback HTTP (src/edge/local-handover.ts).
  const channel = new MessageChannel();
  let started;
  try {
    started = await LocalEdgeThread.start(
      {
        dataDir: path.join(home, 'edge'),
        smtp: { host: '127.0.0.1', port: opts.smtpPort },
        api: { host: '127.0.0.1', port: 0 },
        apiToken: token,
        hostname: 'localhost',
        dns: opts.dns,
        // Outbound to other domains goes to their MX on port 25 (tests point --relay-port at a sink).
        ...(opts.relayPort ? { deliveryPort: opts.relayPort } : {}),
      },
      onCrash,
      channel.port1,
    );
  } catch (err) {
    channel.port2.close();
    const reason = err instanceof LocalEdgeStartFailed ? err.reason : null;
    throw new StartupError(
      'service_unavailable',
      'LocalEdgeFailed',
      reason ? `The built-in edge could not start: ${reason}` : `The built-in edge could not start (SMTP on 127.0.0.1:${opts.smtpPort}).`,
      `Stop the program that uses SMTP port ${opts.smtpPort}, or choose another with --smtp-port N; check that the home is writable.`,
    );
  }
  const { edge, addresses: bound } = started;
  // The built-in edge is the first of the list (its port changes each start: the entry with its
  // token is replaced); remote edges the owner added stay after it (docs/edge.md "Several edges").
  const current = readTransport(db);
  const remote = current.edges.filter((e) => e.token !== token && e.url !== bound.api.url);
  writeTransport(db, { edges: [{ url: bound.api.url, token }, ...remote].slice(0, MAX_EDGES), smtp: current.smtp });
  return { edge, smtp: bound.smtp, handover: { url: bound.api.url, port: channel.port2 } };
}
