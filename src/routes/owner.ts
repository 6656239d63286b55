/**
 * Owner account routes (spec §4.13 owner part, §5.1): status, setup, login, links, sessions,
 * password. Every answer has a response schema, so nothing but the declared fields (never a
 * session token or a password hash) can reach the wire.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { ApiError } from '../core/errors.js';
import type { NewSession } from '../owner/owner-account.js';
import { SESSION_COOKIE, SESSION_MAX_MS } from '../owner/limits.js';
import { sessionCsrfToken } from '../owner/session-binding.js';
import type { OwnerAccount } from '../owner/owner-account.js';
import type { SameShape } from '../core/validation.js';
import { LoginLinkResponse, Session, SessionList, SessionResponse, StatusResponse } from '../owner/schemas.js';

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
  const { owner } = app.svc;

  app.get('/status', { config: { auth: 'public' }, schema: { response: { 200: StatusResponse } } }, async (request, reply) => {
    const p = request.principal;
    if (p?.csrfToken) reply.header('x-svc-csrf', p.csrfToken);
    return { setup_required: owner.setupRequired, authenticated: p !== null && (p.kind === 'owner' || p.kind === 'session'), locked: false };
  });

  app.post<{ Body: Static<typeof Setup> }>('/setup', { config: { auth: 'public' }, schema: { body: Setup, response: { 200: SessionResponse } } }, async (request, reply) => {
    const session = await owner.setup(request.body.password, request.body.code, request.headers['user-agent']);
    return startSession(request, reply, session);
  });

  app.post<{ Body: Static<typeof Login> }>('/login', { config: { auth: 'public' }, schema: { body: Login, response: { 200: SessionResponse } } }, async (request, reply) => {
    const session = await owner.login(request.body.password, request.headers['user-agent']);
    return startSession(request, reply, session);
  });

  app.post('/login-links', { config: { auth: 'owner_bearer' }, schema: { body: Empty, response: { 200: LoginLinkResponse } } }, async () => {
    const link = owner.createLoginLink();
    return { url: `${app.svc.origin()}/login#token=${link.token}`, expires_at: link.expiresAt };
  });

  app.post<{ Body: Static<typeof Redeem> }>('/login-links/redeem', { config: { auth: 'public' }, schema: { body: Redeem, response: { 200: SessionResponse } } }, async (request, reply) => {
    const session = owner.redeemLoginLink(request.body.token, request.headers['user-agent']);
    return startSession(request, reply, session);
  });

  app.post('/logout', { config: { auth: 'owner' }, schema: { body: Empty } }, async (request, reply) => {
    const p = request.principal!;
    if (p.kind === 'session') owner.endSession(p.id);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.send();
  });

  app.get('/sessions', { config: { auth: 'owner' }, schema: { response: { 200: SessionList } } }, async (request) => {
    const p = request.principal!;
    const sessions = owner.listSessions(p.kind === 'session' ? p.id : null);
    return { count: sessions.length, limit: sessions.length, sessions };
  });

  app.delete<{ Params: Static<typeof SessionParams> }>('/sessions/:id', { config: { auth: 'owner' }, schema: { params: SessionParams } }, async (request, reply) => {
    if (!owner.deleteSession(request.params.id)) throw new ApiError('not_found', 'The session was not found.', { fix: 'List sessions with GET /v0/owner/sessions.' });
    if (request.principal!.kind === 'session' && request.principal!.id === request.params.id) reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.send();
  });

  app.post<{ Body: Static<typeof ChangePassword> }>('/password', { config: { auth: 'owner' }, schema: { body: ChangePassword } }, async (request, reply) => {
    const p = request.principal!;
    await owner.changePassword(request.body.current_password, request.body.password, p.kind === 'session' ? p.id : null);
    return reply.send();
  });
};
