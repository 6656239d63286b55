/**
 * Calling the running service from the CLI (spec §5.1.5–6), in one of two modes:
 *
 * - **owner**: the loopback URL and the owner bearer token come from `<home>/connection.json`
 *   (home from --home, else SVC_HOME, else the flavor default), which `svc serve` rewrites on
 *   every start;
 * - **agent**: `SVC_URL` + `SVC_API_KEY` in the environment (an API key, possibly through a tunnel).
 *
 * API errors come back as CliErrors with the API's code, message, fix and extra fields, so they
 * exit with the spec's codes. When nothing answers, the home is examined: a home that is missing,
 * uninitialized, corrupt or cannot be unlocked is `action_required` (exit 6); an intact home whose
 * service is not running is `service_unavailable` (exit 10). docs/cli.md.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { readKek } from '../keys/credential-store.js';
import { kekCredentialFile } from '../keys/systemd-creds.js';
import { homeFiles, resolveHome, type Flavor } from '../keys/home.js';
import { CliError } from './exit-codes.js';
import { isSourceCheckout } from './package-root.js';
import type { ErrorCode } from '../core/errors.js';

/** A local service answers at once; longer means it is wedged or not svc. Remote (agent) calls get more. */
const OWNER_TIMEOUT_MS = 10_000;
const AGENT_TIMEOUT_MS = 30_000;
/** Variables that point the CLI at a (possibly remote) service as an agent. */
export const AGENT_VARIABLES = ['SVC_URL', 'SVC_API_KEY'] as const;

export interface OwnerConnection {
  url: string;
  ownerToken: string;
  home: string;
}

/** `--home`, else SVC_HOME, else the flavor default (source checkouts default to development). */
export function ownerHome(flags: { home?: string; flavor?: string }): string {
  const flavor = flags.flavor ?? (isSourceCheckout() ? 'development' : 'production');
  if (flavor !== 'development' && flavor !== 'production') throw new CliError('validation_error', '--flavor must be development or production.');
  if (flags.home === '') throw new CliError('validation_error', '--home must not be empty.');
  return resolveHome({ home: flags.home, flavor: flavor as Flavor });
}

const startFix = (home: string) => `Start it with \`svc serve --home "${home}"\` (or \`svc service install\`), then try again.`;
const notRunning = (home: string, why: string) => new CliError('service_unavailable', `svc is not running for the home ${home}: ${why}`, startFix(home));

/**
 * Why a home cannot serve, when that is the home's fault (exit 6), or null when the home looks
 * intact (so the service is simply not running). Only called after the service did not answer.
 */
export function homeProblem(home: string): CliError | null {
  const init = `Initialize it once with \`svc serve --init --home "${home}"\`.`;
  if (!fs.statSync(home, { throwIfNoEntry: false })?.isDirectory()) return new CliError('action_required', `The home ${home} does not exist.`, init);
  const keysFile = homeFiles(home).keys;
  let text: string;
  try {
    text = fs.readFileSync(keysFile, 'utf8');
  } catch {
    return new CliError('action_required', `The home ${home} is not initialized (it has no keys.json).`, init);
  }
  let keys: { version?: unknown; wrapped_key?: unknown; unlock?: unknown } | null;
  try {
    keys = JSON.parse(text) as { version?: unknown; wrapped_key?: unknown; unlock?: unknown } | null;
  } catch {
    keys = null;
  }
  if (!keys || typeof keys !== 'object' || keys.version !== 1 || typeof keys.wrapped_key !== 'string') {
    return new CliError('action_required', `keys.json in ${home} is unreadable or damaged.`, 'Restore keys.json together with svc.db from the same home backup.');
  }
  if (keys.unlock === 'systemd-creds') {
    // Unlocked by its system unit's credential: only the sealed file can be checked from here.
    const sealed = kekCredentialFile(home);
    return fs.existsSync(sealed) ? null : new CliError('action_required', `The sealed credential ${sealed} that unlocks the home ${home} is missing.`, 'Restore it from a backup of this machine; a credential sealed on another machine does not open here.');
  }
  // The credential store is consulted only on this failure path: a locked or missing item means
  // `svc serve` could not unlock the home either.
  try {
    const kek = readKek(home);
    if (!kek) {
      return new CliError('action_required', `The credential store item for the home ${home} is missing; the database cannot be opened without it.`, "Restore the item from this user's keychain backup, or use the home on the machine that holds it.");
    }
    kek.fill(0);
  } catch (err) {
    const fix = (err as { fix?: unknown }).fix;
    return new CliError('action_required', 'The credential store is locked or unavailable, so this home cannot be unlocked.', typeof fix === 'string' ? fix : 'Unlock the credential store for this user and try again.');
  }
  return null;
}

/** Refuses owner-only local commands when agent credentials are in the environment (spec §5.1.6). */
export function rejectAgentEnvironment(what: string, env: NodeJS.ProcessEnv = process.env): void {
  const set = AGENT_VARIABLES.filter((name) => env[name]);
  if (set.length === 0) return;
  throw new CliError(
    'missing_permission',
    `${what} act${what.endsWith('s') ? '' : 's'} as the owner of this machine's home and ${what.endsWith('s') ? 'are' : 'is'} not available with ${set.join(' and ')} set.`,
    `Run it as the owner, without ${AGENT_VARIABLES.join(' or ')} (e.g. env -u SVC_URL -u SVC_API_KEY svc ...).`,
  );
}

/** Reads connection.json (no agent variables allowed); a missing file is diagnosed (exit 6 or 10). */
export function readOwnerConnection(home: string): OwnerConnection {
  let text: string;
  try {
    text = fs.readFileSync(homeFiles(home).connection, 'utf8');
  } catch {
    throw homeProblem(home) ?? notRunning(home, 'it has no connection.json.');
  }
  try {
    const data = JSON.parse(text) as { url?: unknown; owner_token?: unknown };
    if (typeof data.url === 'string' && typeof data.owner_token === 'string') return { url: data.url, ownerToken: data.owner_token, home };
  } catch {
    /* reported below */
  }
  throw notRunning(home, 'its connection.json is unreadable.');
}

/** For `svc oauth`: owner commands refuse agent variables, then read connection.json. */
export function ownerConnection(home: string, env: NodeJS.ProcessEnv = process.env): OwnerConnection {
  rejectAgentEnvironment('Owner commands', env);
  return readOwnerConnection(home);
}

export interface CallOptions {
  body?: unknown;
  /** Query parameters; arrays repeat the parameter (spec §4), undefined values are left out. */
  query?: Record<string, string | number | boolean | string[] | undefined>;
  headers?: Record<string, string>;
  /** How long to wait for the answer, in ms, when longer than the usual (a request that waits, such as messages/wait). */
  timeoutMs?: number;
}

/** The running service as seen by one caller (owner or agent). */
export interface ServiceClient {
  mode: 'owner' | 'agent';
  url: string;
  /** The home in owner mode; null in agent mode. */
  home: string | null;
  /** One JSON request; the parsed body (undefined when empty), or a CliError. */
  call<T = unknown>(method: string, path: string, opts?: CallOptions): Promise<T>;
  /** One request whose successful body is returned as bytes (zone files); errors as in `call`. */
  bytes(method: string, path: string, opts?: CallOptions): Promise<{ body: Buffer; contentType: string | null }>;
}

function withQuery(path: string, query: CallOptions['query']): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) params.append(key, String(v));
  }
  const qs = params.toString();
  return qs ? `${path}${path.includes('?') ? '&' : '?'}${qs}` : path;
}

interface Target {
  mode: 'owner' | 'agent';
  url: string;
  token: string;
  home: string | null;
}

/** One answer, read whole (answers to the CLI are small: JSON, a zone file). */
interface Answer {
  status: number;
  ok: boolean;
  contentType: string | null;
  body: Buffer;
}

/**
 * Several times any answer svc gives the CLI (a message is at most 25 MB with its bodies); a
 * service at SVC_URL that sends more is not svc, and must not fill the CLI's memory.
 */
export const MAX_ANSWER_BYTES = 256 * 1024 * 1024;

/**
 * Connections are kept for the next call of the same command (a progress display polls); the CLI
 * exits when its command ends, so an idle connection never holds it.
 */
const plain = { client: http, agent: new http.Agent({ keepAlive: true }) };
const secure = { client: https, agent: new https.Agent({ keepAlive: true }) };

/**
 * One request with node:http(s), not fetch: loading fetch's HTTP client (undici) cost about
 * 0.15 s of CPU, over half of what a short command like `svc inboxes list` spends. A redirect is
 * not followed: it fails like a service that does not answer, as does an answer over MAX_ANSWER_BYTES.
 */
function exchange(url: URL, method: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number): Promise<Answer> {
  const { client, agent } = url.protocol === 'https:' ? secure : plain;
  const sized = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const req = client.request(url, { method, headers: sized, agent, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        res.resume();
        return reject(new Error(`redirected (${status})`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.byteLength;
        if (size > MAX_ANSWER_BYTES) return req.destroy(new Error('the answer is too large'));
        chunks.push(chunk);
      });
      res.on('error', reject);
      res.on('close', () => {
        if (!res.complete || size > MAX_ANSWER_BYTES) return reject(new Error('the answer was cut off or too large'));
        resolve({ status, ok: status >= 200 && status < 300, contentType: res.headers['content-type'] ?? null, body: Buffer.concat(chunks) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function send(target: Target, method: string, path: string, opts: CallOptions): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${target.token}`, ...opts.headers };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  try {
    const body = opts.body !== undefined ? JSON.stringify(opts.body) : undefined;
    return await exchange(new URL(target.url + withQuery(path, opts.query)), method, headers, body, opts.timeoutMs ?? (target.mode === 'owner' ? OWNER_TIMEOUT_MS : AGENT_TIMEOUT_MS));
  } catch {
    if (target.mode === 'agent') {
      throw new CliError('service_unavailable', `Nothing answered at SVC_URL (${target.url}).`, 'Check SVC_URL and that the service (and its tunnel, if any) is running.');
    }
    throw homeProblem(target.home!) ?? notRunning(target.home!, `nothing answered at ${target.url}.`);
  }
}

function failure(target: Target, res: Answer): CliError {
  const text = res.body.toString('utf8');
  let parsed: { code?: unknown; message?: unknown; fix?: unknown; name?: unknown } | null = null;
  try {
    parsed = text === '' ? {} : (JSON.parse(text) as typeof parsed);
  } catch {
    parsed = null;
  }
  if (!parsed || typeof parsed !== 'object') {
    return new CliError('service_unavailable', `The service at ${target.url} answered ${res.status} with something that is not JSON.`, 'Check that the URL belongs to svc.');
  }
  if (res.status === 401) {
    if (target.mode === 'owner') return notRunning(target.home!, 'the owner token in connection.json was not accepted (is another svc on that port?).');
    return new CliError('unauthorized', 'The service did not accept SVC_API_KEY (unknown, revoked or expired key).', 'Ask the owner for a valid API key and set SVC_API_KEY to it.');
  }
  const { code, message, fix, name: _name, ...details } = parsed;
  return new CliError(
    (typeof code === 'string' ? code : 'internal_error') as ErrorCode,
    typeof message === 'string' ? message : `The service answered ${res.status}.`,
    typeof fix === 'string' ? fix : undefined,
    details,
  );
}

function clientFor(target: Target): ServiceClient {
  return {
    mode: target.mode,
    url: target.url,
    home: target.home,
    async call<T>(method: string, path: string, opts: CallOptions = {}): Promise<T> {
      const res = await send(target, method, path, opts);
      if (!res.ok) throw failure(target, res);
      const text = res.body.toString('utf8');
      try {
        return (text === '' ? undefined : JSON.parse(text)) as T;
      } catch {
        throw new CliError('service_unavailable', `The service at ${target.url} answered ${res.status} with something that is not JSON.`, 'Check that the URL belongs to svc.');
      }
    },
    async bytes(method: string, path: string, opts: CallOptions = {}) {
      const res = await send(target, method, path, opts);
      if (!res.ok) throw failure(target, res);
      return { body: res.body, contentType: res.contentType };
    },
  };
}

/**
 * The caller this command runs as: agent when SVC_URL or SVC_API_KEY is set (both are then
 * required, and --home would be ambiguous), else owner through the home's connection.json.
 */
export async function connect(flags: { home?: string; flavor?: string }, env: NodeJS.ProcessEnv = process.env): Promise<ServiceClient> {
  const url = env.SVC_URL;
  const key = env.SVC_API_KEY;
  if (url || key) {
    if (!url || !key) {
      throw new CliError('validation_error', `Agent mode needs both SVC_URL and SVC_API_KEY; only ${url ? 'SVC_URL' : 'SVC_API_KEY'} is set.`, 'Set both (agent), or unset both to act as the owner through --home.');
    }
    if (flags.home !== undefined || flags.flavor !== undefined) {
      throw new CliError('validation_error', '--home and --flavor select the owner, but SVC_URL and SVC_API_KEY are set (agent).', 'Unset SVC_URL and SVC_API_KEY to act as the owner, or drop --home/--flavor.');
    }
    let base: URL;
    try {
      base = new URL(url);
    } catch {
      throw new CliError('validation_error', 'SVC_URL is not a URL.', 'Set SVC_URL to the service origin, e.g. http://127.0.0.1:8733 or https://mail.example.com.');
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new CliError('validation_error', 'SVC_URL must be an http or https URL.');
    // The origin only: a trailing slash or a pasted `/v0` must not double the API prefix.
    return clientFor({ mode: 'agent', url: base.origin, token: key, home: null });
  }
  const home = ownerHome(flags);
  const conn = readOwnerConnection(home);
  return clientFor({ mode: 'owner', url: conn.url.replace(/\/+$/, ''), token: conn.ownerToken, home });
}

/** One owner request (kept for `svc oauth`); the parsed JSON body, or a CliError. */
export async function callOwner<T = unknown>(connection: OwnerConnection, method: string, path: string, body?: unknown): Promise<T> {
  return clientFor({ mode: 'owner', url: connection.url, token: connection.ownerToken, home: connection.home }).call<T>(method, path, { body });
}
