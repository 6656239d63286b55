/**
 * `svc service install --system`: a headless server's units (docs/service.md "System service").
 * As root it creates the system user, hands it the home (and the edge's data directory), writes
 * /etc/systemd/system/svc.service (and svc-edge.service with --edge), then enables and starts them.
 * With --print it only prints the units it would write, and needs neither root nor systemd.
 */
import fs from 'node:fs';
import path from 'node:path';
import { homeFiles, writeFileAtomic } from '../keys/home.js';
import { kekCredentialFile } from '../keys/systemd-creds.js';
import { firstLine, runCommand } from '../service/run-command.js';
import {
  DEFAULT_SYSTEM_EDGE_DATA,
  DEFAULT_SYSTEM_HOME,
  DEFAULT_SYSTEM_USER,
  isUnderProtectedHome,
  parseSystemdVersion,
  renderSystemEdgeUnit,
  renderSystemServiceUnit,
  SYSTEM_EDGE_UNIT,
  SYSTEM_SERVICE_UNIT,
  SYSTEM_UNIT_DIR,
  type SystemEdgeSpec,
  type SystemServiceSpec,
  type SystemUnitBase,
} from '../service/systemd-system.js';
import { parseArgs, parsePort } from './args.js';
import { CliError, EXIT, reportCliError } from './exit-codes.js';
import { isSourceCheckout, packageRoot } from './package-root.js';
import { DEFAULT_SERVICE_PORT } from '../core/ports.js';
import { DEFAULT_EDGE_API_PORT } from './edge.js';

const USAGE = `svc service install --system [--home DIR] [--port N] [--user NAME] [--print] [--json]
        [--edge --edge-hostname NAME [--edge-data DIR] [--edge-host IP] [--edge-smtp-port N]
                [--edge-api-host IP] [--edge-api-port N] [--edge-acme [--edge-acme-email ADDR]]]`;

/** The edge receives internet mail: every interface, on the SMTP port senders use. */
const EDGE_SMTP_HOST = '0.0.0.0';
const EDGE_SMTP_PORT = 25;
const EDGE_API_HOST = '127.0.0.1';
const UNIT_FILE_MODE = 0o644;
const DATA_DIR_MODE = 0o700;
/** useradd's own rule for portable names. */
const USER_NAME = /^[a-z_][a-z0-9_-]{0,31}$/;
const HOSTNAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;
const NOLOGIN_SHELL = '/usr/sbin/nologin';

const FLAGS = {
  system: 'boolean',
  home: 'string',
  port: 'string',
  user: 'string',
  print: 'boolean',
  json: 'boolean',
  edge: 'boolean',
  'edge-hostname': 'string',
  'edge-data': 'string',
  'edge-host': 'string',
  'edge-smtp-port': 'string',
  'edge-api-host': 'string',
  'edge-api-port': 'string',
  'edge-acme': 'boolean',
  'edge-acme-email': 'string',
} as const;

function invalid(message: string): CliError {
  return new CliError('validation_error', message, `Usage: ${USAGE}`);
}

interface SystemUnit {
  name: string;
  path: string;
  text: string;
}

interface SystemOptions {
  print: boolean;
  json: boolean;
  service: SystemServiceSpec;
  edge: SystemEdgeSpec | null;
}

function absoluteDir(value: string | undefined, flag: string, fallback: string): string {
  if (value === '') throw invalid(`--${flag} must not be empty.`);
  const dir = path.resolve(value ?? fallback);
  if (isUnderProtectedHome(dir)) {
    throw new CliError('validation_error', `--${flag} ${dir} is under a directory the unit's ProtectHome=yes hides (/home, /root, /run/user).`, `Use a directory under /var/lib, e.g. --${flag} ${fallback}.`);
  }
  return dir;
}

function ipOption(value: string | undefined, flag: string, fallback: string): string {
  if (value === undefined) return fallback;
  if (!/^[0-9a-f.:]+$/i.test(value)) throw invalid(`--${flag} must be an IP address.`);
  return value;
}

function edgeOptions(flags: Record<string, string | boolean>, base: SystemUnitBase, home: string): SystemEdgeSpec | null {
  const edgeFlags = Object.keys(flags).filter((name) => name.startsWith('edge-'));
  if (flags.edge !== true) {
    if (edgeFlags.length > 0) throw invalid(`--${edgeFlags[0]} goes with --edge.`);
    return null;
  }
  const hostname = flags['edge-hostname'];
  if (typeof hostname !== 'string' || !HOSTNAME.test(hostname)) throw invalid('--edge needs --edge-hostname: the public DNS name of this host (its MX), e.g. mx.example.com.');
  if (flags['edge-acme-email'] !== undefined && flags['edge-acme'] !== true) throw invalid('--edge-acme-email goes with --edge-acme.');
  const dataDir = absoluteDir(flags['edge-data'] as string | undefined, 'edge-data', DEFAULT_SYSTEM_EDGE_DATA);
  if (dataDir === home) throw invalid('--edge-data must be a directory of its own, not the home.');
  const port = (flag: string, fallback: number) => {
    try {
      return parsePort(flags[flag], fallback, false);
    } catch {
      throw invalid(`--${flag} must be an integer from 1 to 65535.`);
    }
  };
  return {
    ...base,
    dataDir,
    hostname: hostname.toLowerCase(),
    smtpHost: ipOption(flags['edge-host'] as string | undefined, 'edge-host', EDGE_SMTP_HOST),
    smtpPort: port('edge-smtp-port', EDGE_SMTP_PORT),
    apiHost: ipOption(flags['edge-api-host'] as string | undefined, 'edge-api-host', EDGE_API_HOST),
    apiPort: port('edge-api-port', DEFAULT_EDGE_API_PORT),
    acme: flags['edge-acme'] === true ? { email: (flags['edge-acme-email'] as string | undefined) ?? null } : null,
  };
}

async function systemdVersion(): Promise<number | null> {
  const result = await runCommand('systemctl', ['--version']);
  return result.ok ? parseSystemdVersion(result.stdout) : null;
}

async function parseSystemArgs(args: string[]): Promise<SystemOptions> {
  const { flags, positionals } = parseArgs(args, FLAGS);
  const [action, ...extra] = positionals;
  if (action !== 'install') throw new CliError('not_supported', `svc service ${action ?? ''} --system is not a command; only install takes --system.`, 'Manage the installed units with systemctl (status, stop, disable svc.service svc-edge.service); see docs/service.md.');
  if (extra.length > 0) throw invalid(`Unexpected argument "${extra[0]}".`);
  const user = (flags.user as string | undefined) ?? DEFAULT_SYSTEM_USER;
  if (!USER_NAME.test(user) || user === 'root') throw invalid('--user must be a system user name (lowercase letters, digits, _ and -), not root.');
  const home = absoluteDir(flags.home as string | undefined, 'home', DEFAULT_SYSTEM_HOME);
  let port: number;
  try {
    port = parsePort(flags.port, DEFAULT_SERVICE_PORT, false);
  } catch {
    throw invalid('--port must be an integer from 1 to 65535.');
  }
  const base: SystemUnitBase = { nodePath: process.execPath, svcScript: path.join(packageRoot, 'bin', 'svc'), user, systemdVersion: await systemdVersion() };
  return { print: flags.print === true, json: flags.json === true, service: { ...base, home, port }, edge: edgeOptions(flags as Record<string, string | boolean>, base, home) };
}

/** The home must exist and be sealed with systemd-creds: the unit has no other way to unlock it. */
function requireSealedHome(home: string): void {
  const initFix = `Create it as root with \`svc init --home ${home} --unlock systemd-creds\`, then run this again.`;
  let keys: { unlock?: unknown } | null = null;
  try {
    keys = JSON.parse(fs.readFileSync(homeFiles(home).keys, 'utf8')) as { unlock?: unknown } | null;
  } catch {
    throw new CliError('action_required', `The home ${home} is not initialized (no readable keys.json).`, initFix);
  }
  if (keys?.unlock !== 'systemd-creds') {
    throw new CliError(
      'action_required',
      `The home ${home} keeps its key in the OS keyring, which a system service cannot open (no login session, no D-Bus).`,
      `Keep it as a per-user service (\`svc service install --home ${home}\`), or create a server home with \`svc init --home ${DEFAULT_SYSTEM_HOME} --unlock systemd-creds\`.`,
    );
  }
  if (!fs.existsSync(kekCredentialFile(home))) {
    throw new CliError('action_required', `The sealed credential ${kekCredentialFile(home)} is missing.`, 'Restore it from this machine\'s backup; a credential sealed on another machine does not open here.');
  }
}

function renderUnits(opts: SystemOptions): SystemUnit[] {
  try {
    const units = [{ name: SYSTEM_SERVICE_UNIT, path: path.join(SYSTEM_UNIT_DIR, SYSTEM_SERVICE_UNIT), text: renderSystemServiceUnit(opts.service) }];
    if (opts.edge) units.push({ name: SYSTEM_EDGE_UNIT, path: path.join(SYSTEM_UNIT_DIR, SYSTEM_EDGE_UNIT), text: renderSystemEdgeUnit(opts.edge) });
    return units;
  } catch (err) {
    throw new CliError('not_supported', `The units cannot express these paths: ${err instanceof Error ? err.message : 'invalid characters'}.`, 'Use paths without spaces, colons, quotes, percent signs or line breaks.');
  }
}

async function must(file: string, args: string[], what: string): Promise<void> {
  const result = await runCommand(file, args);
  if (!result.ok) {
    const detail = result.missing ? `${file} is not installed` : firstLine(result);
    throw new CliError('service_unavailable', `Could not ${what}${detail ? `: ${detail}` : '.'}`, 'Fix the cause shown and run `svc service install --system` again; it is safe to repeat.');
  }
}

async function ensureUser(user: string, home: string): Promise<boolean> {
  if ((await runCommand('id', ['-u', user])).ok) return false;
  await must('useradd', ['--system', '--user-group', '--home-dir', home, '--no-create-home', '--shell', NOLOGIN_SHELL, user], `create the system user ${user}`);
  return true;
}

/** The unit's user owns what the unit may write: the home, or the edge's data directory. */
async function handOver(dir: string, user: string): Promise<void> {
  fs.mkdirSync(dir, { recursive: true, mode: DATA_DIR_MODE });
  fs.chmodSync(dir, DATA_DIR_MODE);
  await must('chown', ['-R', `${user}:${user}`, dir], `give ${dir} to ${user}`);
}

async function install(opts: SystemOptions, units: SystemUnit[]): Promise<Record<string, unknown>> {
  if (process.getuid?.() !== 0) throw new CliError('missing_permission', 'Installing system units needs root.', 'Run it with sudo, or add --print to see the units without installing them.');
  if (isSourceCheckout(packageRoot)) {
    throw new CliError('not_supported', 'Install requires a release package; this svc runs from a source checkout, whose paths change with every build.', 'Install the package system-wide (npm install -g, as root) and run `svc service install --system` from there; --print works from a checkout.');
  }
  for (const file of [opts.service.nodePath, opts.service.svcScript]) {
    if (isUnderProtectedHome(file)) throw new CliError('not_supported', `${file} is under a directory the units' ProtectHome=yes hides.`, 'Install Node.js and svc system-wide (e.g. under /usr or /usr/local), then run this again.');
  }
  if ((await runCommand('systemctl', ['--version'])).missing) throw new CliError('not_supported', 'systemd is not available on this system.', 'Run `svc serve` from your own process supervisor instead.');
  const userCreated = await ensureUser(opts.service.user, opts.service.home);
  await handOver(opts.service.home, opts.service.user);
  if (opts.edge) await handOver(opts.edge.dataDir, opts.edge.user);
  for (const unit of units) {
    writeFileAtomic(unit.path, unit.text);
    fs.chmodSync(unit.path, UNIT_FILE_MODE);
  }
  await must('systemctl', ['daemon-reload'], 'reload the systemd units');
  for (const unit of units) {
    await must('systemctl', ['enable', unit.name], `enable ${unit.name}`);
    // restart, not `enable --now`: a reinstall after an upgrade must replace the running process.
    await must('systemctl', ['restart', unit.name], `start ${unit.name}`);
  }
  return { installed: true, user: opts.service.user, user_created: userCreated, home: opts.service.home, units: units.map((u) => ({ name: u.name, path: u.path })) };
}

/** Entry for `svc service ... --system`; returns the exit code. */
export async function runSystemServiceCommand(args: string[]): Promise<number> {
  const json = args.includes('--json');
  try {
    const opts = await parseSystemArgs(args);
    requireSealedHome(opts.service.home);
    const units = renderUnits(opts);
    if (opts.print) {
      process.stdout.write(opts.json ? JSON.stringify({ installed: false, units }) + '\n' : units.map((u) => `# ${u.path}\n${u.text}`).join('\n'));
      return EXIT.ok;
    }
    const report = await install(opts, units);
    process.stdout.write(
      opts.json
        ? JSON.stringify(report) + '\n'
        : `Installed and started ${units.map((u) => u.name).join(' and ')} (user ${opts.service.user}, home ${opts.service.home}).\n  logs: journalctl -u ${SYSTEM_SERVICE_UNIT}${opts.edge ? ` -u ${SYSTEM_EDGE_UNIT}` : ''}\n`,
    );
    return EXIT.ok;
  } catch (err) {
    return reportCliError(err, json);
  }
}
