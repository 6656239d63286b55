/** systemd user units: where they live, what they say, and how `systemctl show` maps to a state. */
import os from 'node:os';
import path from 'node:path';
import { portFromServeArguments, SERVE_ENVIRONMENT, serveArguments, serviceDescription, splitCommandLine, type ObservedState, type ServiceSpec, type ServiceState } from './service-spec.js';

/** A crash-looping service (e.g. a locked keyring) gives up after this many starts in the window. */
export const START_LIMIT_BURST = 5;
export const START_LIMIT_INTERVAL_SEC = 300;
/** Pause between automatic restarts so a failing start does not spin. */
export const RESTART_SEC = 5;

/** `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user` (the user manager's search path). */
export function systemdUserUnitDir(env: NodeJS.ProcessEnv = process.env): string {
  const configHome = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config');
  return path.join(configHome, 'systemd', 'user');
}

/** The link `systemctl enable` creates for `WantedBy=default.target`. */
export function systemdWantsLink(unitDir: string, unitName: string): string {
  return path.join(unitDir, 'default.target.wants', unitName);
}

function rejectNewline(value: string): string {
  if (/[\r\n]/.test(value)) throw new Error('systemd unit values cannot contain line breaks');
  return value;
}

/** `%` starts a specifier in every unit setting; doubling it keeps the character literal. */
export function escapeSpecifiers(value: string): string {
  return rejectNewline(value).replace(/%/g, '%%');
}

/** Characters systemd takes literally in an unquoted ExecStart word. */
const PLAIN_WORD = /^[A-Za-z0-9_@+=:,./-]+$/;

/** One ExecStart word: quoted when needed, with `$` doubled so no variable is expanded. */
export function systemdExecWord(value: string): string {
  const literal = escapeSpecifiers(value).replace(/\$/g, '$$$$');
  if (PLAIN_WORD.test(value)) return literal;
  return `"${literal.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

export function renderSystemdUnit(spec: ServiceSpec): string {
  const execStart = [spec.nodePath, ...serveArguments(spec)].map(systemdExecWord).join(' ');
  return [
    '# Written by `svc service install`. Run it again after upgrading svc or Node.js; do not edit.',
    '[Unit]',
    `Description=${escapeSpecifiers(serviceDescription(spec))}`,
    `StartLimitIntervalSec=${START_LIMIT_INTERVAL_SEC}`,
    `StartLimitBurst=${START_LIMIT_BURST}`,
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${execStart}`,
    ...Object.entries(SERVE_ENVIRONMENT).map(([name, value]) => `Environment=${name}=${value}`),
    'Restart=on-failure',
    `RestartSec=${RESTART_SEC}`,
    // Anything the service creates stays private to the user, like the home itself.
    'UMask=0077',
    `StandardOutput=append:${escapeSpecifiers(spec.logs.stdout)}`,
    `StandardError=append:${escapeSpecifiers(spec.logs.stderr)}`,
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ].join('\n');
}

/** The port of an installed unit, read from its ExecStart line. */
export function systemdUnitPort(unit: string): number | null {
  const line = /^ExecStart=(.*)$/m.exec(unit);
  if (!line) return null;
  const words = splitCommandLine(line[1], true).map((w) => w.replace(/%%/g, '%').replace(/\$\$/g, '$'));
  return portFromServeArguments(words);
}

/** Properties asked of `systemctl --user show`; each comes back as `Name=value`. */
export const SYSTEMD_SHOW_PROPERTIES = ['LoadState', 'ActiveState', 'SubState', 'UnitFileState'] as const;

const ACTIVE_STATES: Record<string, ServiceState> = {
  active: 'running',
  reloading: 'running',
  activating: 'starting',
  deactivating: 'stopping',
  inactive: 'stopped',
  failed: 'failed',
};

/** Unit-file states under which the user manager starts the unit at login. */
const ENABLED_STATES = new Set(['enabled', 'enabled-runtime', 'linked', 'linked-runtime']);

/** Maps `systemctl --user show -p LoadState,ActiveState,SubState,UnitFileState <unit>` output. */
export function parseSystemctlShow(output: string, installed: boolean): ObservedState {
  const props = new Map<string, string>();
  for (const line of output.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) props.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
  }
  const loadState = props.get('LoadState') ?? '';
  const activeState = props.get('ActiveState') ?? '';
  const running = activeState === 'active' || activeState === 'reloading';
  if (loadState === 'not-found' && !running) {
    return { registered: false, running: false, state: installed ? 'not_registered' : 'not_installed' };
  }
  const registered = ENABLED_STATES.has(props.get('UnitFileState') ?? '');
  const state = ACTIVE_STATES[activeState] ?? 'unknown';
  return { registered, running, state };
}
