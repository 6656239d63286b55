/**
 * Opaque page tokens (spec §4.1): an HMAC-signed keyset cursor bound to the route, the query's
 * filters and the caller's scope, and for search to the index generation. Reusing a token with
 * other filters or after the index changed is `409 page_token_stale`.
 */
import { createHmac } from 'node:crypto';
import type { Db } from '../db/open.js';
import { ApiError } from './errors.js';
import type { Principal } from '../auth/principal.js';
import { sameSecret } from '../auth/secrets.js';
import { prepared } from '../db/statements.js';
import { settingsSecret } from '../db/settings-secret.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;


/** A position in a keyset ordering, e.g. [timestamp, id]. */
export type Cursor = (string | number)[];

const pageKeys = new WeakMap<Db, Buffer>();

/**
 * The HMAC key of page tokens, made once per home and never changed, so each connection reads it
 * once. A reader connection cannot make it: the supervisor does at start-up (`ensurePageKey`).
 */
function pageKey(db: Db): Buffer {
  let key = pageKeys.get(db);
  if (key) return key;
  key = settingsSecret(db, 'page_token_key');
  pageKeys.set(db, key);
  return key;
}

/** Makes the page-token key if the home has none yet (before any reader thread needs it). */
export function ensurePageKey(db: Db): void {
  pageKey(db);
}

/** The search index generation: bumped in the same transaction as any change to the search index (src/mail/search-index.ts). */
export function searchGeneration(db: Db): number {
  const row = prepared(db, "SELECT value FROM settings WHERE key = 'search_generation'").get() as { value: string } | undefined;
  return row ? Number(row.value) : 0;
}

export function bumpSearchGeneration(db: Db): void {
  prepared(db, "INSERT INTO settings (key, value) VALUES ('search_generation', '1') ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1").run();
}

function scopeOf(p: Principal): string {
  // A pod-narrowed caller is bound to its pod, not to the pod's inboxes of the moment: an inbox created between pages does not stale the token.
  if (p.pod !== undefined) return `${p.kind}:${p.id}:pod:${p.pod.podId}:${p.pod.keyScope === 'all' ? '*' : [...p.pod.keyScope].sort().join(',')}`;
  return `${p.kind}:${p.id}:${p.inboxScope === 'all' ? '*' : [...p.inboxScope].sort().join(',')}`;
}

/** What a token is bound to: route name, the normalized filters, and the caller. */
export interface PageBinding {
  route: string;
  filters: Record<string, unknown>;
  principal: Principal;
  /** Set for search routes: the index generation at the first page. */
  generation?: number;
}

function bindingDigest(db: Db, b: PageBinding): string {
  const canonical = JSON.stringify([b.route, Object.entries(b.filters).filter(([, v]) => v !== undefined).sort(([a], [c]) => a.localeCompare(c)), scopeOf(b.principal), b.generation ?? null]);
  return createHmac('sha256', pageKey(db)).update(canonical).digest('base64url').slice(0, 22);
}

function sign(db: Db, body: string): string {
  return createHmac('sha256', pageKey(db)).update(body).digest('base64url');
}

export function encodePageToken(db: Db, binding: PageBinding, cursor: Cursor): string {
  const body = Buffer.from(JSON.stringify({ b: bindingDigest(db, binding), c: cursor })).toString('base64url');
  return `${body}.${sign(db, body)}`;
}

const invalid = () => new ApiError('validation_error', 'The page_token is not valid.', { fix: 'Use the next_page_token from the previous page unchanged, or start again without a token.' });

/** The cursor in a token, after checking its signature and binding. */
export function decodePageToken(db: Db, token: string, binding: PageBinding): Cursor {
  const [body, mac] = token.split('.');
  if (!body || !mac || !sameSecret(mac, sign(db, body))) throw invalid();
  let data: { b?: unknown; c?: unknown };
  try {
    data = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { b?: unknown; c?: unknown };
  } catch {
    throw invalid();
  }
  if (!Array.isArray(data.c)) throw invalid();
  if (data.b !== bindingDigest(db, binding)) {
    throw new ApiError('page_token_stale', 'The page_token belongs to a different query, or the search index changed since it was issued.', {
      fix: 'Start again without page_token.',
    });
  }
  return data.c as Cursor;
}

/** Builds the list response: `{count, limit, next_page_token?, [key]: items}`. */
export function pageResponse<T>(key: string, items: T[], limit: number, nextToken: string | null): Record<string, unknown> {
  return { count: items.length, limit, ...(nextToken ? { next_page_token: nextToken } : {}), [key]: items };
}

/** The cursor of a keyset token that must hold `length` values (e.g. [created_at, id]). */
export function readCursor(db: Db, token: string, binding: PageBinding, length: number): Cursor {
  const cursor = decodePageToken(db, token, binding);
  if (cursor.length !== length) throw invalid();
  return cursor;
}

/**
 * One list response from rows fetched with `limit + 1`: the extra row only says whether another
 * page exists; the next token points after the last row shown.
 */
export function pageFromRows<T>(db: Db, binding: PageBinding, key: string, rows: T[], limit: number, cursorOf: (row: T) => Cursor, view: (row: T) => unknown = (r) => r) {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  const next = rows.length > limit && last !== undefined ? encodePageToken(db, binding, cursorOf(last)) : null;
  return pageResponse(key, items.map(view), limit, next);
}
