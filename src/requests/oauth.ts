/**
 * The OAuth operations (spec §5.3, §4.13): a client's registration, authorization request, token
 * and revocation (src/routes/oauth.ts, no credential), and the owner's clients, grants and
 * consent decisions (src/routes/owner-oauth.ts, access `owner`: no scope, no permission).
 *
 * Each operation checks what needs no lookup first, outside the lock (a registration's metadata,
 * a consent's permissions), then opens its ONE transaction here around the domain writes and their
 * `oauth.*` event (src/oauth/*, which run inside the caller's transaction), and only after the
 * commit publishes the event. A token request that fails may still have revoked a token family
 * (a code or refresh token presented twice): that revocation commits with the failure answer, and
 * its event is published before the error is thrown.
 */
import type { Db } from '../db/open.js';
import type { Bus } from '../supervisor/bus.js';
import type { Principal } from '../auth/principal.js';
import { notFound } from '../core/errors.js';
import { permissionSet, storedPermissions } from '../auth/permissions.js';
import { clientRedirectUris, findClient, listClients, purgeClients, readRegistration, registerClient, registrationResponse, sweepOAuth, type ClientPageQuery } from '../oauth/clients.js';
import { approveRequest, denyRequest, requestView, storeRequest, type Approval, type PendingRequest } from '../oauth/consent.js';
import { clientOfCode, clientOfToken, exchangeCode, refreshTokens, revokeGrant, revokeToken, type CodeExchange, type RefreshRequest, type TokenOutcome, type TokenResponse } from '../oauth/grants.js';
import { currentOrigins, currentResource } from '../oauth/resources.js';
import { OAuthError } from '../oauth/errors.js';
import { GRANT_TYPES, SCOPE, STATE_MAX_LENGTH } from '../oauth/limits.js';
import { matchesRegistered } from '../oauth/redirect-uris.js';

/** RFC 7636 §4.2: BASE64URL(SHA256(verifier)) is 43 characters; allow the verifier's own range. */
const CODE_CHALLENGE = /^[A-Za-z0-9._~-]{43,128}$/;

/** A protocol request's parameters: a form or JSON body, or a query string. */
export type OAuthParams = Record<string, unknown>;

/**
 * One parameter's value: absent → null; a repeated parameter or a non-string is refused
 * (RFC 6749 §3.1: parameters must not be included more than once).
 */
function param(params: OAuthParams, name: string, fail: (d: string) => OAuthError = (d) => new OAuthError('invalid_request', d)): string | null {
  const value = params[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw fail(`\`${name}\` must be given once, as a string.`);
  return value;
}

function required(params: OAuthParams, name: string, fail?: (d: string) => OAuthError): string {
  const value = param(params, name, fail);
  if (value === null || value === '') throw (fail ?? ((d: string) => new OAuthError('invalid_request', d)))(`\`${name}\` is required.`);
  return value;
}

/** What an OAuth operation needs from the running service. */
export interface OAuthServices {
  db: Db;
  bus: Bus;
}

/** An `oauth.*` event reaches subscribers only once it is committed. */
function publish(svc: OAuthServices, seq: number | null): void {
  if (seq !== null) svc.bus.publish({ kind: 'event', seq });
}

// --- A client's requests (src/routes/oauth.ts) ---

/** RFC 7591 registration: the metadata is read before the lock; the RFC 7591 §3.2.1 answer. */
export function registerOAuthClient(db: Db, body: unknown): Record<string, unknown> {
  const registration = readRegistration(body);
  return registrationResponse(db.transaction(() => registerClient(db, registration))());
}

/**
 * `/oauth/authorize`'s parameters (RFC 6749 §4.1.1, PKCE, RFC 8707 resource), checked in order:
 * the client and its registered redirect URI first, then the rest. Every error is answered by the
 * route, never redirected: a self-registered client may name any redirect URI, and an error that
 * bounced there with no owner step would make svc an open redirector (RFC 9700 §4.11.2). The
 * client hears back only after the owner approves or denies.
 */
export function readAuthorizationRequest(db: Db, query: OAuthParams): PendingRequest {
  const clientId = required(query, 'client_id');
  const client = findClient(db, clientId);
  if (!client) throw new OAuthError('invalid_client', 'Unknown or expired client_id; the client must register again.');
  const redirectUri = required(query, 'redirect_uri');
  if (!matchesRegistered(clientRedirectUris(client), redirectUri)) throw new OAuthError('invalid_request', '`redirect_uri` is not one this client registered.');
  const state = param(query, 'state');
  if (state !== null && state.length > STATE_MAX_LENGTH) throw new OAuthError('invalid_request', `\`state\` is longer than ${STATE_MAX_LENGTH} characters.`);
  const responseType = required(query, 'response_type');
  if (responseType !== 'code') throw new OAuthError('unsupported_response_type', 'Only `response_type=code` is supported.');
  const challenge = required(query, 'code_challenge', (d) => new OAuthError('invalid_request', `PKCE is required: ${d}`));
  if (!CODE_CHALLENGE.test(challenge)) throw new OAuthError('invalid_request', '`code_challenge` must be the BASE64URL SHA-256 of the code verifier.');
  if (param(query, 'code_challenge_method') !== 'S256') throw new OAuthError('invalid_request', 'PKCE with `code_challenge_method=S256` is required.');
  const scope = param(query, 'scope');
  if (scope !== null && scope.split(' ').some((s) => s !== '' && s !== SCOPE)) throw new OAuthError('invalid_scope', `The only scope is \`${SCOPE}\`.`);
  const resource = currentResource(db, required(query, 'resource'));
  if (!resource) {
    throw new OAuthError('invalid_target', `\`resource\` must be exactly ${currentOrigins(db).flatMap((o) => [`${o}/mcp`, `${o}/v0`]).join(' or ')}.`);
  }
  return { clientId: client.client_id, redirectUri, state, codeChallenge: challenge, resource };
}

/** Stores an authorization request the owner is to answer; its id for the consent page. */
export function storeAuthorizationRequest(db: Db, pending: PendingRequest): string {
  return db.transaction(() => storeRequest(db, pending))();
}

/**
 * A token request's answer once its transaction committed: the tokens, or the error thrown after
 * any family revocation it made is published.
 */
function tokensOrThrow(svc: OAuthServices, outcome: TokenOutcome): TokenResponse {
  if (outcome.ok) return outcome.body;
  publish(svc, outcome.seq);
  throw outcome.error;
}

/** `authorization_code`; `originServed` says whether a grant's origin is one svc still serves. */
export function exchangeAuthorizationCode(svc: OAuthServices, req: CodeExchange, originServed: (origin: string) => boolean): TokenResponse {
  return tokensOrThrow(svc, svc.db.transaction(() => exchangeCode(svc.db, req, originServed))());
}

/** `refresh_token`: the refresh token rotates. */
export function refreshAccessToken(svc: OAuthServices, req: RefreshRequest, originServed: (origin: string) => boolean): TokenResponse {
  return tokensOrThrow(svc, svc.db.transaction(() => refreshTokens(svc.db, req, originServed))());
}

/**
 * `/oauth/token` (RFC 6749 §4.1.3, §6): the grant type's parameters and the client checked
 * before the lock, then the grant's one transaction.
 */
export function tokenRequest(svc: OAuthServices, body: OAuthParams, originServed: (origin: string) => boolean): TokenResponse {
  const { db } = svc;
  const grantType = required(body, 'grant_type');
  if (grantType === 'authorization_code') {
    const clientId = required(body, 'client_id');
    if (!findClient(db, clientId)) throw new OAuthError('invalid_client', 'Unknown or expired client_id.', 401);
    return exchangeAuthorizationCode(
      svc,
      {
        code: required(body, 'code'),
        codeVerifier: required(body, 'code_verifier'),
        clientId,
        redirectUri: required(body, 'redirect_uri'),
        resource: required(body, 'resource'),
      },
      originServed,
    );
  }
  if (grantType === 'refresh_token') {
    const clientId = param(body, 'client_id');
    if (clientId !== null && !findClient(db, clientId)) throw new OAuthError('invalid_client', 'Unknown or expired client_id.', 401);
    return refreshAccessToken(svc, { refreshToken: required(body, 'refresh_token'), clientId, resource: param(body, 'resource') }, originServed);
  }
  throw new OAuthError('unsupported_grant_type', `Supported grant types: ${GRANT_TYPES.join(', ')}.`);
}

/**
 * Which client a token request is counted against: the client its code or refresh token was
 * issued to, or null (the shared window for everything unproven) when the request carries none
 * that svc holds. A `client_id` alone proves nothing: it is public, so a flood naming a real
 * client must not use up that client's allowance.
 */
export function tokenRequestClient(db: Db, body: OAuthParams): string | null {
  const grantType = body.grant_type;
  if (grantType === 'authorization_code' && typeof body.code === 'string' && body.code !== '') return clientOfCode(db, body.code);
  if (grantType === 'refresh_token' && typeof body.refresh_token === 'string' && body.refresh_token !== '') return clientOfToken(db, body.refresh_token, 'refresh');
  return null;
}

/** As tokenRequestClient, for a revocation: the client of the access or refresh token sent. */
export function revokeRequestClient(db: Db, body: OAuthParams): string | null {
  return typeof body.token === 'string' && body.token !== '' ? clientOfToken(db, body.token) : null;
}

/** `/oauth/revoke` (RFC 7009): the same silence whether or not the token was known. */
export function revokeRequest(svc: OAuthServices, body: OAuthParams): void {
  const token = body.token;
  const clientId = typeof body.client_id === 'string' ? body.client_id : null;
  if (typeof token === 'string' && token !== '') revokeOAuthToken(svc, token, clientId);
}

/** RFC 7009: revokes the token's family when the token is known and the client's; silent otherwise. */
export function revokeOAuthToken(svc: OAuthServices, token: string, clientId: string | null): void {
  publish(svc, svc.db.transaction(() => revokeToken(svc.db, token, clientId))());
}

// --- The owner's requests (src/routes/owner-oauth.ts) ---

/** One page of clients with their active grants; what has run out is swept first, in its own commit. */
export function oauthClientPage(db: Db, p: Principal, query: ClientPageQuery): Record<string, unknown> {
  const now = Date.now();
  db.transaction(() => sweepOAuth(db, now))();
  return listClients(db, p, query, now);
}

/** Deletes every registration without an active grant; how many went. */
export function purgeOAuthClients(db: Db): { deleted_clients: number } {
  return { deleted_clients: db.transaction(() => purgeClients(db))() };
}

/** Revokes a grant and every token it issued; 404 when no active grant has that id. */
export function revokeOAuthGrant(svc: OAuthServices, grantId: string): void {
  const seq = svc.db.transaction(() => revokeGrant(svc.db, grantId))();
  if (seq === null) throw notFound('grant');
  publish(svc, seq);
}

/** What the consent page shows for a waiting request. */
export function consentView(db: Db, requestId: string): ReturnType<typeof requestView> {
  return requestView(db, requestId);
}

/** The owner approves: the grant, its code and `oauth.authorized` commit together; the URL back to the client. */
export function approveConsent(svc: OAuthServices, requestId: string, approval: Approval): { redirect_to: string } {
  const { db } = svc;
  const permissions = storedPermissions(permissionSet(approval.permissions));
  const { redirectTo, seq } = db.transaction(() => approveRequest(db, requestId, approval, permissions, (resource) => currentResource(db, resource)))();
  publish(svc, seq);
  return { redirect_to: redirectTo };
}

/** The owner denies: the request is answered once, with `access_denied` for the client. */
export function denyConsent(db: Db, requestId: string): { redirect_to: string } {
  return { redirect_to: db.transaction(() => denyRequest(db, requestId))().redirectTo };
}
