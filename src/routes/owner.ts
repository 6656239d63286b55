/**
 * Owner account routes (spec §4.13 owner part, §5.1): status, setup, login, links, sessions,
 * password. Every answer has a response schema, so nothing but the declared fields (never a
 * session token or a password hash) can reach the wire.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { NewSession } from '../owner/owner-account.js';
import { SESSION_COOKIE, SESSION_MAX_MS } from '../owner/limits.js';
import { sessionCsrfToken } from '../owner/session-binding.js';
import type { OwnerAccount } from '../owner/owner-account.js';
import type { SameShape } from '../core/validation.js';
import { LoginLinkResponse, Session, SessionList, SessionResponse, StatusResponse } from '../owner/schemas.js';
import {
  changeOwnerPassword,
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
const Empty = Type.Object({}, { additionalProperties: false });

// Compile-time: the schemas are exactly the views (src/core/validation.ts SameShape).
const sessionShape: SameShape<Static<typeof Session>, ReturnType<OwnerAccount['listSessions']>[number]> = true;
const startShape: SameShape<Static<typeof SessionResponse>, ReturnType<typeof startSession>> = true;

function startSession(request: FastifyRequest, reply: FastifyReply, session: NewSession) {
  reply.setCookie(SESSION_COOKIE, session.token, {
    httpOnly: true,
    sameSite: 'strict',
    path: '/',
    secure: request.protocol === 'https',
    maxAge: SESSION_MAX_MS / 1000,
  });
  return { csrf_token: sessionCsrfToken(session.csrfToken, request.server.svc.origin()), expires_at: session.expiresAt };
}

export const ownerRoutes: FastifyPluginAsync = async (app) => {
  const svc = app.svc;

  app.get('/status', { config: { auth: 'public' }, schema: { response: { 200: StatusResponse } } }, async (request, reply) => {
    const p = request.principal;
    if (p?.csrfToken) reply.header('x-svc-csrf', p.csrfToken);
    return ownerStatus(svc, p);
  });

  app.post<{ Body: Static<typeof Setup> }>('/setup', { config: { auth: 'public' }, schema: { body: Setup, response: { 200: SessionResponse } } }, async (request, reply) =>
    startSession(request, reply, await setupOwner(svc, request.body.password, request.body.code, request.headers['user-agent'])),
  );

  app.post<{ Body: Static<typeof Login> }>('/login', { config: { auth: 'public' }, schema: { body: Login, response: { 200: SessionResponse } } }, async (request, reply) =>
    startSession(request, reply, await loginOwner(svc, request.body.password, request.headers['user-agent'])),
  );

  app.post('/login-links', { config: { auth: 'owner_bearer' }, schema: { body: Empty, response: { 200: LoginLinkResponse } } }, async () => createLoginLink(svc, svc.origin()));

  app.post<{ Body: Static<typeof Redeem> }>('/login-links/redeem', { config: { auth: 'public' }, schema: { body: Redeem, response: { 200: SessionResponse } } }, async (request, reply) =>
    startSession(request, reply, redeemLoginLink(svc, request.body.token, request.headers['user-agent'])),
  );

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
