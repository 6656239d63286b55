/**
 * Runs a system unit's ExecStart the way systemd would for `svc service install --system`, without
 * systemd as PID 1: `env -i` plus only the unit's Environment= lines, stdin from /dev/null, no
 * D-Bus, no TTY, and for LoadCredentialEncrypted= a fresh credentials directory that
 * `systemd-creds decrypt` filled (as systemd does at each start).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { splitCommandLine } from '../../src/service/service-spec.js';
import { tempDir } from './svc.js';

export interface UnitCommand {
  argv: string[];
  environment: Record<string, string>;
  /** LoadCredentialEncrypted= entries: credential name → sealed file. */
  credentials: { name: string; file: string }[];
}

/** All values of `Key=` in the unit, in order. */
export function unitValues(unit: string, key: string): string[] {
  return unit
    .split('\n')
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1));
}

export function unitCommand(unit: string): UnitCommand {
  const [exec] = unitValues(unit, 'ExecStart');
  const argv = splitCommandLine(exec, true).map((w) => w.replace(/%%/g, '%').replace(/\$\$/g, '$'));
  const environment: Record<string, string> = {};
  for (const value of unitValues(unit, 'Environment')) {
    const eq = value.indexOf('=');
    environment[value.slice(0, eq)] = value.slice(eq + 1);
  }
  const credentials = unitValues(unit, 'LoadCredentialEncrypted').map((v) => ({ name: v.slice(0, v.indexOf(':')), file: v.slice(v.indexOf(':') + 1) }));
  return { argv, environment, credentials };
}

export interface UnitProcess {
  proc: ChildProcess;
  lines: Record<string, unknown>[];
  stderr: () => string;
  exited: Promise<number | null>;
  /** Resolves with the first stdout JSON line of this event; rejects when the process exits first. */
  ready: Promise<Record<string, unknown>>;
}

/** Decrypts each credential into a fresh 0500 directory, as systemd does before ExecStart. */
export function credentialsDirectory(command: UnitCommand, decryptEnv: NodeJS.ProcessEnv): string | null {
  if (command.credentials.length === 0) return null;
  const dir = tempDir('svc-creds-');
  for (const { name, file } of command.credentials) {
    const out = path.join(dir, name);
    const result = spawnSync('systemd-creds', ['decrypt', `--name=${name}`, file, out], { env: decryptEnv, encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`systemd-creds decrypt failed: ${result.stderr}`);
    fs.chmodSync(out, 0o400);
  }
  fs.chmodSync(dir, 0o500);
  return dir;
}

export function startUnit(command: UnitCommand, credentialsDir: string | null, readyEvent: string): UnitProcess {
  const env: Record<string, string> = { ...command.environment, ...(credentialsDir ? { CREDENTIALS_DIRECTORY: credentialsDir } : {}) };
  const proc = spawn('env', ['-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...command.argv], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Record<string, unknown>[] = [];
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      const data = JSON.parse(line) as Record<string, unknown>;
      lines.push(data);
      if (data.event === readyEvent) resolve(data);
    });
    void exited.then((code) => reject(new Error(`${command.argv.slice(1, 3).join(' ')} exited with ${code} before ${readyEvent}: ${stderr}`)));
  });
  return { proc, lines, stderr: () => stderr, exited, ready };
}
