/**
 * The fastify application of one listener: body parsing, the error body, the gate plugin
 * (src/auth/gate.ts: target, Host, origin, authentication, validators, security headers) and the
 * route plugins. One instance serves the loopback listener, another the tunnel.
 */
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import cookie from '@fastify/cookie';
import websocket from '@fastify/websocket';
import { ApiError } from '../core/errors.js';
import type { Principal } from '../auth/principal.js';
import { httpGate, noRoute } from '../auth/gate.js';
import { noteChange } from '../db/stamp.js';
import { ownerRoutes } from '../routes/owner.js';
import { ownerGuardRoutes } from '../routes/owner-guard.js';
import { ownerMailRoutes } from '../routes/owner-mail.js';
import { transportRoutes } from '../routes/transport.js';
import { dnsProviderRoutes } from '../routes/dns-provider.js';
import { inboundRoutes } from '../routes/inbound.js';
import { inboxRoutes } from '../routes/inboxes.js';
import { apiKeyRoutes } from '../routes/api-keys.js';
import { threadRoutes } from '../routes/threads.js';
import { metricRoutes } from '../routes/metrics.js';
import { identityRoutes } from '../routes/identity.js';
import { hostedOnlyRoutes } from '../routes/hosted-only.js';
import { messageRoutes } from '../routes/messages.js';
import { sendRoutes } from '../routes/send.js';
import { draftRoutes } from '../routes/drafts.js';
import { listRoutes } from '../routes/lists.js';
import { downloadRoutes } from '../routes/downloads.js';
import { wsRoutes } from '../routes/ws.js';
import { inboxEventRoutes } from '../routes/inbox-events.js';
import { webhookRoutes } from '../routes/webhooks.js';
import { domainRoutes } from '../routes/domains.js';
import { webAppRoutes } from '../routes/web.js';
import { mcpRoutes } from '../routes/mcp.js';
import { oauthRoutes } from '../routes/oauth.js';
import { ownerOAuthRoutes } from '../routes/owner-oauth.js';
import { remoteRoutes } from '../routes/remote.js';
import { backupRoutes } from '../routes/backup.js';
import { doctorRoutes } from '../routes/doctor.js';
import { podRoutes } from '../routes/pods.js';
import { lazySerializerFactory } from './lazy-schemas.js';
import type { AppContext } from '../context.js';

declare module 'fastify' {
  interface FastifyInstance {
    svc: AppContext;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

const BODY_LIMIT = 8 * 1024 * 1024;
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function sendError(reply: FastifyReply, err: ApiError): FastifyReply {
  if (err.headers) reply.headers(err.headers);
  return reply.code(err.status).type('application/json; charset=utf-8').send(err.toBody());
}

/**
 * Storage failures — a full disk, a read-only or vanished home, a lock held past busy_timeout —
 * are the documented `503 service_unavailable` (spec §7.2), not internal errors: SQLite's codes
 * (better-sqlite3 `SqliteError.code`, extended ones included) and Node's file-system errnos.
 */
const STORAGE_FAILURE = /^(SQLITE_(FULL|IOERR|READONLY|CANTOPEN|BUSY|LOCKED|NOMEM)|ENOSPC$|EROFS$|EDQUOT$|EIO$)/;

/** Maps fastify's own errors (validation, body parsing) to the documented codes; hides the rest. */
function toApiError(err: unknown, request: FastifyRequest): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { code?: string; validation?: { keyword?: string; params?: { additionalProperty?: string } }[]; validationContext?: string; message?: string; statusCode?: number };
  const unknownField = e.validation?.find((v) => v.keyword === 'additionalProperties')?.params?.additionalProperty;
  if (unknownField !== undefined) {
    return new ApiError('validation_error', `Unknown field \`${unknownField}\` in the ${e.validationContext ?? 'request'}.`, {
      fix: 'Remove the field; see the API reference for the accepted fields.',
    });
  }
  if (e.validation) {
    return new ApiError('validation_error', `Invalid ${e.validationContext ?? 'request'}: ${e.message?.replace(/^(body|querystring|params|headers)\/?/, '') ?? 'invalid input'}`, {
      fix: 'Compare the request with the documented fields; unknown fields are rejected.',
    });
  }
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', 'The request body is too large.', { fix: 'Send less than 8 MiB; messages must stay under 5 MiB.' });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'The request body must be JSON.', { fix: 'Send `Content-Type: application/json`.' });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('validation_error', 'The request body is not valid JSON.', { fix: 'Send a JSON object, or no body with no Content-Type.' });
  }
  if (e.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return new ApiError('validation_error', 'A path segment is too long.', { fix: 'Identifiers are at most a few hundred characters; check the URL.' });
  }
  if (e.code === 'FST_ERR_BAD_URL' || e.statusCode === 400) {
    return new ApiError('validation_error', 'The request is malformed.', { fix: 'Check the URL encoding and the body.' });
  }
  if (e.code !== undefined && STORAGE_FAILURE.test(e.code)) {
    return new ApiError('service_unavailable', 'svc could not write to its storage.', { fix: 'Free disk space and make sure the home directory is writable, then try again.' });
  }
  request.log.error({ err_code: e.code, route: request.routeOptions.url }, 'internal error');
  return new ApiError('internal_error', 'An internal error occurred.');
}

/**
 * Requests Node's HTTP parser refuses (headers over 16 KiB, malformed request lines) never reach
 * fastify: answer them with the documented error body, as fastify's default handler would with
 * its own shape, then close the connection the parser can no longer use.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
  const apiError = new ApiError('validation_error', tooLarge ? 'The request line and headers are larger than 16 KiB.' : 'The request is malformed.', {
    fix: tooLarge ? 'Send a shorter URL and fewer or smaller headers; put large values in a JSON body.' : 'Check the request line, the headers and the body framing.',
  });
  const body = JSON.stringify(apiError.toBody());
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${apiError.status} Bad Request\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy();
}

export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    bodyLimit: BODY_LIMIT,
    trustProxy: false,
    return503OnClosing: true,
    forceCloseConnections: false,
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 4096 },
    // Bad percent-encoding and over-long ids fail in the router, before the error handler:
    // answer them with the documented body too (found by test/api/fuzz-routes.test.ts).
    frameworkErrors: (err, request, reply) => sendError(reply, toApiError(err, request)),
    clientErrorHandler: answerClientError,
    // Response serializers are compiled on first use (src/core/lazy-compile.ts: start-up time, memory).
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory } },
  });
  app.decorate('svc', ctx);
  app.decorateRequest('principal', null);

  // An empty body with a JSON content type is treated as no body rather than an error.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new ApiError('validation_error', 'The request body is not valid JSON.', { fix: 'Send a well-formed JSON object.' }), undefined);
    }
  });

  await app.register(cookie);
  await app.register(websocket, { options: { maxPayload: 64 * 1024, handleProtocols: (offered: Set<string>) => (offered.has('svc.events') ? 'svc.events' : false) }, preClose: async function (this: FastifyInstance) { for (const socket of this.websocketServer.clients) socket.close(1001, 'svc is stopping'); } });
  // After the cookie parser (the gate reads cookies) and the WebSocket plugin (the gate wraps
  // upgrade handlers too), before any route (each must declare its access).
  await app.register(httpGate, ctx);

  app.setErrorHandler((err, request, reply) => sendError(reply, toApiError(err, request)));
  app.setNotFoundHandler((request, reply) => sendError(reply, noRoute(request)));

  // A bodiless POST/PATCH/DELETE is validated as an empty object, so required fields are
  // reported by name and routes without fields accept it.
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && UNSAFE.has(request.method)) request.body = {};
  });

  // Writes invalidate the in-memory caches derived from the database (src/db/stamp.ts).
  // Unsubscribed on close: a tunnel listener is rebuilt whenever the remote hostname changes.
  const unsubscribeChanges = ctx.bus.subscribe('event', () => noteChange());
  app.addHook('onClose', async () => unsubscribeChanges());
  app.addHook('preHandler', async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') noteChange();
  });

  // Inbox changes alter what the edge must accept: push routing now rather than at the next tick.
  // Inbox writes wake the provisioning loop themselves (src/requests/inboxes.ts).
  app.addHook('onResponse', async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') noteChange();
  });

  await app.register(ownerRoutes, { prefix: '/v0/owner' });
  await app.register(transportRoutes, { prefix: '/v0/owner' });
  await app.register(dnsProviderRoutes, { prefix: '/v0/owner' });
  await app.register(ownerGuardRoutes, { prefix: '/v0/owner' });
  await app.register(inboundRoutes, { prefix: '/v0/owner' });
  await app.register(ownerOAuthRoutes, { prefix: '/v0/owner' });
  await app.register(oauthRoutes);
  if (ctx.remote) await app.register(remoteRoutes(ctx.remote), { prefix: '/v0/owner' });
  if (ctx.backups && ctx.listener === 'local') await app.register(backupRoutes(ctx.backups), { prefix: '/v0/owner' });
  if (ctx.health && ctx.listener === 'local') await app.register(doctorRoutes(ctx.health), { prefix: '/v0/owner' });
  if (ctx.listener === 'local') await app.register(ownerMailRoutes, { prefix: '/v0/owner' });
  await app.register(mcpRoutes);
  for (const routes of [inboxRoutes, apiKeyRoutes, threadRoutes, messageRoutes, sendRoutes, draftRoutes, listRoutes, downloadRoutes, wsRoutes, inboxEventRoutes, domainRoutes, webhookRoutes, metricRoutes, identityRoutes, hostedOnlyRoutes, podRoutes]) {
    await app.register(routes, { prefix: '/v0' });
  }
  // The owner web app is for the owner's own browser: never on the tunnel listener (spec §5.2).
  if (ctx.listener === 'local') await app.register(webAppRoutes);
  return app;
}
