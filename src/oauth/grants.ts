/**
 * Grants, codes and tokens (spec §5.3). A grant is one consent: its scope, permissions and send
 * policy, its resource, and one refresh-token family that ends 30 days after consent. Access
 * tokens live five minutes; refresh tokens rotate on every use, and presenting a used one again
 * revokes the whole grant, as does presenting a used authorization code again. Every secret is
 * stored as its SHA-256 only.
 */
import { createHash } from 'node:crypto';
import type { Db } from '../db/open.js';
import { uuidv7 } from '../db/ids.js';
import { appendEvent } from '../events/log.js';
import { prepared } from '../db/statements.js';
import type { Audience, CredentialContext, Principal, SendPolicy } from '../auth/principal.js';
import { newSecret, sameSecret, sha256Hex } from '../auth/secrets.js';
import { grantedPermissions } from '../auth/permissions.js';
import { OAuthError } from './errors.js';
import {
  ACCESS_TOKEN_PREFIX,
  ACCESS_TOKEN_TTL_MS,
  CODE_PREFIX,
  CODE_TTL_MS,
  FAMILY_TTL_MS,
  LAST_USED_RESOLUTION_MS,
  REFRESH_TOKEN_PREFIX,
  SCOPE,
} from './limits.js';

const iso = (ms: number) => new Date(ms).toISOString();

export interface GrantRow {
  grant_id: string;
  client_id: string;
  resource: string;
  origin: string;
  audience: Audience;
  inbox_ids: string;
  permissions: string;
  send_policy: SendPolicy;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

export type OAuthEventType = 'oauth.authorized' | 'oauth.revoked' | 'oauth.tokens_revoked';

export const isActive = (grant: GrantRow, now: number) => grant.revoked_at === null && Date.parse(grant.expires_at) > now;

/** Appends an owner-only `oauth.*` event (spec §6.2); call inside the state change's transaction. */
export function appendOAuthEvent(db: Db, eventType: OAuthEventType, grant: Pick<GrantRow, 'grant_id' | 'client_id'>, now = Date.now()): number {
  return appendEvent(db, { eventType, inboxId: null, payloadKey: 'oauth', payload: { grant_id: grant.grant_id, client_id: grant.client_id, timestamp: iso(now) } }).seq;
}

export interface NewGrant {
  clientId: string;
  resource: string;
  origin: string;
  audience: Audience;
  inboxIds: string[];
  /** Stored form (src/auth/permissions.ts storedPermissions). */
  permissions: string;
  sendPolicy: SendPolicy;
  redirectUri: string;
  codeChallenge: string;
}

/** Creates the grant and its one authorization code; call inside the consent transaction. */
export function createGrant(db: Db, g: NewGrant, now = Date.now()): { grantId: string; code: string } {
  const grantId = uuidv7(now);
  prepared(
    db,
    'INSERT INTO oauth_grants (grant_id, client_id, resource, origin, audience, inbox_ids, permissions, send_policy, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(grantId, g.clientId, g.resource, g.origin, g.audience, JSON.stringify(g.inboxIds), g.permissions, g.sendPolicy, iso(now), iso(now + FAMILY_TTL_MS));
  prepared(db, 'UPDATE oauth_clients SET granted = 1 WHERE client_id = ?').run(g.clientId);
  const code = newSecret(CODE_PREFIX);
  prepared(db, 'INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, expires_at) VALUES (?, ?, ?, ?, ?)').run(
    sha256Hex(code),
    grantId,
    g.redirectUri,
    g.codeChallenge,
    iso(now + CODE_TTL_MS),
  );
  return { grantId, code };
}

/**
 * Ends a grant: stamps it revoked and deletes its tokens and codes, with the event, inside the
 * caller's transaction. Null when it was already revoked.
 */
function endGrant(db: Db, grant: GrantRow, eventType: OAuthEventType, now: number): number | null {
  if (prepared(db, 'UPDATE oauth_grants SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL').run(iso(now), grant.grant_id).changes === 0) return null;
  prepared(db, 'DELETE FROM oauth_tokens WHERE grant_id = ?').run(grant.grant_id);
  prepared(db, 'DELETE FROM oauth_codes WHERE grant_id = ?').run(grant.grant_id);
  return appendOAuthEvent(db, eventType, grant, now);
}

/**
 * The owner revokes a grant and every token it issued, with `oauth.revoked`; null when there is no
 * active grant by that id. Runs inside the caller's transaction.
 */
export function revokeGrant(db: Db, grantId: string, now = Date.now()): number | null {
  const grant = prepared(db, 'SELECT * FROM oauth_grants WHERE grant_id = ?').get(grantId) as GrantRow | undefined;
  if (!grant || !isActive(grant, now)) return null;
  return endGrant(db, grant, 'oauth.revoked', now);
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** A new access and refresh token for the grant. Access tokens never outlive the family. */
function issueTokens(db: Db, grant: GrantRow, now: number): TokenResponse {
  const familyEnd = Date.parse(grant.expires_at);
  const accessExpires = Math.min(now + ACCESS_TOKEN_TTL_MS, familyEnd);
  const access = newSecret(ACCESS_TOKEN_PREFIX);
  const refresh = newSecret(REFRESH_TOKEN_PREFIX);
  const insert = prepared(db, 'INSERT INTO oauth_tokens (token_id, grant_id, kind, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)');
  insert.run(uuidv7(now), grant.grant_id, 'access', sha256Hex(access), iso(now), iso(accessExpires));
  insert.run(uuidv7(now), grant.grant_id, 'refresh', sha256Hex(refresh), iso(now), grant.expires_at);
  prepared(db, 'UPDATE oauth_grants SET last_used_at = ? WHERE grant_id = ?').run(iso(now), grant.grant_id);
  return { access_token: access, token_type: 'Bearer', expires_in: Math.max(0, Math.floor((accessExpires - now) / 1000)), refresh_token: refresh, scope: SCOPE };
}

/** A token request's result. Failures may have revoked a family: publish `seq` even then. */
export type TokenOutcome = { ok: true; body: TokenResponse } | { ok: false; error: OAuthError; seq: number | null };

const failure = (error: OAuthError, seq: number | null = null): TokenOutcome => ({ ok: false, error, seq });
const invalidGrant = (description: string) => new OAuthError('invalid_grant', description);

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

export function pkceMatches(verifier: string, challenge: string): boolean {
  return VERIFIER.test(verifier) && sameSecret(createHash('sha256').update(verifier).digest('base64url'), challenge);
}

export interface CodeExchange {
  code: string;
  codeVerifier: string;
  clientId: string;
  redirectUri: string;
  resource: string;
}

/**
 * `authorization_code` (spec §5.3): single use within five minutes, the same client, redirect
 * URI and resource as at authorization, and the PKCE verifier. Presenting a used code again
 * revokes the grant it created with every token issued from it. `originServed` says whether the
 * grant's origin is still one svc serves (the tunnel hostname may have changed since). Runs inside
 * the caller's transaction, which commits a failure's family revocation too (the outcome, not a throw).
 */
export function exchangeCode(db: Db, req: CodeExchange, originServed: (origin: string) => boolean, now = Date.now()): TokenOutcome {
  const row = prepared(db, 'SELECT c.code_hash, c.redirect_uri AS code_redirect_uri, c.code_challenge, c.expires_at AS code_expires_at, c.used_at, g.* FROM oauth_codes c JOIN oauth_grants g ON g.grant_id = c.grant_id WHERE c.code_hash = ?').get(sha256Hex(req.code)) as
    | (GrantRow & { code_hash: string; code_redirect_uri: string; code_challenge: string; code_expires_at: string; used_at: string | null })
    | undefined;
  if (!row) return failure(invalidGrant('The authorization code is not valid.'));
  if (row.used_at !== null) {
    const seq = endGrant(db, row, 'oauth.tokens_revoked', now);
    return failure(invalidGrant('The authorization code was already used; every token issued from it is now revoked.'), seq);
  }
  if (Date.parse(row.code_expires_at) <= now) return failure(invalidGrant('The authorization code expired (codes are valid for 5 minutes).'));
  if (row.client_id !== req.clientId) return failure(invalidGrant('The authorization code was issued to another client.'));
  if (!isActive(row, now)) return failure(invalidGrant('The grant behind this code was revoked or has ended.'));
  if (row.code_redirect_uri !== req.redirectUri) return failure(invalidGrant('`redirect_uri` differs from the one sent to the authorization endpoint.'));
  if (row.resource !== req.resource) return failure(new OAuthError('invalid_target', '`resource` differs from the one the owner authorized.'));
  if (!originServed(row.origin)) return failure(new OAuthError('invalid_target', 'The resource this code was issued for is no longer served (was the remote hostname changed?).'));
  if (!pkceMatches(req.codeVerifier, row.code_challenge)) return failure(invalidGrant('The PKCE `code_verifier` does not match the `code_challenge`.'));
  prepared(db, 'UPDATE oauth_codes SET used_at = ? WHERE code_hash = ?').run(iso(now), row.code_hash);
  return { ok: true, body: issueTokens(db, row, now) };
}

export interface RefreshRequest {
  refreshToken: string;
  clientId: string | null;
  resource: string | null;
}

/**
 * `refresh_token`: rotates on every use. A refresh token that was already used revokes the whole
 * family (every access and refresh token of the grant, and the grant itself). Runs inside the
 * caller's transaction, as exchangeCode does.
 */
export function refreshTokens(db: Db, req: RefreshRequest, originServed: (origin: string) => boolean, now = Date.now()): TokenOutcome {
  const row = prepared(db, "SELECT t.token_id, t.used_at, t.expires_at AS token_expires_at, g.* FROM oauth_tokens t JOIN oauth_grants g ON g.grant_id = t.grant_id WHERE t.token_hash = ? AND t.kind = 'refresh'").get(
    sha256Hex(req.refreshToken),
  ) as (GrantRow & { token_id: string; used_at: string | null; token_expires_at: string }) | undefined;
  if (!row) return failure(invalidGrant('The refresh token is not valid (unknown, revoked or expired).'));
  if (req.clientId !== null && req.clientId !== row.client_id) return failure(invalidGrant('The refresh token was issued to another client.'));
  if (row.used_at !== null) {
    const seq = endGrant(db, row, 'oauth.tokens_revoked', now);
    return failure(invalidGrant('The refresh token was already used; the whole token family is now revoked. Authorize again.'), seq);
  }
  if (!isActive(row, now) || Date.parse(row.token_expires_at) <= now) return failure(invalidGrant('The grant was revoked or has ended (30 days after consent). Authorize again.'));
  if (req.resource !== null && req.resource !== row.resource) return failure(new OAuthError('invalid_target', '`resource` differs from the one the owner authorized.'));
  if (!originServed(row.origin)) return failure(invalidGrant('The origin this grant was issued for is no longer served (was the remote hostname changed?). Authorize again.'));
  prepared(db, 'UPDATE oauth_tokens SET used_at = ? WHERE token_id = ?').run(iso(now), row.token_id);
  prepared(db, "DELETE FROM oauth_tokens WHERE grant_id = ? AND kind = 'access' AND expires_at <= ?").run(row.grant_id, iso(now));
  return { ok: true, body: issueTokens(db, row, now) };
}

/**
 * The client a code or token was issued to, or null when svc does not hold it: what a token or
 * revoke request is counted against (src/oauth/rate-window.ts). A read, outside any transaction;
 * the client comes from the stored grant, never from the request's own `client_id`.
 */
export function clientOfCode(db: Db, code: string): string | null {
  const row = prepared(db, 'SELECT g.client_id FROM oauth_codes c JOIN oauth_grants g ON g.grant_id = c.grant_id WHERE c.code_hash = ?').get(sha256Hex(code)) as { client_id: string } | undefined;
  return row?.client_id ?? null;
}

/** As clientOfCode, for an access or refresh token (`kind` narrows it to one of them). */
export function clientOfToken(db: Db, token: string, kind?: 'access' | 'refresh'): string | null {
  const sql = 'SELECT g.client_id FROM oauth_tokens t JOIN oauth_grants g ON g.grant_id = t.grant_id WHERE t.token_hash = ?';
  const row = (kind ? prepared(db, `${sql} AND t.kind = ?`).get(sha256Hex(token), kind) : prepared(db, sql).get(sha256Hex(token))) as { client_id: string } | undefined;
  return row?.client_id ?? null;
}

/**
 * RFC 7009 revocation: an access or refresh token revokes its whole family. Null when nothing was
 * revoked (unknown token, another client's token, or already revoked). Runs inside the caller's
 * transaction.
 */
export function revokeToken(db: Db, token: string, clientId: string | null, now = Date.now()): number | null {
  const grant = prepared(db, 'SELECT g.* FROM oauth_tokens t JOIN oauth_grants g ON g.grant_id = t.grant_id WHERE t.token_hash = ?').get(sha256Hex(token)) as GrantRow | undefined;
  if (!grant || (clientId !== null && clientId !== grant.client_id)) return null;
  return endGrant(db, grant, 'oauth.revoked', now);
}

function grantPrincipal(grant: GrantRow, tokenId: string | undefined): Principal {
  return {
    kind: 'oauth',
    id: grant.grant_id,
    tokenId,
    audience: grant.audience,
    inboxScope: new Set(JSON.parse(grant.inbox_ids) as string[]),
    permissions: grantedPermissions(grant.permissions),
    sendPolicy: grant.send_policy,
  };
}

/** When this process last wrote last_used_at per grant, so most requests skip the write. */
const lastUseWrite = new Map<string, number>();

function markGrantUsed(db: Db, grantId: string, now: number): void {
  const last = lastUseWrite.get(grantId);
  if (last !== undefined && now - last < LAST_USED_RESOLUTION_MS) return;
  lastUseWrite.set(grantId, now);
  prepared(db, 'UPDATE oauth_grants SET last_used_at = ? WHERE grant_id = ?').run(iso(now), grantId);
}

interface AccessRow extends GrantRow {
  token_id: string;
  token_expires_at: string;
}

/**
 * An access token presented as a bearer: valid while unexpired, its grant active, and only on
 * the exact origin and audience it was issued for.
 */
export function accessTokenPrincipal(db: Db, token: string, where: CredentialContext, now = Date.now()): Principal | null {
  const row = prepared(db, "SELECT t.token_id, t.expires_at AS token_expires_at, g.* FROM oauth_tokens t JOIN oauth_grants g ON g.grant_id = t.grant_id WHERE t.token_hash = ? AND t.kind = 'access'").get(
    sha256Hex(token),
  ) as AccessRow | undefined;
  if (!row || Date.parse(row.token_expires_at) <= now || !isActive(row, now)) return null;
  if (row.origin !== where.origin || row.audience !== where.audience) return null;
  markGrantUsed(db, row.grant_id, now);
  return grantPrincipal(row, row.token_id);
}

/**
 * The grant's principal as it stands now, for streams, download URLs and webhooks that recheck
 * their issuer: null once the grant is revoked or ended, or, when `tokenId` is given, once that
 * access token expired or was revoked.
 */
export function currentGrantPrincipal(db: Db, grantId: string, tokenId: string | undefined, now = Date.now()): Principal | null {
  const grant = prepared(db, 'SELECT * FROM oauth_grants WHERE grant_id = ?').get(grantId) as GrantRow | undefined;
  if (!grant || !isActive(grant, now)) return null;
  if (tokenId !== undefined) {
    const token = prepared(db, "SELECT expires_at FROM oauth_tokens WHERE token_id = ? AND grant_id = ? AND kind = 'access'").get(tokenId, grantId) as { expires_at: string } | undefined;
    if (!token || Date.parse(token.expires_at) <= now) return null;
  }
  return grantPrincipal(grant, tokenId);
}
