/**
 * The Cloudflare Email Worker edge run locally (`svc edge cloudflare dev`, workerd through
 * miniflare): start it, hand it mail the way Email Routing does (`POST /cdn-cgi/handler/email`),
 * call its edge API. Used by test/e2e/cloudflare-edge.test.ts and test/security/cloudflare-edge.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startEdgeProcess, type EdgeProcess } from './edge.js';

/** No telemetry or update checks from wrangler/miniflare: tests reach only loopback. */
export const NO_CLOUDFLARE_CALLS: NodeJS.ProcessEnv = { WRANGLER_SEND_METRICS: 'false', WRANGLER_SEND_ERROR_REPORTS: 'false', CLOUDFLARE_API_TOKEN: '', DO_NOT_TRACK: '1' };

export interface CloudflareDev {
  process: EdgeProcess;
  url: string;
  token: string;
  tokenFile: string;
  dataDir: string;
  /** Everything it printed so far, stdout and stderr. */
  output(): string;
}

export async function startCloudflareDev(dataDir: string, extra: string[] = []): Promise<CloudflareDev> {
  let stdout = '';
  const process = await startEdgeProcess(['cloudflare', 'dev', '--port', '0', '--data', dataDir, ...extra], NO_CLOUDFLARE_CALLS);
  process.proc.stdout!.on('data', (d) => (stdout += d));
  const ready = process.ready as unknown as { api: { url: string }; token_file: string };
  return {
    process,
    url: ready.api.url,
    tokenFile: ready.token_file,
    token: fs.readFileSync(ready.token_file, 'utf8').trim(),
    dataDir,
    output: () => JSON.stringify(process.ready) + stdout + process.stderr(),
  };
}

/** Hands one raw message to the Worker's email() as Email Routing would; miniflare answers 200, or 400 with the reject reason. */
export async function sendToWorker(url: string, from: string, to: string, raw: string | Buffer): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/cdn-cgi/handler/email?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`, { method: 'POST', body: raw });
  return { status: res.status, text: await res.text() };
}

export async function edgeCall<T = Record<string, unknown>>(url: string, token: string | null, method: string, route: string, body?: unknown): Promise<{ status: number; body: T; headers: Headers }> {
  const res = await fetch(url + route, {
    method,
    headers: { ...(token !== null ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (a sealed object)
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

/** Every file under `dir`, as bytes (the store workerd keeps on disk). */
export function filesUnder(dir: string): { file: string; bytes: Buffer }[] {
  const out: { file: string; bytes: Buffer }[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    out.push({ file, bytes: fs.readFileSync(file) });
  }
  return out;
}
