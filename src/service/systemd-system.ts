/**
 * System units for a headless server (`svc service install --system`): `svc.service` runs the
 * home, `svc-edge.service` the internet-facing edge. Both run as a dedicated system user under the
 * hardening a distribution ships; each may write only its own directory. The home's key arrives as
 * a systemd encrypted credential (src/keys/systemd-creds.ts), never from a keyring or a file in clear.
 */
import { KEK_CREDENTIAL_NAME, kekCredentialFile } from '../keys/systemd-creds.js';
import { SERVE_ENVIRONMENT, SERVICE_FLAVOR } from './service-spec.js';
import { escapeSpecifiers, systemdExecWord } from './systemd.js';

export const SYSTEM_UNIT_DIR = '/etc/systemd/system';
export const SYSTEM_SERVICE_UNIT = 'svc.service';
export const SYSTEM_EDGE_UNIT = 'svc-edge.service';
export const DEFAULT_SYSTEM_USER = 'svc';
/** Outside /home, /root and /run/user, which ProtectHome= hides. */
export const DEFAULT_SYSTEM_HOME = '/var/lib/svc';
export const DEFAULT_SYSTEM_EDGE_DATA = '/var/lib/svc-edge';
/** Where ProtectHome=yes leaves nothing visible: a home there could not be opened by the unit. */
export const PROTECTED_HOME_ROOTS = ['/home', '/root', '/run/user'] as const;

/** RestartSteps= and RestartMaxDelaySec= (growing pauses between restarts) exist from systemd 254 on. */
export const RESTART_BACKOFF_SINCE = 254;
/** With backoff: the first pause, the number of steps and the longest pause. */
export const BACKOFF_FIRST_SEC = 2;
export const BACKOFF_STEPS = 8;
export const BACKOFF_MAX_SEC = 300;
/** Without backoff (older systemd): one fixed pause, long enough that a failing start does not spin. */
export const FIXED_RESTART_SEC = 15;

export interface SystemUnitBase {
  /** Absolute Node.js binary (`process.execPath` at install time). */
  nodePath: string;
  /** Absolute `bin/svc` of the installed package. */
  svcScript: string;
  /** The system user both units run as. */
  user: string;
  /** `systemctl --version`'s number; null when unknown (then no backoff settings are written). */
  systemdVersion: number | null;
}

export interface SystemServiceSpec extends SystemUnitBase {
  home: string;
  port: number;
}

export interface SystemEdgeSpec extends SystemUnitBase {
  dataDir: string;
  hostname: string;
  /** SMTP listen address: every interface, since receiving internet mail is the edge's job. */
  smtpHost: string;
  smtpPort: number;
  /** The edge API stays on loopback unless the home is on another machine. */
  apiHost: string;
  apiPort: number;
  acme: { email: string | null } | null;
}

export function parseSystemdVersion(output: string): number | null {
  const match = /^systemd (\d+)/m.exec(output);
  return match ? Number(match[1]) : null;
}

function restartPolicy(version: number | null): string[] {
  if (version !== null && version >= RESTART_BACKOFF_SINCE) {
    return ['Restart=on-failure', `RestartSec=${BACKOFF_FIRST_SEC}`, `RestartSteps=${BACKOFF_STEPS}`, `RestartMaxDelaySec=${BACKOFF_MAX_SEC}`];
  }
  return ['Restart=on-failure', `RestartSec=${FIXED_RESTART_SEC}`];
}

/**
 * The sandbox shared by both units; each line is explained in docs/service.md. Capabilities and
 * the writable path are added per unit.
 */
const HARDENING = [
  'UMask=0077',
  'NoNewPrivileges=yes',
  'ProtectSystem=strict',
  'ProtectHome=yes',
  'PrivateTmp=yes',
  'PrivateDevices=yes',
  'ProtectKernelTunables=yes',
  'ProtectKernelModules=yes',
  'ProtectKernelLogs=yes',
  'ProtectControlGroups=yes',
  'ProtectClock=yes',
  'ProtectHostname=yes',
  'ProtectProc=invisible',
  'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK',
  'RestrictNamespaces=yes',
  'RestrictRealtime=yes',
  'RestrictSUIDSGID=yes',
  'LockPersonality=yes',
  'RemoveIPC=yes',
  '# V8 compiles JavaScript to machine code at run time, which needs writable+executable memory.',
  'MemoryDenyWriteExecute=no',
  'SystemCallArchitectures=native',
  'SystemCallFilter=@system-service',
  'SystemCallErrorNumber=EPERM',
];

function execStart(base: SystemUnitBase, args: string[]): string {
  return `ExecStart=${[base.nodePath, base.svcScript, ...args].map(systemdExecWord).join(' ')}`;
}

function header(description: string): string[] {
  return [
    '# Written by `svc service install --system`. Run it again after upgrading svc or Node.js; do not edit.',
    '[Unit]',
    `Description=${escapeSpecifiers(description)}`,
    'Wants=network-online.target',
    'After=network-online.target',
    // An unattended server keeps retrying (with the pauses below) instead of giving up for good.
    'StartLimitIntervalSec=0',
    '',
    '[Service]',
    'Type=simple',
  ];
}

/** A path in a setting that takes a list: quoted when it holds a space, specifiers escaped. */
function pathSetting(value: string): string {
  const escaped = escapeSpecifiers(value);
  if (/["\\]/.test(value)) throw new Error('systemd unit paths cannot contain quotes or backslashes');
  return /\s/.test(value) ? `"${escaped}"` : escaped;
}

export function renderSystemServiceUnit(spec: SystemServiceSpec): string {
  const args = ['serve', '--home', spec.home, '--port', String(spec.port), '--flavor', SERVICE_FLAVOR];
  const credential = kekCredentialFile(spec.home);
  if (/[\s:"\\]/.test(credential)) throw new Error('the home path cannot contain spaces, colons, quotes or backslashes');
  return [
    ...header(`svc mail service (home ${spec.home}, port ${spec.port})`),
    `User=${spec.user}`,
    `Group=${spec.user}`,
    execStart(spec, args),
    ...Object.entries(SERVE_ENVIRONMENT).map(([name, value]) => `Environment=${name}=${value}`),
    // systemd decrypts the sealed key into $CREDENTIALS_DIRECTORY/svc-kek, readable by this service only.
    `LoadCredentialEncrypted=${KEK_CREDENTIAL_NAME}:${escapeSpecifiers(credential)}`,
    ...restartPolicy(spec.systemdVersion),
    ...HARDENING,
    `ReadWritePaths=${pathSetting(spec.home)}`,
    // No capabilities at all: it listens on 127.0.0.1 at an unprivileged port.
    'CapabilityBoundingSet=',
    'AmbientCapabilities=',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

export function renderSystemEdgeUnit(spec: SystemEdgeSpec): string {
  const args = [
    'edge',
    '--data', spec.dataDir,
    '--host', spec.smtpHost,
    '--smtp-port', String(spec.smtpPort),
    '--api-host', spec.apiHost,
    '--api-port', String(spec.apiPort),
    '--hostname', spec.hostname,
    ...(spec.acme ? ['--acme', ...(spec.acme.email ? ['--acme-email', spec.acme.email] : [])] : []),
  ];
  return [
    ...header(`svc edge (SMTP ${spec.smtpHost}:${spec.smtpPort}, hostname ${spec.hostname})`),
    `User=${spec.user}`,
    `Group=${spec.user}`,
    execStart(spec, args),
    ...restartPolicy(spec.systemdVersion),
    ...HARDENING,
    `ReadWritePaths=${pathSetting(spec.dataDir)}`,
    // Ports below 1024 (SMTP 25, ACME HTTP 80, MTA-STS 443) without running as root; nothing else.
    'CapabilityBoundingSet=CAP_NET_BIND_SERVICE',
    'AmbientCapabilities=CAP_NET_BIND_SERVICE',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/** True when ProtectHome=yes would hide `dir` from the unit. */
export function isUnderProtectedHome(dir: string): boolean {
  return PROTECTED_HOME_ROOTS.some((root) => dir === root || dir.startsWith(`${root}/`));
}
