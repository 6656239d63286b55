/**
 * A real edge for tests, two ways: in-process (`startTestEdge`, an `Edge` on loopback ports with
 * a fresh home key pair and, like a paired home would, its routing pushed), and as the `svc edge`
 * process (`startEdgeProcess`, ready once it prints `edge.ready`), for tests that kill it.
 */
import type { Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import readline from 'node:readline';
import { Edge, type EdgeOptions } from '../../src/edge/edge.js';
import { generateHomeKeyPair, type HomeKeyPair } from '../../src/edge/sealed.js';
import { api, svcBin, tempDir, type ApiResponse } from './svc.js';

export interface RunningEdge {
  edge: Edge;
  dataDir: string;
  token: string;
  smtpPort: number;
  apiUrl: string;
  /** The home key pair the routing names; sealed objects open with its private key. */
  home: HomeKeyPair;
  call<T = Record<string, unknown>>(method: string, urlPath: string, body?: unknown): Promise<ApiResponse<T>>;
  stop(): Promise<void>;
}

export interface TestEdgeOptions extends Partial<EdgeOptions> {
  /** Reuse a home key pair (an edge restarted on the same data directory). */
  home?: HomeKeyPair;
  /** The routing pushed at start, as a paired home would push it; false pushes none. */
  route: { domains: string[]; addresses: string[] } | false;
}

/** An in-process edge on loopback ports, stopped at the test's teardown. */
export async function startTestEdge(t: Test, opts: TestEdgeOptions): Promise<RunningEdge> {
  const { home: givenHome, route, ...edgeOptions } = opts;
  const dataDir = edgeOptions.dataDir ?? path.join(tempDir('svc-edge-'), 'edge');
  const token = edgeOptions.apiToken ?? `edge_${randomBytes(32).toString('base64url')}`;
  const edge = new Edge({
    dataDir,
    smtp: { host: '127.0.0.1', port: 0 },
    api: { host: '127.0.0.1', port: 0 },
    apiToken: token,
    hostname: 'mx.home.test',
    ...edgeOptions,
  });
  const bound = await edge.start();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await edge.stop();
  };
  t.teardown(stop);
  const home = givenHome ?? (await generateHomeKeyPair());
  const running: RunningEdge = {
    edge,
    dataDir,
    token,
    smtpPort: bound.smtp.port,
    apiUrl: bound.api.url,
    home,
    call: (method, urlPath, body) => api(bound.api.url, method, urlPath, { token, body }),
    stop,
  };
  if (route) {
    const res = await running.call('PUT', '/routing', { recipient_public_key: home.publicJwk, ...route });
    if (res.status !== 200) throw new Error(`routing push failed: ${res.status} ${res.text}`);
  }
  return running;
}

/** What `svc edge` prints on stdout once it listens. */
export interface EdgeReady {
  event: 'edge.ready';
  token_file: string;
  api: { url: string };
  smtp: { host: string; port: number };
}

export interface EdgeProcess {
  proc: ChildProcess;
  ready: EdgeReady;
  /** Resolves when the process has exited (after a kill, say). */
  exited: Promise<unknown>;
  /** Everything it wrote to stderr so far (JSON event lines and the pairing help). */
  stderr(): string;
}

/** `svc edge` with these arguments; resolves at `edge.ready`, rejects (with its stderr) if it exits first. */
export async function startEdgeProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<EdgeProcess> {
  const proc = spawn(process.execPath, [svcBin, 'edge', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  const ready = await new Promise<EdgeReady>((resolve, reject) => {
    readline.createInterface({ input: proc.stdout! }).on('line', (l) => {
      const data = JSON.parse(l) as { event: string };
      if (data.event === 'edge.ready') resolve(data as EdgeReady);
    });
    void exited.then(() => reject(new Error(`svc edge exited before it was ready: ${stderr}`)));
  });
  return { proc, ready, exited, stderr: () => stderr };
}
