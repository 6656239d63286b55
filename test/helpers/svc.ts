/** Starts a real `svc serve` process in a temp home and talks to it over HTTP. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const svcBin = path.join(repoRoot, 'bin', 'svc');

export function tempDir(prefix = 'svc-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface RunningSvc {
  url: string;
  ownerToken: string;
  setupCode: string | null;
  home: string;
  proc: ChildProcess;
  stdoutLines: Record<string, unknown>[];
  stderr: () => string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

export interface StartOptions {
  home?: string;
  init?: boolean;
  args?: string[];
  env?: NodeJS.ProcessEnv;
}

/**
 * Tests run many services side by side: each listens on a free port (`--port 0`, and
 * `--smtp-port 0` for the built-in edge) unless the test chose one, or asked for the fixed
 * defaults with `--default-ports` (a test-only marker removed here; test/e2e/stable-ports.test.ts).
 */
export function testPorts(args: string[]): string[] {
  if (args.includes('--default-ports')) return args.filter((a) => a !== '--default-ports');
  const out = [...args];
  if (!out.includes('--port')) out.push('--port', '0');
  if (out.includes('--local-edge') && !out.includes('--smtp-port')) out.push('--smtp-port', '0');
  return out;
}

/** Spawns svc serve and waits for `server.ready` (or rejects with what it printed). */
export async function startSvc(opts: StartOptions = {}): Promise<RunningSvc> {
  const home = opts.home ?? path.join(tempDir(), 'home');
  const args = testPorts(['serve', '--home', home, ...(opts.init === false ? [] : ['--init']), ...(opts.args ?? [])]);
  const proc = spawn(process.execPath, [svcBin, ...args], { env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const stdoutLines: Record<string, unknown>[] = [];
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const rl = readline.createInterface({ input: proc.stdout! });
    rl.on('line', (line) => {
      const data = JSON.parse(line) as Record<string, unknown>;
      stdoutLines.push(data);
      if (data.event === 'server.ready') resolve(data);
    });
    void exited.then((code) => reject(new Error(`svc exited with ${code} before ready: ${stderr}`)));
  });
  const connection = JSON.parse(fs.readFileSync(path.join(home, 'connection.json'), 'utf8')) as { owner_token: string };
  const setup = stdoutLines.find((l) => l.event === 'owner.setup_required');
  return {
    url: ready.url as string,
    ownerToken: connection.owner_token,
    setupCode: (setup?.code as string | undefined) ?? null,
    home,
    proc,
    stdoutLines,
    stderr: () => stderr,
    exited,
    stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

/** Runs svc serve expecting it to fail; returns the exit code and the parsed stderr line. */
export async function failingStart(opts: StartOptions & { home: string }): Promise<{ code: number | null; failure: Record<string, unknown>; stderr: string; stdout: string }> {
  const args = testPorts(['serve', '--home', opts.home, ...(opts.init ? ['--init'] : []), ...(opts.args ?? [])]);
  const proc = spawn(process.execPath, [svcBin, ...args], { env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  proc.stdout!.on('data', (d) => (stdout += d));
  const code = await new Promise<number | null>((resolve) => proc.on('exit', (c) => resolve(c)));
  const lines = stderr.trim().split('\n').filter(Boolean);
  return { code, failure: lines.length === 1 ? (JSON.parse(lines[0]) as Record<string, unknown>) : { raw: stderr }, stderr, stdout };
}

export interface ApiResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** JSON request helper. */
export async function api<T = Record<string, unknown>>(
  base: string,
  method: string,
  urlPath: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string>; rawBody?: string } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + urlPath, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** The session cookie pair (`name=value`) from a Set-Cookie header. */
export function sessionCookie(res: ApiResponse<unknown>): string {
  const set = res.headers.get('set-cookie') ?? '';
  return set.split(';')[0];
}

export const OWNER_PASSWORD = 'correct horse battery staple';

/** Completes owner setup and returns the browser session (cookie + csrf). */
export async function setupOwner(svc: RunningSvc, password = OWNER_PASSWORD): Promise<{ cookie: string; csrf: string }> {
  const res = await api<{ csrf_token: string }>(svc.url, 'POST', '/v0/owner/setup', { body: { password, code: svc.setupCode } });
  if (res.status !== 200) throw new Error(`setup failed: ${res.status} ${res.text}`);
  return { cookie: sessionCookie(res), csrf: res.body.csrf_token };
}
