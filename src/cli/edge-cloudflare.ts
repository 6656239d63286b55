/**
 * `svc edge cloudflare dev`: runs the Cloudflare Email Worker edge (src/edge/cloudflare/worker.ts)
 * locally in workerd, Cloudflare's own runtime, through miniflare, so it can be tried (and tested)
 * before `wrangler deploy`. Storage persists in the data directory; the API token is the same
 * `api-token` file as `svc edge` keeps; test mail goes in at `POST /cdn-cgi/handler/email?from=&to=`
 * as with `wrangler dev`. miniflare is not a dependency of an installed svc: it is found at run
 * time (docs/edge.md, "The Cloudflare edge").
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolveHome, type Flavor } from '../keys/home.js';
import { ApiTokenUnreadable, loadOrCreateApiToken } from '../edge/api-token.js';
import { ensurePrivateDir } from '../edge/durable-files.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../edge/limits.js';
import { parseArgs, parsePort, type FlagValue } from './args.js';
import { CliError, reportCliError } from './exit-codes.js';
import { isSourceCheckout, packageRoot } from './package-root.js';
import { defaultEdgeDataDir } from './edge.js';

/** The wrangler release whose miniflare (workerd) this Worker is tested with; the last to support Node 20. */
export const WRANGLER_VERSION = '4.86.0';
/** The Worker's compatibility date (also in src/edge/cloudflare/wrangler.jsonc). */
export const COMPATIBILITY_DATE = '2026-04-01';
/** The Worker name `svc edge cloudflare dev` reports: the name `init` gives a Worker by default. */
const DEV_WORKER_NAME = 'svc-edge';
const DEFAULT_DEV_PORT = 8791;
const MIN_MESSAGE_BYTES = 1024;
const LOOPBACK = '127.0.0.1';

const USAGE = `svc edge cloudflare dev [--port N] [--data DIR | --home DIR] [--max-message-bytes N] [--json]`;

const FLAGS = { port: 'string', data: 'string', home: 'string', flavor: 'string', 'max-message-bytes': 'string', json: 'boolean' } as const;

const line = (stream: NodeJS.WriteStream, data: Record<string, unknown>) => stream.write(JSON.stringify(data) + '\n');

function invalid(message: string): CliError {
  return new CliError('validation_error', message, `Usage: ${USAGE}`);
}

class DevStartError extends Error {
  constructor(
    readonly code: 'action_required' | 'service_unavailable',
    message: string,
    readonly fix: string,
  ) {
    super(message);
  }
}

interface DevCommand {
  port: number;
  dataDir: string;
  maxMessageBytes: number;
}

function parseDevArgs(args: string[]): DevCommand {
  const { flags, positionals } = parseArgs(args, FLAGS);
  if (positionals.length > 0) throw invalid(`Unexpected argument "${positionals[0]}".`);
  const str = (name: keyof typeof FLAGS): string | undefined => {
    const v: FlagValue | undefined = flags[name];
    if (v === '') throw invalid(`--${name} must not be empty.`);
    return typeof v === 'string' ? v : undefined;
  };
  const flavor = str('flavor');
  if (flavor !== undefined && flavor !== 'development' && flavor !== 'production') throw invalid('--flavor must be development or production.');
  const data = str('data');
  const home = str('home');
  if (data !== undefined && home !== undefined) throw invalid('Give --data or --home, not both.');
  // Its own directory beside the standalone edge's: the two keep different stores.
  const dataDir = path.resolve(
    data ?? path.join(defaultEdgeDataDir(resolveHome({ home, flavor: (flavor as Flavor | undefined) ?? (isSourceCheckout() ? 'development' : 'production') })), 'cloudflare'),
  );
  let port: number;
  try {
    port = parsePort(str('port'), DEFAULT_DEV_PORT, true);
  } catch {
    throw invalid('--port must be an integer from 0 to 65535.');
  }
  const maxText = str('max-message-bytes');
  const maxMessageBytes = maxText === undefined ? DEFAULT_MAX_MESSAGE_BYTES : Number(maxText);
  if (!/^\d+$/.test(maxText ?? '0') || !Number.isSafeInteger(maxMessageBytes) || maxMessageBytes < MIN_MESSAGE_BYTES) {
    throw invalid(`--max-message-bytes must be an integer of at least ${MIN_MESSAGE_BYTES}.`);
  }
  return { port, dataDir, maxMessageBytes };
}

/** The parts of miniflare's API this command uses. */
interface MiniflareModule {
  Miniflare: new (options: Record<string, unknown>) => { ready: Promise<URL>; dispose(): Promise<void> };
  Log: new (level: number) => object;
  LogLevel: { WARN: number };
}

/**
 * Where miniflare is: svc's own node_modules (a source checkout, where it is a devDependency),
 * else a global install (`npm root -g`: miniflare itself, or the one inside wrangler). null when
 * neither has it.
 */
function findMiniflare(): string | null {
  const roots = [path.join(packageRoot, 'package.json')];
  try {
    const global = execFileSync('npm', ['root', '-g'], { encoding: 'utf8', timeout: 15_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (global) roots.push(path.join(global, 'wrangler', 'package.json'), path.join(global, 'package.json'));
  } catch {
    // npm missing or failing: only the local copy counts.
  }
  for (const from of roots) {
    try {
      return createRequire(from).resolve('miniflare');
    } catch {
      // not there
    }
  }
  return null;
}

/** The built Worker: dist/src/edge/cloudflare/worker.js, next to this file's directory. */
const workerScript = () => path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'edge', 'cloudflare', 'worker.js');

/** Runs `svc edge cloudflare <args>`; returns the exit code. */
export async function runEdgeCloudflareCommand(args: string[]): Promise<number> {
  const json = args.includes('--json');
  const [action, ...rest] = args;
  if (action !== 'dev') return reportCliError(invalid(action === undefined ? 'Missing action: dev, init, deploy or status.' : `Unknown action "${action}"; the actions are dev, init, deploy and status.`), json);
  let command: DevCommand;
  try {
    command = parseDevArgs(rest);
  } catch (err) {
    return reportCliError(err, json);
  }
  process.umask(0o077);
  let running: { dispose(): Promise<void> } | null = null;
  try {
    const entry = findMiniflare();
    if (entry === null) {
      throw new DevStartError(
        'action_required',
        'miniflare (Cloudflare\'s local Workers runtime) is not installed; an installed svc does not carry it.',
        `Install it once with: npm install -g wrangler@${WRANGLER_VERSION}`,
      );
    }
    let token: ReturnType<typeof loadOrCreateApiToken>;
    try {
      ensurePrivateDir(command.dataDir);
      token = loadOrCreateApiToken(command.dataDir);
    } catch (err) {
      if (err instanceof ApiTokenUnreadable) throw new DevStartError('action_required', err.message, 'Delete the api-token file to make a new token, then pair the home again with the new one.');
      throw new DevStartError('service_unavailable', `The data directory ${command.dataDir} cannot be created or written.`, 'Choose a writable directory with --data, or fix its permissions.');
    }
    const { Miniflare, Log, LogLevel } = (await import(pathToFileURL(entry).href)) as MiniflareModule;
    // miniflare writes its lines to stdout; stdout is reserved for the JSON event lines, as with `svc edge`.
    const log = new Log(LogLevel.WARN) as { log(message: string): void };
    log.log = (message: string) => void process.stderr.write(message + '\n');
    const persist = path.join(command.dataDir, 'workerd');
    ensurePrivateDir(persist);
    const mf = new Miniflare({
      modules: true,
      scriptPath: workerScript(),
      compatibilityDate: COMPATIBILITY_DATE,
      r2Buckets: ['BUFFER'],
      defaultPersistRoot: persist,
      // WORKER_NAME: the name a deploy would give it (init's default), reported to the home as the Email Routing target.
      bindings: { EDGE_TOKEN: token.token, MAX_MESSAGE_BYTES: String(command.maxMessageBytes), WORKER_NAME: DEV_WORKER_NAME },
      host: LOOPBACK,
      port: command.port,
      // `POST /cdn-cgi/handler/email?from=&to=` delivers a message to email(), as `wrangler dev` does.
      unsafeTriggerHandlers: true,
      // No Request.cf lookup at workers.cloudflare.com: the local edge makes no outbound calls.
      cf: false,
      // Warnings and errors only (no request lines); the Worker itself never logs.
      log,
    });
    running = mf;
    let url: URL;
    try {
      url = await mf.ready;
    } catch {
      throw new DevStartError('service_unavailable', `workerd could not start on ${LOOPBACK}:${command.port}.`, 'Choose another port with --port (0 picks a free one).');
    }
    const apiUrl = url.origin;
    line(process.stdout, { event: 'edge.ready', kind: 'cloudflare-dev', api: { host: LOOPBACK, port: Number(url.port), url: apiUrl }, email: `${apiUrl}/cdn-cgi/handler/email`, token_file: token.file, data: command.dataDir });
    process.stderr.write(
      `svc edge cloudflare dev runs the Email Worker in workerd at ${apiUrl}; send test mail with\n` +
        `  curl -X POST '${apiUrl}/cdn-cgi/handler/email?from=alice@example.com&to=you@your.domain' --data-binary @message.eml\n` +
        `Pair it with a home: svc transport set --edge-url ${apiUrl} --edge-token-file ${token.file}\n`,
    );
  } catch (err) {
    const e = err instanceof DevStartError ? err : new DevStartError('service_unavailable', 'The local Cloudflare edge could not start.', 'Check the data directory and the port, then start it again.');
    line(process.stderr, { event: 'edge.failed', code: e.code, message: e.message, fix: e.fix });
    await running?.dispose().catch(() => undefined);
    return 1;
  }
  const mf = running;
  return new Promise<number>((resolve) => {
    const onSignal = () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      mf.dispose().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
