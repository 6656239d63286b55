/**
 * Backup tests: svc started in a second, throwaway keyring session (another machine's credential
 * store: scripts/with-keyring.sh always makes a new one when nested), and the recovery code a
 * new home printed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { repoRoot, svcBin, testPorts, type RunningSvc } from './svc.js';

export const WITH_KEYRING = path.join(repoRoot, 'scripts', 'with-keyring.sh');

export function recoveryCodeOf(svc: RunningSvc): string {
  const line = svc.stdoutLines.find((l) => l.event === 'home.recovery_code');
  if (!line || typeof line.recovery_code !== 'string') throw new Error('svc serve --init printed no home.recovery_code line');
  return line.recovery_code;
}

export interface OtherMachine {
  url: string;
  ownerToken: string;
  home: string;
  /** Every JSON line the shell printed: restore's --json report, then svc serve's lines. */
  lines: Record<string, unknown>[];
  stop(): Promise<void>;
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * In a new keyring session: `svc restore FILE --home HOME` with the code on stdin, then
 * `svc serve --home HOME` with `serveArgs`, until `server.ready`. Rejects with what was printed
 * when either fails.
 */
export async function restoreOnOtherMachine(file: string, code: string, home: string, serveArgs: string[] = []): Promise<OtherMachine> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_KEYRING') && k !== 'SVC_URL' && k !== 'SVC_API_KEY' && k !== 'SVC_HOME'));
  const serve = testPorts(['serve', '--home', home, ...serveArgs]);
  const script = [
    `printf '%s\\n' "$RECOVERY_CODE" | ${shellQuote(process.execPath)} ${shellQuote(svcBin)} restore ${shellQuote(file)} --home ${shellQuote(home)} --recovery-code-file - --json`,
    `exec ${shellQuote(process.execPath)} ${shellQuote(svcBin)} ${serve.map(shellQuote).join(' ')}`,
  ].join(' && ');
  const proc: ChildProcess = spawn(WITH_KEYRING, ['sh', '-c', script], { env: { ...env, RECOVERY_CODE: code }, detached: true, stdio: ['ignore', 'pipe', 'pipe'], cwd: repoRoot });
  const lines: Record<string, unknown>[] = [];
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      const data = JSON.parse(line) as Record<string, unknown>;
      lines.push(data);
      if (data.event === 'server.ready') resolve(data);
    });
    void exited.then(() => reject(new Error(`restore or serve failed: ${stderr}`)));
  });
  const connection = JSON.parse(fs.readFileSync(path.join(home, 'connection.json'), 'utf8')) as { owner_token: string };
  return {
    url: ready.url as string,
    ownerToken: connection.owner_token,
    home,
    lines,
    async stop() {
      // The whole session: svc, then the keyring daemon and D-Bus the script started.
      try {
        process.kill(-proc.pid!, 'SIGTERM');
      } catch {
        /* gone already */
      }
      await exited;
    },
  };
}
