/** Runs the built `svc` CLI as a subprocess, as the owner (--home) or as an agent (SVC_URL + SVC_API_KEY). */
import { spawn } from 'node:child_process';
import { svcBin } from '../helpers/svc.js';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON. */
  json<T = Record<string, unknown>>(): T;
  /** stderr parsed as JSON (the `--json` error form). */
  error(): { error: Record<string, unknown> & { code: string; message: string } };
}

/** The environment without agent variables, so owner runs are not turned into agent runs. */
function baseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.SVC_URL;
  delete env.SVC_API_KEY;
  delete env.SVC_HOME;
  return env;
}

export function svcCli(args: string[], opts: { env?: NodeJS.ProcessEnv; input?: string | Buffer } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [svcBin, ...args], { env: { ...baseEnv(), ...opts.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString('utf8');
      resolve({
        code,
        stdout,
        stderr,
        json: <T>() => JSON.parse(stdout) as T,
        error: () => JSON.parse(stderr) as ReturnType<CliRun['error']>,
      });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** An agent's environment for a service URL and an API key. */
export const agentEnv = (url: string, key: string): NodeJS.ProcessEnv => ({ SVC_URL: url, SVC_API_KEY: key });
