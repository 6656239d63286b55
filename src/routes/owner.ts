/**
 * Owner account routes (spec §4.13 owner part, §5.1): status, setup, login, links, sessions,
 * password. Every answer has a response schema, so nothing but the declared fields (never a
 * session token or a password hash) can reach the wire.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { NewSession } from '../owner/owner-account.js';
import { DEVICE_COOKIE, DEVICE_COOKIE_MAX_AGE_S, SESSION_COOKIE, SESSION_MAX_MS } from '../owner/limits.js';
import { sessionCsrfToken } from '../owner/session-binding.js';
import type { OwnerAccount } from '../owner/owner-account.js';
import type { SameShape } from '../core/validation.js';
import { LoginLinkResponse, Session, SessionKeysResponse, SessionList, SessionProofResponse, SessionResponse, StatusResponse, SudoResponse } from '../owner/schemas.js';
import { ApiError, unauthorized } from '../core/errors.js';
import {
  changeOwnerPassword,
  confirmOwnerPassword,
  createLoginLink,
  deleteOwnerSession,
  loginOwner,
  logoutOwner,
  ownerSessionList,
  ownerStatus,
  redeemLoginLink,
  setupOwner,
} from '../requests/owner.js';

const Setup = Type.Object({ password: Type.String(), code: Type.String({ maxLength: 64 }) }, { additionalProperties: false });
const Login = Type.Object({ password: Type.String() }, { additionalProperties: false });
const Redeem = Type.Object({ token: Type.String({ maxLength: 256 }) }, { additionalProperties: false });
const ChangePassword = Type.Object({ current_password: Type.String(), password: Type.String() }, { additionalProperties: false });
const SessionParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const Sudo = Type.Object({ password: Type.String() }, { additionalProperties: false });
const ProofRequest = Type.Object({ nonce: Type.String({ minLength: 16, maxLength: 128, pattern: '^[A-Za-z0-9_-]+$' }) }, { additionalProperties: false });
const Renewal = Type.Object({ challenge: Type.String({ maxLength: 128 }), answer: Type.String({ maxLength: 128 }) }, { additionalProperties: false });
const Empty = Type.Object({}, { additionalProperties: false });

// Compile-time: the schemas are exactly the views (src/core/validation.ts SameShape).
const sessionShape: SameShape<Static<typeof Session>, ReturnType<OwnerAccount['listSessions']>[number]> = true;
const startShape: SameShape<Static<typeof SessionResponse>, ReturnType<typeof startSession>> = true;

/**
 * Browser sessions are made at svc's canonical origin only (http://127.0.0.1:<port>): at localhost
 * or [::1] the browser would send the cookie and token wherever those names lead, and another
 * process can hold [::1]:<port> while svc runs. The web app redirects there (src/routes/web.ts).
 */
function checkSessionHost(request: FastifyRequest): void {
  const canonical = new URL(request.server.svc.origin());
  if (request.headers.host !== canonical.host) {
    throw new ApiError('forbidden', `Browser sessions are made at ${canonical.origin} only.`, { fix: `Open ${canonical.origin} (not localhost or [::1]) and sign in there.` });
  }
}

function startSession(request: FastifyRequest, reply: FastifyReply, session: NewSession) {
  const cookie = { httpOnly: true, sameSite: 'strict', secure: request.protocol === 'https' } as const;
  reply.setCookie(SESSION_COOKIE, session.token, { ...cookie, path: '/', maxAge: SESSION_MAX_MS / 1000 });
  reply.setCookie(DEVICE_COOKIE, session.device, { ...cookie, path: '/v0/owner/login', maxAge: DEVICE_COOKIE_MAX_AGE_S });
  return csrfAnswer(request, session.csrfToken, session.expiresAt);
}

/** The token for this listener's origin and this process start (src/owner/session-binding.ts). */
function csrfAnswer(request: FastifyRequest, secret: string, expiresAt: string) {
  const svc = request.server.svc;
  return { csrf_token: sessionCsrfToken(secret, svc.origin(), svc.owner.epoch), expires_at: expiresAt };
}

/** The session the cookie names, for the reconnect handshake; 401 without one. */
function cookieSessionOf(request: FastifyRequest) {
  const token = request.cookies[SESSION_COOKIE];
  const session = token ? request.server.svc.owner.cookieSession(token) : null;
  if (!session) throw unauthorized('There is no browser session to reconnect.');
  return session;
}

/** The browser session a principal is; the owner bearer has none. */
function browserSessionId(request: FastifyRequest): string {
  const p = request.principal!;
  if (p.kind !== 'session') throw new ApiError('validation_error', 'Only a browser session has this; the owner bearer needs none.', { fix: 'Call this from the web app.' });
  return p.id;
}

export const ownerRoutes: FastifyPluginAsync = async (app) => {
  const svc = app.svc;

  app.get('/status', { config: { auth: 'public' }, schema: { response: { 200: StatusResponse } } }, async (request, reply) => {
    const p = request.principal;
    if (p?.csrfToken) reply.header('x-svc-csrf', p.csrfToken);
    return ownerStatus(svc, p);
  });

  app.post<{ Body: Static<typeof Setup> }>('/setup', { config: { auth: 'public' }, schema: { body: Setup, response: { 200: SessionResponse } } }, async (request, reply) => {
    checkSessionHost(request);
    return startSession(request, reply, await setupOwner(svc, request.body.password, request.body.code, request.headers['user-agent']));
  });

  app.post<{ Body: Static<typeof Login> }>('/login', { config: { auth: 'public' }, schema: { body: Login, response: { 200: SessionResponse } } }, async (request, reply) => {
    checkSessionHost(request);
    return startSession(request, reply, await loginOwner(svc, request.body.password, request.headers['user-agent'], request.cookies[DEVICE_COOKIE]));
  });

  // Sudo mode and the reconnect handshake (src/owner/session-binding.ts, docs/security.md).
  app.post<{ Body: Static<typeof Sudo> }>('/sudo', { config: { auth: 'owner' }, schema: { body: Sudo, response: { 200: SudoResponse } } }, async (request) =>
    confirmOwnerPassword(svc, browserSessionId(request), request.body.password),
  );

  app.get('/session-keys', { config: { auth: 'owner' }, schema: { response: { 200: SessionKeysResponse } } }, async (request) => {
    const keys = svc.owner.sessionKeysOf(browserSessionId(request));
    if (!keys) throw unauthorized();
    return keys;
  });

  app.post<{ Body: Static<typeof ProofRequest> }>('/session-proof', { config: { auth: 'public' }, schema: { body: ProofRequest, response: { 200: SessionProofResponse } } }, async (request) =>
    svc.owner.proveServer(cookieSessionOf(request), request.body.nonce),
  );

  app.post<{ Body: Static<typeof Renewal> }>('/session-renew', { config: { auth: 'public' }, schema: { body: Renewal, response: { 200: SessionResponse } } }, async (request) => {
    checkSessionHost(request);
    const session = cookieSessionOf(request);
    if (!svc.owner.redeemChallenge(session, request.body.challenge, request.body.answer)) {
      throw unauthorized('The renewal answer is wrong or its challenge expired; sign in again.');
    }
    return csrfAnswer(request, session.secret, session.expiresAt);
  });

  app.post('/login-links', { config: { auth: 'owner_bearer' }, schema: { body: Empty, response: { 200: LoginLinkResponse } } }, async () => createLoginLink(svc, svc.origin()));

  app.post<{ Body: Static<typeof Redeem> }>('/login-links/redeem', { config: { auth: 'public' }, schema: { body: Redeem, response: { 200: SessionResponse } } }, async (request, reply) => {
    checkSessionHost(request);
    return startSession(request, reply, redeemLoginLink(svc, request.body.token, request.headers['user-agent']));
  });

  app.post('/logout', { config: { auth: 'owner' }, schema: { body: Empty } }, async (request, reply) => {
    logoutOwner(svc, request.principal!);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.send();
  });

  app.get('/sessions', { config: { auth: 'owner' }, schema: { response: { 200: SessionList } } }, async (request) => ownerSessionList(svc, request.principal!));

  app.delete<{ Params: Static<typeof SessionParams> }>('/sessions/:id', { config: { auth: 'owner' }, schema: { params: SessionParams } }, async (request, reply) => {
    if (deleteOwnerSession(svc, request.principal!, request.params.id).own) reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.send();
  });

  app.post<{ Body: Static<typeof ChangePassword> }>('/password', { config: { auth: 'owner' }, schema: { body: ChangePassword } }, async (request, reply) => {
    await changeOwnerPassword(svc, request.principal!, request.body.current_password, request.body.password);
    return reply.send();
  });
};
