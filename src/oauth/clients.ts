/**
 * Dynamic client registration (RFC 7591, spec §5.3) and the owner's view of clients and grants.
 *
 * Only public clients register (no secrets: PKCE protects the code). A registration that never
 * led to a grant is forgotten after 24 hours. At most 1,000 registrations are kept: at the cap,
 * the oldest registration that never got a grant makes room; when every kept registration has a
 * grant, registering fails until the owner revokes grants and purges.
 */
import type { Db } from '../db/open.js';
import { uuidv7 } from '../db/ids.js';
import { prepared } from '../db/statements.js';
import { permissionObject } from '../auth/permissions.js';
import { DEFAULT_LIMIT, pageFromRows, readCursor, type PageBinding } from '../core/pagination.js';
import type { Principal } from '../auth/principal.js';
import { OAuthError } from './errors.js';
import { checkRedirectUri } from './redirect-uris.js';
import {
  CLIENT_NAME_MAX,
  GRANT_TYPES,
  MAX_CLIENTS,
  REDIRECT_URIS_MAX,
  REDIRECT_URIS_MIN,
  REGISTRATIONS_PER_HOUR,
  RESPONSE_TYPES,
  RETRY_AFTER_SECONDS,
  UNUSED_CLIENT_TTL_MS,
} from './limits.js';

const HOUR_MS = 3600 * 1000;
const iso = (ms: number) => new Date(ms).toISOString();

/** What a registration asks for, after the checks. */
export interface Registration {
  client_name: string | null;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
}

export interface ClientRow {
  client_id: string;
  client_name: string | null;
  redirect_uris: string;
  grant_types: string;
  response_types: string;
  granted: number;
  created_at: string;
}

const badMetadata = (description: string) => new OAuthError('invalid_client_metadata', description);

/** A list of strings from `values`, each one of `allowed`; `fallback` when absent. */
function subsetOf(body: Record<string, unknown>, field: string, allowed: readonly string[], fallback: readonly string[]): string[] {
  const value = body[field];
  if (value === undefined || value === null) return [...fallback];
  if (!Array.isArray(value) || value.length === 0 || value.some((v) => typeof v !== 'string')) throw badMetadata(`\`${field}\` must be a non-empty array of strings.`);
  const unsupported = (value as string[]).find((v) => !allowed.includes(v));
  if (unsupported !== undefined) throw badMetadata(`\`${field}\` value ${JSON.stringify(unsupported)} is not supported; svc supports ${allowed.join(', ')}.`);
  return [...new Set(value as string[])];
}

/**
 * Reads registration metadata. Fields svc does not use (client_uri, logo_uri, scope, contacts…)
 * are ignored, as RFC 7591 §2 requires, rather than rejected.
 */
export function readRegistration(body: unknown): Registration {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badMetadata('The registration body must be a JSON object.');
  const b = body as Record<string, unknown>;
  const uris = b.redirect_uris;
  if (!Array.isArray(uris) || uris.some((u) => typeof u !== 'string')) {
    throw new OAuthError('invalid_redirect_uri', '`redirect_uris` must be an array of URI strings.');
  }
  const redirectUris = [...new Set(uris as string[])];
  if (redirectUris.length < REDIRECT_URIS_MIN || redirectUris.length > REDIRECT_URIS_MAX) {
    throw new OAuthError('invalid_redirect_uri', `Register ${REDIRECT_URIS_MIN} to ${REDIRECT_URIS_MAX} redirect URIs.`);
  }
  for (const uri of redirectUris) checkRedirectUri(uri);
  const method = b.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none') {
    throw badMetadata('Only public clients can register: `token_endpoint_auth_method` must be `none` (PKCE protects the authorization code).');
  }
  const name = b.client_name;
  if (name !== undefined && name !== null && (typeof name !== 'string' || name.length > CLIENT_NAME_MAX)) {
    throw badMetadata(`\`client_name\` must be a string of at most ${CLIENT_NAME_MAX} characters.`);
  }
  const grantTypes = subsetOf(b, 'grant_types', GRANT_TYPES, GRANT_TYPES);
  if (!grantTypes.includes('authorization_code')) throw badMetadata('`grant_types` must include `authorization_code`.');
  const responseTypes = subsetOf(b, 'response_types', RESPONSE_TYPES, RESPONSE_TYPES);
  const trimmed = typeof name === 'string' ? name.trim() : '';
  return { client_name: trimmed === '' ? null : trimmed, redirect_uris: redirectUris, grant_types: grantTypes, response_types: responseTypes };
}

/** The RFC 7591 §3.2.1 answer. `client_name` is left out when none was given (it is optional there). */
export function registrationResponse(row: ClientRow): Record<string, unknown> {
  return {
    client_id: row.client_id,
    ...(row.client_name !== null ? { client_name: row.client_name } : {}),
    redirect_uris: JSON.parse(row.redirect_uris) as string[],
    grant_types: JSON.parse(row.grant_types) as string[],
    response_types: JSON.parse(row.response_types) as string[],
    token_endpoint_auth_method: 'none',
    client_id_issued_at: Math.floor(Date.parse(row.created_at) / 1000),
  };
}

/**
 * Forgets what has run out: registrations that never got a grant after 24 h, consent requests
 * past their 10 minutes, and the tokens and codes of ended grants and expired access tokens.
 */
export function sweepOAuth(db: Db, now = Date.now()): void {
  const at = iso(now);
  prepared(db, 'DELETE FROM oauth_clients WHERE granted = 0 AND created_at <= ?').run(iso(now - UNUSED_CLIENT_TTL_MS));
  prepared(db, 'DELETE FROM oauth_requests WHERE expires_at <= ?').run(at);
  prepared(db, "DELETE FROM oauth_tokens WHERE (kind = 'access' AND expires_at <= ?) OR grant_id IN (SELECT grant_id FROM oauth_grants WHERE expires_at <= ?)").run(at, at);
  prepared(db, 'DELETE FROM oauth_codes WHERE expires_at <= ? AND used_at IS NULL').run(at);
}

/**
 * Registers a client: 20 per hour, at most 1,000 kept (see the module comment). Runs inside the
 * caller's transaction (src/requests/oauth.ts), so the count and the insert see one state.
 */
export function registerClient(db: Db, registration: Registration, now = Date.now()): ClientRow {
  sweepOAuth(db, now);
  const recent = (prepared(db, 'SELECT count(*) AS n FROM oauth_clients WHERE created_at > ?').get(iso(now - HOUR_MS)) as { n: number }).n;
  if (recent >= REGISTRATIONS_PER_HOUR) {
    throw new OAuthError('temporarily_unavailable', `At most ${REGISTRATIONS_PER_HOUR} clients can register per hour.`, 429, { 'retry-after': String(RETRY_AFTER_SECONDS) });
  }
  const kept = (prepared(db, 'SELECT count(*) AS n FROM oauth_clients').get() as { n: number }).n;
  if (kept >= MAX_CLIENTS) {
    const evicted = prepared(db, 'DELETE FROM oauth_clients WHERE client_id = (SELECT client_id FROM oauth_clients WHERE granted = 0 ORDER BY created_at, client_id LIMIT 1)').run();
    if (evicted.changes === 0) {
      throw new OAuthError(
        'temporarily_unavailable',
        `svc keeps at most ${MAX_CLIENTS} client registrations and every one of them holds a grant; the owner must revoke grants and purge (svc oauth purge) first.`,
        503,
      );
    }
  }
  const row: ClientRow = {
    client_id: uuidv7(now),
    client_name: registration.client_name,
    redirect_uris: JSON.stringify(registration.redirect_uris),
    grant_types: JSON.stringify(registration.grant_types),
    response_types: JSON.stringify(registration.response_types),
    granted: 0,
    created_at: iso(now),
  };
  prepared(db, 'INSERT INTO oauth_clients (client_id, client_name, redirect_uris, grant_types, response_types, granted, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
    row.client_id,
    row.client_name,
    row.redirect_uris,
    row.grant_types,
    row.response_types,
    row.granted,
    row.created_at,
  );
  return row;
}

/** A registration that is still kept: it has had a grant, or it is less than 24 hours old. */
export function findClient(db: Db, clientId: string, now = Date.now()): ClientRow | null {
  const row = prepared(db, 'SELECT * FROM oauth_clients WHERE client_id = ?').get(clientId) as ClientRow | undefined;
  if (!row) return null;
  if (row.granted === 0 && Date.parse(row.created_at) <= now - UNUSED_CLIENT_TTL_MS) return null;
  return row;
}

export const clientRedirectUris = (row: ClientRow) => JSON.parse(row.redirect_uris) as string[];

interface GrantListRow {
  grant_id: string;
  client_id: string;
  resource: string;
  origin: string;
  inbox_ids: string;
  permissions: string;
  send_policy: string;
  created_at: string;
  expires_at: string;
  last_used_at: string | null;
}

/** Grants that still work: not revoked, family not ended. */
const ACTIVE_GRANT = 'revoked_at IS NULL AND expires_at > ?';

function grantView(row: GrantListRow) {
  return {
    grant_id: row.grant_id,
    resource: row.resource,
    origin: row.origin,
    inbox_ids: JSON.parse(row.inbox_ids) as string[],
    permissions: permissionObject(JSON.parse(row.permissions) as string[]),
    send_policy: row.send_policy,
    created_at: row.created_at,
    expires_at: row.expires_at,
    last_used_at: row.last_used_at,
  };
}

export interface ClientPageQuery {
  limit?: number;
  page_token?: string;
  ascending?: boolean;
}

/**
 * One page of clients, newest first unless `ascending`, each with its active grants. A read: the
 * caller sweeps what has run out first (src/requests/oauth.ts oauthClientPage).
 */
export function listClients(db: Db, p: Principal, query: ClientPageQuery, now = Date.now()): Record<string, unknown> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const ascending = query.ascending ?? false;
  const binding: PageBinding = { route: 'oauth_clients.list', filters: { ascending }, principal: p };
  const order = ascending ? 'ASC' : 'DESC';
  const params: (string | number)[] = [];
  let where = '1 = 1';
  if (query.page_token !== undefined) {
    params.push(...readCursor(db, query.page_token, binding, 2));
    where = `(created_at, client_id) ${ascending ? '>' : '<'} (?, ?)`;
  }
  const rows = db.prepare(`SELECT * FROM oauth_clients WHERE ${where} ORDER BY created_at ${order}, client_id ${order} LIMIT ?`).all(...params, limit + 1) as ClientRow[];
  const grantsOf = prepared(db, `SELECT * FROM oauth_grants WHERE client_id = ? AND ${ACTIVE_GRANT} ORDER BY created_at DESC`);
  return pageFromRows(db, binding, 'clients', rows, limit, (r) => [r.created_at, r.client_id], (r) => ({
    client_id: r.client_id,
    client_name: r.client_name,
    redirect_uris: JSON.parse(r.redirect_uris) as string[],
    created_at: r.created_at,
    grants: (grantsOf.all(r.client_id, iso(now)) as GrantListRow[]).map(grantView),
  }));
}

/**
 * Deletes every registration without an active grant (never granted, or all grants revoked or
 * ended); runs inside the caller's transaction.
 */
export function purgeClients(db: Db, now = Date.now()): number {
  const sql = `DELETE FROM oauth_clients WHERE NOT EXISTS (SELECT 1 FROM oauth_grants WHERE oauth_grants.client_id = oauth_clients.client_id AND ${ACTIVE_GRANT})`;
  return prepared(db, sql).run(iso(now)).changes;
}
