/**
 * Talking to svc's REST API from the owner's browser (spec §5.1): the session cookie travels by
 * itself (same origin), and every request carries the CSRF token in `X-Svc-CSRF`. The cookie
 * alone is no session (browsers send it to every port of 127.0.0.1; docs/security.md), so the
 * token, from the login/setup/redeem answer, is kept in this origin's own storage.
 *
 * svc's URL is stable, so while svc is down another local process may hold its port (docs/security.md,
 * "A squatter on svc's port"). The token is bound to svc's process start, so what such a process
 * captures dies when svc is back; and after any lost connection this page sends nothing until svc
 * has proved itself with the session's server key (kept in memory only), then renews the token
 * for the new start by answering svc's challenge with the renewal key.
 */
import type { OwnerStatus } from './api-types';

export type { OwnerStatus };

export interface ErrorBody {
  name?: string;
  code?: string;
  message?: string;
  fix?: string;
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fix?: string,
    readonly body?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** localStorage is per origin, port included: another local port's page cannot read it. */
const CSRF_STORAGE_KEY = 'svc.csrf';
let csrfToken: string | null = readStoredCsrf();
const signedOutListeners = new Set<() => void>();

function readStoredCsrf(): string | null {
  try {
    return window.localStorage.getItem(CSRF_STORAGE_KEY);
  } catch {
    return null; // storage disabled: the token lives for this page only
  }
}

export function setCsrf(token: string | null): void {
  csrfToken = token;
  if (token === null) sessionKeys = null;
  try {
    if (token === null) window.localStorage.removeItem(CSRF_STORAGE_KEY);
    else window.localStorage.setItem(CSRF_STORAGE_KEY, token);
  } catch {
    /* storage disabled: kept in memory only */
  }
}
export function csrf(): string | null {
  return csrfToken;
}

/** Kept in this page's memory only: a page loaded later from this origin (maybe not by svc) cannot read them. */
interface SessionKeys {
  server_key: string;
  renewal_key: string;
}
let sessionKeys: SessionKeys | null = null;

/** Fetches the session's keys after sign-in or a page load with a live token. */
export async function loadSessionKeys(): Promise<void> {
  if (!csrfToken) return;
  try {
    const res = await fetch('/v0/owner/session-keys', { headers: { 'x-svc-csrf': csrfToken, accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' });
    sessionKeys = res.ok ? ((await res.json()) as SessionKeys) : null;
  } catch {
    sessionKeys = null;
  }
}

/**
 * What answers at this origin after a lost connection: `ok` (svc proved itself and the token is
 * current), `impostor` (something else answers: nothing is sent), `unreachable` (nothing answers
 * yet), `signed_out` (svc, or whatever answers, has no session for this cookie).
 */
export type ServerCheck = 'ok' | 'impostor' | 'unreachable' | 'signed_out';
let connectionLost = false;
let pendingCheck: Promise<ServerCheck> | null = null;
const serverCheckListeners = new Set<(check: ServerCheck) => void>();

export function onServerCheck(listener: (check: ServerCheck) => void): () => void {
  serverCheckListeners.add(listener);
  return () => serverCheckListeners.delete(listener);
}

/** The connection dropped (a socket closed, a request failed on the network): check svc before the next send. */
export function markConnectionLost(): void {
  if (csrfToken) connectionLost = true;
}

const textBytes = (text: string) => new TextEncoder().encode(text);

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

async function hmac(key: string, text: string): Promise<string> {
  const k = await crypto.subtle.importKey('raw', textBytes(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return base64url(new Uint8Array(await crypto.subtle.sign('HMAC', k, textBytes(text))));
}

async function postJson(path: string, body: unknown): Promise<Response> {
  return fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body), credentials: 'same-origin', cache: 'no-store' });
}

/** The handshake of src/owner/session-binding.ts: svc proves itself on our nonce, we answer its challenge. */
async function checkServer(): Promise<ServerCheck> {
  const keys = sessionKeys;
  if (!keys) return 'signed_out';
  const nonce = base64url(crypto.getRandomValues(new Uint8Array(24)));
  let proofRes: Response;
  try {
    proofRes = await postJson('/v0/owner/session-proof', { nonce });
  } catch {
    return 'unreachable';
  }
  if (proofRes.status === 401) return 'signed_out';
  if (proofRes.status >= 500 && proofRes.status !== 501) return 'unreachable';
  const proof = (await proofRes.json().catch(() => null)) as { proof?: unknown; challenge?: unknown } | null;
  if (!proofRes.ok || typeof proof?.proof !== 'string' || typeof proof.challenge !== 'string') return 'impostor';
  if ((await hmac(keys.server_key, `svc server proof v1\n${nonce}\n${proof.challenge}`)) !== proof.proof) return 'impostor';
  let renewRes: Response;
  try {
    renewRes = await postJson('/v0/owner/session-renew', { challenge: proof.challenge, answer: await hmac(keys.renewal_key, `svc session renewal v1\n${proof.challenge}`) });
  } catch {
    return 'unreachable';
  }
  if (renewRes.status === 401) return 'signed_out';
  const renewed = (await renewRes.json().catch(() => null)) as { csrf_token?: unknown } | null;
  if (!renewRes.ok || typeof renewed?.csrf_token !== 'string') return 'unreachable';
  setCsrf(renewed.csrf_token);
  return 'ok';
}

/** Checks svc once for everyone waiting; `ok` clears the lost-connection mark. */
export function verifyServer(): Promise<ServerCheck> {
  pendingCheck ??= checkServer().then((check) => {
    pendingCheck = null;
    if (check === 'ok') connectionLost = false;
    if (check === 'signed_out') signOutLocally();
    for (const l of serverCheckListeners) l(check);
    return check;
  });
  return pendingCheck;
}

function signOutLocally(): void {
  sessionKeys = null;
  connectionLost = false;
  for (const l of signedOutListeners) l();
}

/**
 * Sudo mode (docs/security.md): a route that mints credentials or runs commands answers 403 with
 * `x-svc-sudo: required` when the session has not proved the owner lately; the app asks for the
 * password (the prompt registered here) and repeats the request once.
 */
let sudoPrompt: (() => Promise<boolean>) | null = null;
export function setSudoPrompt(prompt: (() => Promise<boolean>) | null): void {
  sudoPrompt = prompt;
}

/** Called when any request answers 401: the session ended (expired, signed out elsewhere). */
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

/** Sends nothing after a lost connection until svc has proved itself (or fails with why not). */
async function ensureServer(): Promise<void> {
  if (!connectionLost) return;
  const check = await verifyServer();
  if (check === 'ok') return;
  const message =
    check === 'impostor'
      ? 'Something other than svc answers at this address; nothing was sent. Start svc again.'
      : check === 'signed_out'
        ? 'The session ended; sign in again.'
        : 'svc does not answer; nothing was sent. Try again once it runs.';
  throw new ApiFailure(0, `server_${check}`, message);
}

export async function request<T = Record<string, unknown>>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, retried = false): Promise<T> {
  await ensureServer();
  const h: Record<string, string> = { accept: 'application/json', ...headers };
  if (csrfToken) h['x-svc-csrf'] = csrfToken;
  let payload: string | undefined;
  if (body !== undefined) {
    payload = JSON.stringify(body);
    h['content-type'] = 'application/json';
  }
  let res: Response;
  try {
    res = await fetch(path, { method, headers: h, body: payload, credentials: 'same-origin', cache: 'no-store' });
  } catch (e) {
    markConnectionLost();
    throw e;
  }
  if (!retried && res.status === 401 && csrfToken && sessionKeys && !isSignInPath(path)) {
    // svc restarted (the token belongs to its previous start): prove, renew, repeat once.
    connectionLost = true;
    if ((await verifyServer()) === 'ok') return request<T>(method, path, body, headers, true);
  }
  if (!retried && res.status === 403 && res.headers.get('x-svc-sudo') === 'required' && sudoPrompt) {
    if (await sudoPrompt()) return request<T>(method, path, body, headers, true);
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  if (!res.ok) {
    const e = (parsed && typeof parsed === 'object' ? parsed : {}) as ErrorBody & Record<string, unknown>;
    if (res.status === 401 && !isSignInPath(path)) signOutLocally();
    throw new ApiFailure(res.status, e.code ?? `http_${res.status}`, e.message ?? `Request failed (${res.status}).`, e.fix, e);
  }
  return parsed as T;
}

const isSignInPath = (path: string) => path.startsWith('/v0/owner/login') || path.startsWith('/v0/owner/setup') || path.startsWith('/v0/owner/sudo');

/** A text answer (the zone file), with the session's token like every other request. */
export async function getText(path: string): Promise<string> {
  await ensureServer();
  const res = await fetch(path, { headers: csrfToken ? { 'x-svc-csrf': csrfToken } : {}, credentials: 'same-origin', cache: 'no-store' });
  if (!res.ok) throw new ApiFailure(res.status, `http_${res.status}`, `The request failed (${res.status}).`);
  return res.text();
}

export const get = <T = Record<string, unknown>>(path: string) => request<T>('GET', path);
export const post = <T = Record<string, unknown>>(path: string, body: unknown = {}, headers?: Record<string, string>) => request<T>('POST', path, body, headers);
export const patch = <T = Record<string, unknown>>(path: string, body: unknown) => request<T>('PATCH', path, body);
export const put = <T = Record<string, unknown>>(path: string, body: unknown) => request<T>('PUT', path, body);
export const del = (path: string) => request<unknown>('DELETE', path);


/** GET /v0/owner/status with the stored token: the session counts only with both. */
export async function loadStatus(): Promise<OwnerStatus> {
  const headers: Record<string, string> = csrfToken ? { 'x-svc-csrf': csrfToken } : {};
  const res = await fetch('/v0/owner/status', { headers, credentials: 'same-origin', cache: 'no-store' });
  if (!res.ok) throw new ApiFailure(res.status, 'status_failed', 'svc did not answer the status request.');
  const status = (await res.json()) as OwnerStatus;
  if (!status.authenticated) setCsrf(null);
  else if (!sessionKeys) await loadSessionKeys();
  return status;
}

/** Path segment encoding for ids that contain `@` and `<>` (inbox ids, message ids). */
export const enc = encodeURIComponent;

/** Builds a query string from defined values; arrays repeat the parameter (spec §4). */
export function query(params: Record<string, string | number | boolean | string[] | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    if (Array.isArray(v)) for (const item of v) q.append(k, item);
    else q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
