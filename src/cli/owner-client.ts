/**
 * Calling the running service as the owner (spec §5.1.5): the loopback URL and the owner bearer
 * token come from `<home>/connection.json`, which `svc serve` rewrites on every start. For owner
 * commands such as `svc oauth`; API errors come back as CliErrors with the API's code, message and
 * fix, and the spec's exit codes.
 */
import fs from 'node:fs';
import { homeFiles, resolveHome, type Flavor } from '../keys/home.js';
import { CliError } from './exit-codes.js';
import { isSourceCheckout } from './package-root.js';
import type { ErrorCode } from '../http/errors.js';

/** A local service answers at once; longer means it is wedged or not svc. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Variables that point the CLI at a (possibly remote) service as an agent; owner commands refuse them. */
const AGENT_VARIABLES = ['SVC_URL', 'SVC_API_KEY'] as const;

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

const notRunning = (home: string, why: string) =>
  new CliError('service_unavailable', `svc is not running for the home ${home}: ${why}`, `Start it with \`svc serve --home "${home}"\` (or \`svc service install\`), then try again.`);

/** Reads connection.json; owner commands are refused when agent credentials are in the environment. */
export function ownerConnection(home: string, env: NodeJS.ProcessEnv = process.env): OwnerConnection {
  const set = AGENT_VARIABLES.filter((name) => env[name]);
  if (set.length > 0) {
    throw new CliError(
      'missing_permission',
      `Owner commands act as the owner of this machine's home and are not available with ${set.join(' and ')} set.`,
      `Run them as the owner, without ${AGENT_VARIABLES.join(' or ')} (e.g. env -u SVC_URL -u SVC_API_KEY svc ...).`,
    );
  }
  let text: string;
  try {
    text = fs.readFileSync(homeFiles(home).connection, 'utf8');
  } catch {
    throw notRunning(home, 'it has no connection.json.');
  }
  try {
    const data = JSON.parse(text) as { url?: unknown; owner_token?: unknown };
    if (typeof data.url === 'string' && typeof data.owner_token === 'string') return { url: data.url, ownerToken: data.owner_token, home };
  } catch {
    /* reported below */
  }
  throw notRunning(home, 'its connection.json is unreadable.');
}

/** One owner request; the parsed JSON body (undefined for an empty 200), or a CliError. */
export async function callOwner<T = unknown>(connection: OwnerConnection, method: string, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(connection.url + path, {
      method,
      headers: { authorization: `Bearer ${connection.ownerToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      redirect: 'error',
    });
  } catch {
    throw notRunning(connection.home, `nothing answered at ${connection.url}.`);
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new CliError('service_unavailable', `The service at ${connection.url} answered ${res.status} with something that is not JSON.`, 'Check that the URL in connection.json belongs to svc.');
  }
  if (res.ok) return parsed as T;
  const error = (parsed ?? {}) as { code?: string; message?: string; fix?: string };
  if (res.status === 401) throw notRunning(connection.home, 'the owner token in connection.json was not accepted (is another svc on that port?).');
  throw new CliError((error.code ?? 'internal_error') as ErrorCode, error.message ?? `The service answered ${res.status}.`, error.fix);
}
