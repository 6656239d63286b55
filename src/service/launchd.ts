/** launchd agents: where the plist lives, what it says, and how `launchctl print` maps to a state. */
import os from 'node:os';
import path from 'node:path';
import { escapeXml, unescapeXml } from './xml.js';
import { portFromServeArguments, serveArguments, type ObservedState, type ServiceSpec, type ServiceState } from './service-spec.js';

/** Seconds launchd waits before starting a job again after it exited. */
export const THROTTLE_INTERVAL_SEC = 10;
/** 0o077 written in decimal, as launchd's Umask key expects: files the service creates stay private. */
export const PRIVATE_UMASK = 0o077;

export function launchAgentsDir(): string {
  return path.join(os.homedir(), 'Library', 'LaunchAgents');
}

/** The per-user GUI domain that launch agents belong to. */
export function launchdDomain(uid: number): string {
  return `gui/${uid}`;
}

const str = (value: string) => `<string>${escapeXml(value)}</string>`;

export function renderLaunchdPlist(spec: ServiceSpec, label: string): string {
  const args = [spec.nodePath, ...serveArguments(spec)].map((arg) => `    ${str(arg)}`);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    '<!-- Written by `svc service install`. Run it again after upgrading svc or Node.js; do not edit. -->',
    '<plist version="1.0">',
    '<dict>',
    `  <key>Label</key>${str(label)}`,
    '  <key>ProgramArguments</key>',
    '  <array>',
    ...args,
    '  </array>',
    `  <key>WorkingDirectory</key>${str(spec.home)}`,
    '  <key>RunAtLoad</key><true/>',
    // Restart after a crash, not after a clean stop (SIGTERM exits 0), matching systemd's on-failure.
    '  <key>KeepAlive</key>',
    '  <dict>',
    '    <key>SuccessfulExit</key><false/>',
    '  </dict>',
    `  <key>ThrottleInterval</key><integer>${THROTTLE_INTERVAL_SEC}</integer>`,
    '  <key>ProcessType</key><string>Background</string>',
    `  <key>Umask</key><integer>${PRIVATE_UMASK}</integer>`,
    `  <key>StandardOutPath</key>${str(spec.logs.stdout)}`,
    `  <key>StandardErrorPath</key>${str(spec.logs.stderr)}`,
    '</dict>',
    '</plist>',
    '',
  ].join('\n');
}

/** The port of an installed plist, read from its ProgramArguments. */
export function launchdPlistPort(plist: string): number | null {
  const array = /<key>ProgramArguments<\/key>\s*<array>([\s\S]*?)<\/array>/.exec(plist);
  if (!array) return null;
  return portFromServeArguments([...array[1].matchAll(/<string>([\s\S]*?)<\/string>/g)].map((m) => unescapeXml(m[1])));
}

/** Maps the `state = ...` line of `launchctl print gui/<uid>/<label>` (the job is loaded). */
export function parseLaunchctlPrint(output: string): ObservedState {
  const match = /^\s*state = (.+)$/m.exec(output);
  const raw = match ? match[1].trim() : '';
  let state: ServiceState = 'unknown';
  if (raw === 'running') state = 'running';
  else if (raw === 'not running' || raw === 'waiting') state = 'stopped';
  else if (raw.startsWith('spawn') || raw === 'xpcproxy') state = 'starting';
  else if (raw === 'exiting') state = 'stopping';
  return { registered: true, running: state === 'running', state };
}
