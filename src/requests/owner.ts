/**
 * The owner account's operations (spec §4.13 owner part, §5.1): status, setup, login, login
 * links, sessions and the password, for src/routes/owner.ts. Access is `public`, `owner` or
 * `owner_bearer` as each route declares: no scope, no permission.
 *
 * Slow and budgeted checks (the setup code, password hashing, the current password) run first,
 * outside the lock (OwnerAccount `check*`); a write that must commit as one — the first password,
 * or a new password with every other session signed out — is one transaction opened here. The
 * rest are single statements. The cookie a session travels in is the route's (HTTP) business.
 */
import type { AppContext } from '../context.js';
import { ApiError } from '../core/errors.js';
import type { Principal } from '../auth/principal.js';
import { passwordAlreadySet, type NewSession } from '../owner/owner-account.js';

/** What an owner operation needs from the running service. */
export type OwnerServices = Pick<AppContext, 'db' | 'owner'>;

/** The browser session a principal is, if any: only those can be "this session". */
const sessionOf = (p: Principal): string | null => (p.kind === 'session' ? p.id : null);

/** `GET /v0/owner/status`: what the web app needs before anyone signs in. */
export function ownerStatus(svc: OwnerServices, p: Principal | null) {
  return { setup_required: svc.owner.setupRequired, authenticated: p !== null && (p.kind === 'owner' || p.kind === 'session'), locked: false };
}

/** Sets the first password with the code printed at startup; the owner's first session. */
export async function setupOwner(svc: OwnerServices, password: string, code: string, userAgent: string | undefined): Promise<NewSession> {
  const { db, owner } = svc;
  const hash = await owner.checkSetup(password, code);
  if (!db.transaction(() => owner.storeFirstPassword(hash))()) throw passwordAlreadySet();
  owner.setupCompleted();
  return owner.createSession(userAgent);
}

export function loginOwner(svc: OwnerServices, password: string, userAgent: string | undefined, deviceCookie: string | undefined): Promise<NewSession> {
  return svc.owner.login(password, userAgent, deviceCookie);
}

/** Sudo mode: the owner of a browser session types the password again (docs/security.md). */
export function confirmOwnerPassword(svc: OwnerServices, sessionId: string, password: string): Promise<{ sudo_until: string }> {
  return svc.owner.confirmPassword(sessionId, password);
}

/** A one-time login link on this listener's origin (`svc open`); minted with the owner bearer only. */
export function createLoginLink(svc: OwnerServices, origin: string): { url: string; expires_at: string } {
  const link = svc.owner.createLoginLink();
  return { url: `${origin}/login#token=${link.token}`, expires_at: link.expiresAt };
}

export function redeemLoginLink(svc: OwnerServices, token: string, userAgent: string | undefined): NewSession {
  return svc.owner.redeemLoginLink(token, userAgent);
}

/** Ends the caller's browser session; the owner bearer has none to end. */
export function logoutOwner(svc: OwnerServices, p: Principal): void {
  const session = sessionOf(p);
  if (session !== null) svc.owner.endSession(session);
}

/** The live sessions, the caller's own marked `current`. */
export function ownerSessionList(svc: OwnerServices, p: Principal) {
  const sessions = svc.owner.listSessions(sessionOf(p));
  return { count: sessions.length, limit: sessions.length, sessions };
}

/** Signs a session out; true when it was the caller's own (its cookie is then cleared). */
export function deleteOwnerSession(svc: OwnerServices, p: Principal, sessionId: string): { own: boolean } {
  if (!svc.owner.deleteSession(sessionId)) throw new ApiError('not_found', 'The session was not found.', { fix: 'List sessions with GET /v0/owner/sessions.' });
  return { own: sessionOf(p) === sessionId };
}

/** Changes the password and signs out every other session, in one transaction. */
export async function changeOwnerPassword(svc: OwnerServices, p: Principal, current: string, next: string): Promise<void> {
  const { db, owner } = svc;
  const hash = await owner.checkPasswordChange(current, next);
  db.transaction(() => owner.replacePassword(hash, sessionOf(p)))();
  const session = sessionOf(p);
  if (session !== null) owner.markProved(session);
}
