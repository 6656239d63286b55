/**
 * The platform's per-user service manager (systemd user manager, launchd, Task Scheduler), seen
 * through the few operations `svc service` needs. Definitions are rendered by the pure modules;
 * this module only runs the manager's own commands.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CliError } from '../cli/exit-codes.js';
import { launchAgentsDir, launchdDomain, launchdPlistPort, parseLaunchctlPrint, renderLaunchdPlist } from './launchd.js';
import type { ServiceNames } from './names.js';
import { firstLine, runCommand, type CommandResult } from './run-command.js';
import { UNOBSERVED, type ObservedState, type ServiceSpec } from './service-spec.js';
import { parseSystemctlShow, renderSystemdUnit, SYSTEMD_SHOW_PROPERTIES, systemdUnitPort, systemdUserUnitDir, systemdWantsLink } from './systemd.js';
import { decodeTaskXml, encodeTaskXml, parseTaskState, renderWindowsTaskXml, TASK_NOT_REGISTERED, taskQueryScript, windowsTaskDir, windowsTaskPort } from './windows-task.js';

/** PowerShell starts slowly on a cold machine. */
const POWERSHELL_TIMEOUT_MS = 60_000;

export interface ServiceManager {
  /** Words for messages, e.g. "the systemd user manager". */
  readonly title: string;
  /** False when the platform lacks the manager entirely (install is then not supported). */
  present(): Promise<boolean>;
  unitName(names: ServiceNames): string;
  definitionPath(names: ServiceNames): string;
  renderDefinition(spec: ServiceSpec, names: ServiceNames): string | Buffer;
  /** The port in an installed definition; null when it cannot be read. */
  readPort(file: string): number | null;
  /** Whether the manager answers at all; when it does not, state cannot be observed. */
  reachable(names: ServiceNames): Promise<boolean>;
  /** Registers (or re-registers) the written definition and starts it; throws service_unavailable. */
  register(names: ServiceNames, definition: string): Promise<void>;
  /** Stops and unregisters while the definition still exists; throws service_unavailable. */
  unregister(names: ServiceNames, definition: string): Promise<void>;
  /** Tidies registration leftovers once the definition is gone; never fails. */
  afterRemove(names: ServiceNames, reachable: boolean): Promise<void>;
  observe(names: ServiceNames, installed: boolean): Promise<ObservedState>;
  /** How the user finishes the job when the manager could not be reached. */
  unreachableNote(names: ServiceNames, action: 'install' | 'uninstall', definition: string): string;
}

function refused(title: string, what: string, result: CommandResult, unit: string): CliError {
  const detail = firstLine(result);
  return new CliError(
    'service_unavailable',
    `${title} refused to ${what} ${unit}${detail ? `: ${detail}` : '.'}`,
    'Check the service manager (its status and logs for this unit), fix the cause, and run the command again.',
  );
}

function systemdUser(env: NodeJS.ProcessEnv): ServiceManager {
  const title = 'The systemd user manager';
  const systemctl = (...args: string[]) => runCommand('systemctl', ['--user', '--no-pager', ...args]);
  const observe = async (names: ServiceNames, installed: boolean): Promise<ObservedState> => {
    const result = await systemctl('show', `--property=${SYSTEMD_SHOW_PROPERTIES.join(',')}`, names.systemdUnit);
    return result.ok ? parseSystemctlShow(result.stdout, installed) : UNOBSERVED;
  };
  return {
    title,
    present: async () => !(await runCommand('systemctl', ['--version'])).missing,
    unitName: (names) => names.systemdUnit,
    definitionPath: (names) => path.join(systemdUserUnitDir(env), names.systemdUnit),
    renderDefinition: (spec) => renderSystemdUnit(spec),
    readPort: (file) => systemdUnitPort(fs.readFileSync(file, 'utf8')),
    // `show` without a unit reads the manager's own properties: the cheapest question it answers.
    reachable: async () => {
      const result = await systemctl('show', '--property=Version');
      return result.ok && result.stdout.startsWith('Version=');
    },
    async register(names) {
      const unit = names.systemdUnit;
      const reload = await systemctl('daemon-reload');
      if (!reload.ok) throw refused(title, 'reload its units before starting', reload, unit);
      const enable = await systemctl('enable', unit);
      if (!enable.ok) throw refused(title, 'enable', enable, unit);
      // restart, not `enable --now`: a reinstall after an upgrade must replace the running process.
      const restart = await systemctl('restart', unit);
      if (!restart.ok) throw refused(title, 'start', restart, unit);
    },
    async unregister(names) {
      const current = await observe(names, true);
      // A definition the manager never loaded (e.g. written under another XDG_CONFIG_HOME) has nothing to stop.
      if (current.state === 'not_registered') return;
      const disable = await systemctl('disable', '--now', names.systemdUnit);
      if (!disable.ok) throw refused(title, 'stop and disable', disable, names.systemdUnit);
    },
    async afterRemove(names, reachable) {
      const link = systemdWantsLink(systemdUserUnitDir(env), names.systemdUnit);
      try {
        if (fs.lstatSync(link).isSymbolicLink()) fs.rmSync(link);
      } catch {
        // No link: the unit was never enabled, or `disable` already removed it.
      }
      if (!reachable) return;
      await systemctl('daemon-reload');
      await systemctl('reset-failed', names.systemdUnit);
    },
    observe,
    unreachableNote(names, action) {
      const unit = names.systemdUnit;
      const user = os.userInfo().username;
      if (action === 'install') {
        return (
          `The unit file is written, but the systemd user manager could not be reached (no user session bus, as in containers, CI, su or sudo shells), so it is not started yet. ` +
          `In a login session of this user run: systemctl --user daemon-reload && systemctl --user enable --now ${unit}. ` +
          `To keep it running without a login session run: loginctl enable-linger ${user}`
        );
      }
      return (
        `The unit file is removed, but the systemd user manager could not be reached. ` +
        `If the service is still running, stop it from a login session of this user: systemctl --user stop ${unit} && systemctl --user daemon-reload`
      );
    },
  };
}

function launchdAgent(): ServiceManager {
  const title = 'launchd';
  const domain = launchdDomain(process.getuid?.() ?? 0);
  const launchctl = (...args: string[]) => runCommand('launchctl', args);
  const target = (names: ServiceNames) => `${domain}/${names.launchdLabel}`;
  return {
    title,
    present: async () => !(await launchctl('help')).missing,
    unitName: (names) => names.launchdLabel,
    definitionPath: (names) => path.join(launchAgentsDir(), `${names.launchdLabel}.plist`),
    renderDefinition: (spec, names) => renderLaunchdPlist(spec, names.launchdLabel),
    readPort: (file) => launchdPlistPort(fs.readFileSync(file, 'utf8')),
    reachable: async () => (await launchctl('print', domain)).ok,
    async register(names, definition) {
      // bootstrap refuses a label that is already loaded; unloading first makes reinstall replace it.
      await launchctl('bootout', target(names));
      await launchctl('enable', target(names));
      const boot = await launchctl('bootstrap', domain, definition);
      if (!boot.ok) throw refused(title, 'load', boot, names.launchdLabel);
    },
    async unregister(names) {
      if (!(await launchctl('print', target(names))).ok) return;
      const out = await launchctl('bootout', target(names));
      if (!out.ok) throw refused(title, 'unload', out, names.launchdLabel);
    },
    afterRemove: async () => undefined,
    async observe(names, installed) {
      const result = await launchctl('print', target(names));
      if (result.ok) return parseLaunchctlPrint(result.stdout);
      return { registered: false, running: false, state: installed ? 'not_registered' : 'not_installed' };
    },
    unreachableNote(names, action, definition) {
      if (action === 'install') {
        return `The plist is written, but launchd's session for this user could not be reached (e.g. an SSH login without a desktop session). It loads at the next login, or run in the desktop session: launchctl bootstrap ${domain} "${definition}"`;
      }
      return `The plist is removed, but launchd's session for this user could not be reached. If the agent is still loaded, run in the desktop session: launchctl bootout ${domain}/${names.launchdLabel}`;
    },
  };
}

function taskScheduler(env: NodeJS.ProcessEnv): ServiceManager {
  const title = 'Task Scheduler';
  const schtasks = (...args: string[]) => runCommand('schtasks', args);
  const query = (names: ServiceNames) =>
    runCommand('powershell.exe', ['-NoProfile', '-NonInteractive', '-Command', taskQueryScript(names.windowsTask)], POWERSHELL_TIMEOUT_MS);
  return {
    title,
    present: async () => !(await schtasks('/?')).missing,
    unitName: (names) => names.windowsTask,
    definitionPath: (names) => path.join(windowsTaskDir(env), `${names.windowsTask}.xml`),
    renderDefinition: (spec) =>
      encodeTaskXml(
        renderWindowsTaskXml(spec, {
          userId: env.USERDOMAIN ? `${env.USERDOMAIN}\\${os.userInfo().username}` : os.userInfo().username,
          cmdPath: env.ComSpec ?? path.join(env.SystemRoot ?? 'C:\\Windows', 'System32', 'cmd.exe'),
        }),
      ),
    readPort: (file) => windowsTaskPort(decodeTaskXml(fs.readFileSync(file))),
    reachable: async (names) => (await query(names)).ok,
    async register(names, definition) {
      const create = await schtasks('/Create', '/TN', names.windowsTask, '/XML', definition, '/F');
      if (!create.ok) throw refused(title, 'register', create, names.windowsTask);
      // /End stops a previous version after an upgrade; it fails harmlessly when nothing runs.
      await schtasks('/End', '/TN', names.windowsTask);
      const run = await schtasks('/Run', '/TN', names.windowsTask);
      if (!run.ok) throw refused(title, 'start', run, names.windowsTask);
    },
    async unregister(names) {
      const state = await query(names);
      if (state.ok && state.stdout.trim() === TASK_NOT_REGISTERED) return;
      await schtasks('/End', '/TN', names.windowsTask);
      const del = await schtasks('/Delete', '/TN', names.windowsTask, '/F');
      if (!del.ok) throw refused(title, 'delete', del, names.windowsTask);
    },
    afterRemove: async () => undefined,
    async observe(names, installed) {
      const result = await query(names);
      return result.ok ? parseTaskState(result.stdout, installed) : UNOBSERVED;
    },
    unreachableNote(names, action, definition) {
      if (action === 'install') {
        return `The task definition is written, but Task Scheduler could not be reached. Register it with: schtasks /Create /TN ${names.windowsTask} /XML "${definition}" /F`;
      }
      return `The task definition file is removed, but Task Scheduler could not be reached. Remove the task with: schtasks /Delete /TN ${names.windowsTask} /F`;
    },
  };
}

/** The manager for this platform, or null where svc has no per-user service support. */
export function serviceManagerFor(platform: NodeJS.Platform = process.platform, env: NodeJS.ProcessEnv = process.env): ServiceManager | null {
  if (platform === 'linux') return systemdUser(env);
  if (platform === 'darwin') return launchdAgent();
  if (platform === 'win32') return taskScheduler(env);
  return null;
}
