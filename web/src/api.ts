/**
 * Talking to svc's REST API from the owner's browser (spec §5.1): the session cookie travels by
 * itself (same origin), and every request carries the CSRF token in `X-Svc-CSRF`. The cookie
 * alone is no session (browsers send it to every port of 127.0.0.1; docs/security.md), so the
 * token, from the login/setup/redeem answer, is kept in this origin's own storage.
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

/** Called when any request answers 401: the session ended (expired, signed out elsewhere). */
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

export async function request<T = Record<string, unknown>>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const h: Record<string, string> = { accept: 'application/json', ...headers };
  if (csrfToken) h['x-svc-csrf'] = csrfToken;
  let payload: string | undefined;
  if (body !== undefined) {
    payload = JSON.stringify(body);
    h['content-type'] = 'application/json';
  }
  const res = await fetch(path, { method, headers: h, body: payload, credentials: 'same-origin', cache: 'no-store' });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  if (!res.ok) {
    const e = (parsed && typeof parsed === 'object' ? parsed : {}) as ErrorBody & Record<string, unknown>;
    if (res.status === 401 && !path.startsWith('/v0/owner/login') && !path.startsWith('/v0/owner/setup')) for (const l of signedOutListeners) l();
    throw new ApiFailure(res.status, e.code ?? `http_${res.status}`, e.message ?? `Request failed (${res.status}).`, e.fix, e);
  }
  return parsed as T;
}

/** A text answer (the zone file), with the session's token like every other request. */
export async function getText(path: string): Promise<string> {
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
