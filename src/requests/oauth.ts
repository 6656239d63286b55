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
import { listClients, purgeClients, readRegistration, registerClient, registrationResponse, sweepOAuth, type ClientPageQuery } from '../oauth/clients.js';
import { approveRequest, denyRequest, requestView, storeRequest, type Approval, type PendingRequest } from '../oauth/consent.js';
import { exchangeCode, refreshTokens, revokeGrant, revokeToken, type CodeExchange, type RefreshRequest, type TokenOutcome, type TokenResponse } from '../oauth/grants.js';
import { currentResource } from '../oauth/resources.js';

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
