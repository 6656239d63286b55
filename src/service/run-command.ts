/** Runs a service-manager command without a shell and never throws: callers decide what a failure means. */
import { execFile } from 'node:child_process';

/** A manager command that hangs (e.g. waiting on a dead bus) must not hang the CLI. */
export const COMMAND_TIMEOUT_MS = 20_000;
const MAX_OUTPUT_BYTES = 1024 * 1024;

export interface CommandResult {
  ok: boolean;
  /** The program is not installed (ENOENT). */
  missing: boolean;
  stdout: string;
  stderr: string;
}

export function runCommand(file: string, args: string[], timeoutMs = COMMAND_TIMEOUT_MS): Promise<CommandResult> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: MAX_OUTPUT_BYTES, windowsHide: true, encoding: 'utf8' }, (err, stdout, stderr) => {
      const missing = (err as NodeJS.ErrnoException | null)?.code === 'ENOENT';
      resolve({ ok: !err, missing, stdout: stdout ?? '', stderr: stderr ?? '' });
    });
  });
}

/** The first line of a failed command's stderr, for an error message (manager output holds no secrets). */
export function firstLine(result: CommandResult): string {
  return (result.stderr || result.stdout).trim().split('\n')[0]?.trim() ?? '';
}
