/**
 * Windows logon scheduled tasks: the Task Scheduler XML, the `cmd /c` line that redirects the
 * logs (a task action cannot redirect output itself), and how a task's state maps to ours.
 */
import os from 'node:os';
import path from 'node:path';
import { escapeXml, unescapeXml } from './xml.js';
import { portFromServeArguments, serveArguments, serviceDescription, splitCommandLine, type ObservedState, type ServiceSpec } from './service-spec.js';

/** Task Scheduler's shortest restart interval and a bounded retry count, like systemd's start limit. */
export const TASK_RESTART_INTERVAL = 'PT1M';
export const TASK_RESTART_COUNT = 3;

/** The task XML we register is kept here so status can read the port back and uninstall knows it exists. */
export function windowsTaskDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(env.LOCALAPPDATA ?? path.join(os.homedir(), 'AppData', 'Local'), 'svc-tasks');
}

/** `cmd` expands `%VAR%` even inside quotes and has no escape there, and `"` cannot be nested. */
function checkCmdSafe(value: string): string {
  if (/["%\r\n]/.test(value)) throw new Error('paths for a scheduled task cannot contain ", % or line breaks');
  return value;
}

/** /d skips AutoRun commands; /s /c runs the quoted command line that follows. */
const CMD_PREFIX = '/d /s /c ';
const quote = (value: string) => `"${checkCmdSafe(value)}"`;
const PLAIN_ARG = /^[A-Za-z0-9_.:=+-]+$/;

/**
 * Arguments for `cmd.exe`: `/s /c "<command line>"`. With /s, cmd strips exactly the outer quotes,
 * so the quoted paths inside survive; `>>` appends like systemd's `append:`.
 */
export function windowsTaskArguments(spec: ServiceSpec): string {
  const words = [spec.nodePath, ...serveArguments(spec)].map((w) => (PLAIN_ARG.test(w) ? w : quote(w)));
  return `${CMD_PREFIX}"${words.join(' ')} 1>>${quote(spec.logs.stdout)} 2>>${quote(spec.logs.stderr)}"`;
}

/** The port of an installed task, read from the command line inside its cmd arguments. */
export function windowsTaskPort(xml: string): number | null {
  const args = /<Arguments>([\s\S]*?)<\/Arguments>/.exec(xml);
  if (!args) return null;
  const line = unescapeXml(args[1]);
  if (!line.startsWith(CMD_PREFIX)) return null;
  // Undo what /s does: strip the outer quotes around the whole command line.
  const inner = line.slice(CMD_PREFIX.length).replace(/^"/, '').replace(/"$/, '');
  return portFromServeArguments(splitCommandLine(inner, false));
}

export interface TaskAccount {
  /** `DOMAIN\user` of the person installing: the task runs only in their logon session. */
  userId: string;
  /** Absolute path of cmd.exe (`%ComSpec%`). */
  cmdPath: string;
}

export function renderWindowsTaskXml(spec: ServiceSpec, account: TaskAccount): string {
  const user = escapeXml(account.userId);
  return [
    '<?xml version="1.0" encoding="UTF-16"?>',
    '<!-- Written by `svc service install`. Run it again after upgrading svc or Node.js; do not edit. -->',
    '<Task version="1.2" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">',
    '  <RegistrationInfo>',
    `    <Description>${escapeXml(serviceDescription(spec))}</Description>`,
    '  </RegistrationInfo>',
    '  <Triggers>',
    '    <LogonTrigger>',
    '      <Enabled>true</Enabled>',
    `      <UserId>${user}</UserId>`,
    '    </LogonTrigger>',
    '  </Triggers>',
    '  <Principals>',
    '    <Principal id="Author">',
    `      <UserId>${user}</UserId>`,
    // The user's own logon session: no stored password and no administrator rights needed.
    '      <LogonType>InteractiveToken</LogonType>',
    '      <RunLevel>LeastPrivilege</RunLevel>',
    '    </Principal>',
    '  </Principals>',
    '  <Settings>',
    '    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>',
    '    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>',
    '    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>',
    '    <StartWhenAvailable>true</StartWhenAvailable>',
    // PT0S: no time limit; the default would stop the service after 72 hours.
    '    <ExecutionTimeLimit>PT0S</ExecutionTimeLimit>',
    '    <RestartOnFailure>',
    `      <Interval>${TASK_RESTART_INTERVAL}</Interval>`,
    `      <Count>${TASK_RESTART_COUNT}</Count>`,
    '    </RestartOnFailure>',
    '    <Enabled>true</Enabled>',
    '  </Settings>',
    '  <Actions Context="Author">',
    '    <Exec>',
    `      <Command>${escapeXml(account.cmdPath)}</Command>`,
    `      <Arguments>${escapeXml(windowsTaskArguments(spec))}</Arguments>`,
    `      <WorkingDirectory>${escapeXml(spec.home)}</WorkingDirectory>`,
    '    </Exec>',
    '  </Actions>',
    '</Task>',
    '',
  ].join('\r\n');
}

/** schtasks reads task XML reliably only as UTF-16 LE with a byte-order mark, as it exports it. */
export function encodeTaskXml(xml: string): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(xml, 'utf16le')]);
}

export function decodeTaskXml(data: Buffer): string {
  if (data[0] === 0xff && data[1] === 0xfe) return data.subarray(2).toString('utf16le');
  return data.toString('utf8');
}

/** Printed by the PowerShell query when the task does not exist. */
export const TASK_NOT_REGISTERED = 'NotRegistered';

/** PowerShell prints the task's state enum name, which is not localized (unlike schtasks output). */
export function taskQueryScript(taskName: string): string {
  const name = taskName.replace(/'/g, "''");
  return `$t = Get-ScheduledTask -TaskName '${name}' -TaskPath '\\' -ErrorAction SilentlyContinue; if ($t) { [string]$t.State } else { '${TASK_NOT_REGISTERED}' }`;
}

/** Maps the output of `taskQueryScript`. */
export function parseTaskState(output: string, installed: boolean): ObservedState {
  switch (output.trim()) {
    case 'Running':
      return { registered: true, running: true, state: 'running' };
    case 'Queued':
      return { registered: true, running: false, state: 'starting' };
    case 'Ready':
      return { registered: true, running: false, state: 'stopped' };
    case 'Disabled':
      return { registered: false, running: false, state: 'stopped' };
    case TASK_NOT_REGISTERED:
      return { registered: false, running: false, state: installed ? 'not_registered' : 'not_installed' };
    default:
      return { registered: null, running: null, state: 'unknown' };
  }
}
