/**
 * `svc service install | status | uninstall`: registers `svc serve` for one home with the per-user
 * service manager of the platform (spec appendix "Per-user background service").
 */
import fs from 'node:fs';
import path from 'node:path';
import { readKek } from '../keys/credential-store.js';
import { homeFiles, resolveHome, writeFileAtomic, type Flavor } from '../keys/home.js';
import { StartupError } from '../keys/startup-error.js';
import { serviceNames, type ServiceNames } from '../service/names.js';
import { serviceManagerFor, type ServiceManager } from '../service/service-manager.js';
import { UNOBSERVED, type ObservedState, type ServiceLogs, type ServiceSpec } from '../service/service-spec.js';
import { parseArgs, parsePort } from './args.js';
import { CliError, EXIT, reportCliError } from './exit-codes.js';
import { isSourceCheckout, packageRoot } from './package-root.js';
import { DEFAULT_SERVICE_PORT } from '../core/ports.js';

/** The installed service's port: the same fixed default as `svc serve` (src/core/ports.ts). */
export { DEFAULT_SERVICE_PORT };
/** A healthy service answers its status route at once; a slow answer counts as unhealthy. */
export const HEALTH_TIMEOUT_MS = 1000;
const HEALTH_PATH = '/v0/owner/status';
const LOG_DIR_MODE = 0o700;
const LOG_FILE_MODE = 0o600;

/** Variables that point the CLI at a (possibly remote) running service; managing this machine with them set is refused. */
const REMOTE_VARIABLES = ['SVC_URL', 'SVC_API_KEY'] as const;

type Action = 'install' | 'status' | 'uninstall';
const ACTIONS: readonly Action[] = ['install', 'status', 'uninstall'];
const USAGE = 'svc service install|status|uninstall [--home <dir>] [--flavor development|production] [--port <1-65535>] [--json]';

interface ServiceOptions {
  action: Action;
  home: string;
  port: number;
}

interface ServiceReport extends ObservedState {
  installed: boolean;
  port: number | null;
  home: string;
  unit_name: string;
  unit_path: string;
  logs: ServiceLogs;
  http_healthy?: boolean;
  removed?: boolean;
  note?: string;
}

function rejectRemoteEnvironment(env: NodeJS.ProcessEnv): void {
  const set = REMOTE_VARIABLES.filter((name) => env[name]);
  if (set.length === 0) return;
  throw new CliError(
    'missing_permission',
    `Service management acts on this machine's own home and is not available with ${set.join(' and ')} set.`,
    `Run it as the owner on the machine that holds the home, without ${REMOTE_VARIABLES.join(' or ')} (e.g. env -u SVC_URL -u SVC_API_KEY svc service ...).`,
  );
}

function invalid(message: string): CliError {
  return new CliError('validation_error', message, `Usage: ${USAGE}`);
}

function parseServiceArgs(args: string[], defaultFlavor: Flavor): ServiceOptions {
  const { flags, positionals } = parseArgs(args, { home: 'string', flavor: 'string', port: 'string', json: 'boolean' });
  const [action, ...extra] = positionals;
  if (!ACTIONS.includes(action as Action)) throw invalid(action ? `Unknown service command "${action}".` : 'Missing the service command.');
  if (extra.length > 0) throw invalid(`Unexpected argument "${extra[0]}".`);
  const home = flags.home as string | undefined;
  const flavor = flags.flavor as string | undefined;
  if (flavor !== undefined && flavor !== 'development' && flavor !== 'production') throw invalid('--flavor must be development or production.');
  if (home === '') throw invalid('--home must not be empty.');
  if (flags.port !== undefined && action !== 'install') throw invalid('--port is only used by install; status and uninstall read the port from the installed service.');
  return {
    action: action as Action,
    home: resolveHome({ home, flavor: (flavor as Flavor | undefined) ?? defaultFlavor }),
    port: parsePort(flags.port, DEFAULT_SERVICE_PORT, false),
  };
}

function notInitialized(home: string, message: string): CliError {
  return new CliError('action_required', message, `Initialize it once with \`svc serve --init --home "${home}"\` (stop it with Ctrl-C), then run \`svc service install\` again.`);
}

/** Install never initializes: it only checks that a later `svc serve` will unlock without help. */
function requireInitializedHome(home: string): void {
  const keysFile = homeFiles(home).keys;
  if (!fs.statSync(home, { throwIfNoEntry: false })?.isDirectory()) throw notInitialized(home, `The home ${home} does not exist.`);
  if (!fs.existsSync(keysFile)) throw notInitialized(home, `The home ${home} is not initialized (it has no keys.json).`);
  let keys: unknown;
  try {
    keys = JSON.parse(fs.readFileSync(keysFile, 'utf8'));
  } catch {
    keys = null;
  }
  const k = keys as { version?: unknown; wrapped_key?: unknown; unlock?: unknown } | null;
  if (!k || typeof k !== 'object' || k.version !== 1 || typeof k.wrapped_key !== 'string') {
    throw new CliError('action_required', `keys.json in ${home} is unreadable or damaged.`, 'Restore keys.json together with svc.db from the same home backup, then run install again.');
  }
  if (k.unlock === 'systemd-creds') {
    throw new CliError('action_required', `The home ${home} is unlocked by a systemd credential, which only a system unit receives.`, `Install it as a system service (as root): \`svc service install --system --home "${home}"\`.`);
  }
  let kek: Buffer | null;
  try {
    kek = readKek(home);
  } catch (err) {
    const fix = err instanceof StartupError ? err.fix : 'Unlock the credential store for this user and try again.';
    throw new CliError('action_required', 'The credential store is locked or unavailable, so the service could not unlock this home at start.', fix);
  }
  if (!kek) {
    throw new CliError(
      'action_required',
      `The credential store item for the home ${home} is missing; without it the database cannot be opened.`,
      "Restore the credential store item from this user's keychain backup (or restore the home on the machine that holds it), then run install again.",
    );
  }
  kek.fill(0);
}

function logPaths(home: string): ServiceLogs {
  const dir = homeFiles(home).logs;
  return { stdout: path.join(dir, 'service.log'), stderr: path.join(dir, 'service.err.log') };
}

/** The manager appends to these; creating them first fixes their modes before any line is written. */
function prepareLogs(home: string, logs: ServiceLogs): void {
  const dir = homeFiles(home).logs;
  try {
    fs.mkdirSync(dir, { recursive: true, mode: LOG_DIR_MODE });
    fs.chmodSync(dir, LOG_DIR_MODE);
    for (const file of [logs.stdout, logs.stderr]) {
      fs.closeSync(fs.openSync(file, 'a', LOG_FILE_MODE));
      fs.chmodSync(file, LOG_FILE_MODE);
    }
  } catch {
    throw new CliError('action_required', `The log directory ${dir} cannot be created or written.`, 'Make sure the home directory belongs to this user and is writable (mode 0700), then run install again.');
  }
}

function readInstalledPort(manager: ServiceManager, file: string): number | null {
  try {
    return manager.readPort(file);
  } catch {
    return null;
  }
}

/** svc's own definitions differ from this home's only in the name part: `svc` or `svc-<16 hex>`. */
const SERVICE_BASE = /^svc(?:-[0-9a-f]{16})?$/;

/** Each home needs its own fixed port: refuse one that another installed svc service already uses. */
function rejectPortInUse(manager: ServiceManager, names: ServiceNames, own: string, port: number): void {
  const dir = path.dirname(own);
  const ownName = path.basename(own);
  const at = ownName.indexOf(names.base);
  const [before, after] = [ownName.slice(0, at), ownName.slice(at + names.base.length)];
  const isSibling = (entry: string) =>
    entry !== ownName && entry.startsWith(before) && entry.endsWith(after) && SERVICE_BASE.test(entry.slice(before.length, entry.length - after.length));
  let entries: string[];
  try {
    entries = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const entry of entries.filter(isSibling)) {
    if (readInstalledPort(manager, path.join(dir, entry)) === port) {
      throw new CliError('validation_error', `Port ${port} is already used by the installed service ${path.join(dir, entry)}.`, 'Give each home its own port with --port.');
    }
  }
}

async function answersHealth(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${HEALTH_PATH}`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS), redirect: 'manual' });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

interface Context {
  manager: ServiceManager;
  names: ServiceNames;
  definition: string;
  logs: ServiceLogs;
}

function baseReport(ctx: Context, home: string, installed: boolean, port: number | null, observed: ObservedState): ServiceReport {
  return {
    installed,
    registered: observed.registered,
    running: observed.running,
    state: observed.state,
    port,
    home,
    unit_name: ctx.manager.unitName(ctx.names),
    unit_path: ctx.definition,
    logs: ctx.logs,
  };
}

async function install(ctx: Context, opts: ServiceOptions, root: string): Promise<ServiceReport> {
  const { manager, names, definition, logs } = ctx;
  if (isSourceCheckout(root)) {
    throw new CliError(
      'not_supported',
      'Install requires a release package; this svc runs from a source checkout, whose paths change with every build.',
      'Build a release package with `npm run build && npm pack`, install it with `npm install -g ./svc-<version>.tgz`, and run `svc service install` from that installation.',
    );
  }
  requireInitializedHome(opts.home);
  if (!(await manager.present())) {
    throw new CliError('not_supported', `${manager.title} is not available on this system, so svc cannot register a background service here.`, 'Run `svc serve --port <port>` from your own process supervisor instead.');
  }
  rejectPortInUse(manager, names, definition, opts.port);

  const spec: ServiceSpec = { nodePath: process.execPath, svcScript: path.join(root, 'bin', 'svc'), home: opts.home, port: opts.port, logs };
  let rendered: string | Buffer;
  try {
    rendered = manager.renderDefinition(spec, names);
  } catch (err) {
    throw new CliError('not_supported', `The service definition cannot express these paths: ${err instanceof Error ? err.message : 'invalid characters'}.`, 'Use a home path without line breaks, quotes or percent signs.');
  }
  prepareLogs(opts.home, logs);
  try {
    fs.mkdirSync(path.dirname(definition), { recursive: true });
    writeFileAtomic(definition, rendered);
  } catch {
    throw new CliError('service_unavailable', `The service definition could not be written to ${definition}.`, `Make sure ${path.dirname(definition)} is writable by this user.`);
  }

  if (!(await manager.reachable(names))) {
    return { ...baseReport(ctx, opts.home, true, opts.port, UNOBSERVED), note: manager.unreachableNote(names, 'install', definition) };
  }
  await manager.register(names, definition);
  return baseReport(ctx, opts.home, true, opts.port, await manager.observe(names, true));
}

async function status(ctx: Context, opts: ServiceOptions): Promise<ServiceReport> {
  const installed = fs.existsSync(ctx.definition);
  const port = installed ? readInstalledPort(ctx.manager, ctx.definition) : null;
  const observed = (await ctx.manager.reachable(ctx.names)) ? await ctx.manager.observe(ctx.names, installed) : UNOBSERVED;
  const http_healthy = port !== null && (await answersHealth(port));
  return { ...baseReport(ctx, opts.home, installed, port, observed), http_healthy };
}

/** Removes only the definition: home, database, mail, logs and the credential store item stay. */
async function uninstall(ctx: Context, opts: ServiceOptions): Promise<ServiceReport> {
  const { manager, names, definition } = ctx;
  const reachable = await manager.reachable(names);
  if (!fs.existsSync(definition)) {
    const observed = reachable ? await manager.observe(names, false) : UNOBSERVED;
    return { ...baseReport(ctx, opts.home, false, null, observed), removed: false };
  }
  const port = readInstalledPort(manager, definition);
  if (reachable) await manager.unregister(names, definition);
  fs.rmSync(definition, { force: true });
  await manager.afterRemove(names, reachable);
  if (!reachable) return { ...baseReport(ctx, opts.home, false, port, UNOBSERVED), removed: true, note: manager.unreachableNote(names, 'uninstall', definition) };
  return { ...baseReport(ctx, opts.home, false, port, await manager.observe(names, false)), removed: true };
}

const yesNo = (value: boolean | null) => (value === null ? 'unknown' : value ? 'yes' : 'no');

function describe(action: Action, r: ServiceReport): string {
  const lines: string[] = [];
  if (action === 'install') lines.push(`Installed ${r.unit_name} for home ${r.home} on port ${r.port}.`);
  else if (action === 'uninstall') {
    lines.push(
      r.removed
        ? `Removed ${r.unit_name}. The home ${r.home}, its database, logs and credential store item are kept.`
        : `${r.unit_name} is not installed for home ${r.home}; nothing to remove.`,
    );
  } else lines.push(`${r.unit_name} (home ${r.home}): ${r.installed ? 'installed' : 'not installed'}`);
  lines.push(`  definition: ${r.unit_path}`);
  lines.push(`  state: ${r.state} (registered: ${yesNo(r.registered)}, running: ${yesNo(r.running)})`);
  if (action === 'status') lines.push(`  port: ${r.port ?? 'none'}, http: ${r.http_healthy ? 'healthy' : 'not answering'}`);
  if (action !== 'uninstall' || r.removed) lines.push(`  logs: ${r.logs.stdout}, ${r.logs.stderr}`);
  if (r.note) lines.push(`note: ${r.note}`);
  return lines.join('\n') + '\n';
}

/** Entry for `svc service ...`; `args` are the words after `service`. Returns the exit code. */
export async function runServiceCommand(args: string[]): Promise<number> {
  const json = args.includes('--json');
  try {
    rejectRemoteEnvironment(process.env);
    if (args.includes('--system')) return await (await import('./service-system.js')).runSystemServiceCommand(args);
    const root = packageRoot;
    // Packaged commands default to the production flavor; a source checkout defaults to development.
    const opts = parseServiceArgs(args, isSourceCheckout(root) ? 'development' : 'production');
    const manager = serviceManagerFor();
    if (!manager) {
      throw new CliError('not_supported', `svc has no per-user background service support on ${process.platform}.`, 'Run `svc serve --port <port>` from your own process supervisor instead.');
    }
    const names = serviceNames(opts.home);
    const ctx: Context = { manager, names, definition: manager.definitionPath(names), logs: logPaths(opts.home) };
    const report = opts.action === 'install' ? await install(ctx, opts, root) : opts.action === 'status' ? await status(ctx, opts) : await uninstall(ctx, opts);
    process.stdout.write(json ? JSON.stringify(report) + '\n' : describe(opts.action, report));
    return EXIT.ok;
  } catch (err) {
    return reportCliError(err, json);
  }
}
