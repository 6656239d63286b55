/**
 * The OAuth authorization server (spec §5.3): discovery under `/.well-known/*`, registration,
 * authorization, token and revocation under `/oauth/*`. These paths are outside `/v0`: the
 * origin rule does not apply, discovery/registration/token/revocation answer any origin (CORS
 * `*`, no credentials), and errors are `{error, error_description}`.
 *
 * Each listener registers this plugin once, so the token and revoke rate windows are counted per
 * listener, and within it per client. Over the tunnel the owner has no session: `/oauth/authorize` sends the browser to the
 * same request on the loopback origin, where consent happens (docs/oauth.md).
 */
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.js';
import { GateRefusal } from '../auth/gate.js';
import { webAppDir } from '../http/web-app.js';
import { SESSION_COOKIE } from '../owner/limits.js';
import { OAuthError } from '../oauth/errors.js';
import type { TokenResponse as IssuedTokens } from '../oauth/grants.js';
import { GRANT_TYPES, MAX_CLIENTS, RETRY_AFTER_SECONDS, REVOKE_REQUESTS_PER_MINUTE, SCOPE, TOKEN_BODY_MAX, TOKEN_REQUESTS_PER_MINUTE } from '../oauth/limits.js';
import { ClientRateWindows } from '../oauth/rate-window.js';
import { currentOrigins, loopbackOrigin, noteLoopbackOrigin } from '../oauth/resources.js';
import { RegistrationResponse, ResourceMetadataResponse, ServerMetadataResponse, TokenResponse } from '../oauth/schemas.js';
import type { SameShape } from '../core/validation.js';
import { readAuthorizationRequest, registerOAuthClient, revokeRequest, revokeRequestClient, storeAuthorizationRequest, tokenRequest, tokenRequestClient } from '../requests/oauth.js';

const RESOURCE_METADATA = '/.well-known/oauth-protected-resource';
const SERVER_METADATA = '/.well-known/oauth-authorization-server';
/** The paths that answer any origin, and so also answer CORS preflights. */
const CORS_PATHS = [RESOURCE_METADATA, `${RESOURCE_METADATA}/mcp`, `${RESOURCE_METADATA}/v0`, SERVER_METADATA, '/oauth/register', '/oauth/token', '/oauth/revoke'];
const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers': 'authorization, content-type, mcp-protocol-version',
  'access-control-max-age': '600',
};
type Params = Record<string, unknown>;

// Compile-time: the token schema is exactly what a grant issues (src/core/validation.ts SameShape).
const tokenShape: SameShape<TokenResponse, IssuedTokens> = true;

/** Discovery, registration, token and revocation: no credential, any origin (spec §5.3). */
const ANY_ORIGIN = { config: { auth: 'none', origins: 'any' } } as const;

const rateLimited = () =>
  new OAuthError('temporarily_unavailable', `Too many requests; try again in ${RETRY_AFTER_SECONDS} seconds.`, 429, { 'retry-after': String(RETRY_AFTER_SECONDS) });

/** Body and parser failures in this plugin's terms; anything unexpected is a bare server_error. */
function toOAuthError(err: unknown, request: FastifyRequest): OAuthError {
  if (err instanceof OAuthError) return err;
  if (err instanceof GateRefusal) return new OAuthError('invalid_request', err.message, err.status);
  const code = (err as FastifyError).code;
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new OAuthError('invalid_request', `The request body is larger than ${TOKEN_BODY_MAX / 1024} KiB.`, 413);
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new OAuthError('invalid_request', 'Send the parameters as application/x-www-form-urlencoded or as JSON.');
  const badBody = err instanceof ApiError || (err as FastifyError).statusCode === 400;
  if (badBody) {
    return request.routeOptions.url === '/oauth/register'
      ? new OAuthError('invalid_client_metadata', 'The registration body is not valid JSON.')
      : new OAuthError('invalid_request', 'The request body could not be read.');
  }
  request.log.error({ err_code: code, route: request.routeOptions.url }, 'internal error');
  return new OAuthError('server_error', 'An internal error occurred.', 500);
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page a browser sees when `/oauth/authorize` refuses: the error, and no way onward. */
function authorizeErrorPage(error: OAuthError): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in request refused</title><meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><h1>This sign-in request cannot continue</h1>
<p>The application that sent you here made a request svc cannot accept, so you were not sent back to it.</p>
<p><strong>${escapeHtml(error.error)}</strong>: ${escapeHtml(error.description)}</p>
<p>Close this page and start the sign-in again from the application, or tell its developer.</p></body></html>
`;
}

function sendOAuthError(request: FastifyRequest, reply: FastifyReply, error: OAuthError): FastifyReply {
  reply.code(error.status).headers(error.headers);
  // A browser navigating to /oauth/authorize gets a readable page; clients and tests get the JSON body.
  if (request.routeOptions.url === '/oauth/authorize' && /\btext\/html\b/i.test(request.headers.accept ?? '')) {
    return reply.headers({ 'content-security-policy': "default-src 'none'", 'cache-control': 'no-store' }).type('text/html; charset=utf-8').send(authorizeErrorPage(error));
  }
  return reply.type('application/json; charset=utf-8').send(error.toBody());
}

export const oauthRoutes: FastifyPluginAsync = async (app) => {
  const { db, bus, owner, listener } = app.svc;
  const origin = () => app.svc.origin();
  if (listener === 'local') noteLoopbackOrigin(db, app.svc.origin);
  const originServed = (o: string) => currentOrigins(db).includes(o);
  // Per client proven by its own code or token, plus one shared window for the rest, so junk
  // cannot refuse a real client (docs/oauth.md "Rate limits").
  const tokenWindows = new ClientRateWindows(TOKEN_REQUESTS_PER_MINUTE, MAX_CLIENTS);
  const revokeWindows = new ClientRateWindows(REVOKE_REQUESTS_PER_MINUTE, MAX_CLIENTS);

  // Token and revocation requests are form-encoded (RFC 6749 §4.1.3); JSON is accepted too. A
  // repeated name becomes an array, which `param` refuses.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    const params: Record<string, string | string[]> = {};
    for (const [name, value] of new URLSearchParams(body as string)) {
      const previous = params[name];
      params[name] = previous === undefined ? value : [...[previous].flat(), value];
    }
    done(null, params);
  });

  app.setErrorHandler((err, request, reply) => sendOAuthError(request, reply, toOAuthError(err, request)));

  app.addHook('onSend', async (request, reply) => {
    if (request.routeOptions.url !== '/oauth/authorize') reply.header('access-control-allow-origin', '*');
  });
  for (const path of CORS_PATHS) app.options(path, ANY_ORIGIN, async (_request, reply) => reply.code(204).headers(CORS_HEADERS).send());

  // --- Discovery (RFC 9728, RFC 8414) ---

  const resourceMetadata = (audience: '/mcp' | '/v0') => ({
    resource: origin() + audience,
    authorization_servers: [origin()],
    scopes_supported: [SCOPE],
    bearer_methods_supported: ['header'],
  });
  const resourceSchema = { schema: { response: { 200: ResourceMetadataResponse } } };
  app.get(`${RESOURCE_METADATA}/mcp`, { ...ANY_ORIGIN, ...resourceSchema }, async () => resourceMetadata('/mcp'));
  app.get(`${RESOURCE_METADATA}/v0`, { ...ANY_ORIGIN, ...resourceSchema }, async () => resourceMetadata('/v0'));
  // Clients that only probe the root (no path-aware discovery) are MCP clients: answer for /mcp.
  app.get(RESOURCE_METADATA, { ...ANY_ORIGIN, ...resourceSchema }, async () => resourceMetadata('/mcp'));

  app.get(SERVER_METADATA, { ...ANY_ORIGIN, schema: { response: { 200: ServerMetadataResponse } } }, async () => ({
    issuer: origin(),
    authorization_endpoint: `${origin()}/oauth/authorize`,
    token_endpoint: `${origin()}/oauth/token`,
    registration_endpoint: `${origin()}/oauth/register`,
    revocation_endpoint: `${origin()}/oauth/revoke`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [...GRANT_TYPES],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [SCOPE],
  }));

  // --- Registration (RFC 7591) ---

  app.post('/oauth/register', { ...ANY_ORIGIN, bodyLimit: TOKEN_BODY_MAX, schema: { response: { 201: RegistrationResponse } } }, async (request, reply) => {
    return reply.code(201).send(registerOAuthClient(db, request.body));
  });

  // --- Authorization (RFC 6749 §4.1.1, PKCE, RFC 8707 resource) ---

  // Opened in the owner's browser by the client: a top-level navigation from anywhere; it only
  // redirects, and consent itself happens in the web app.
  app.get('/oauth/authorize', { config: { auth: 'none', origins: 'navigation' } }, async (request, reply) => {
    if (webAppDir() === null) {
      throw new OAuthError('not_supported', 'The owner web app is not built into this svc, so there is no consent screen; OAuth sign-in is unavailable. Use an API key instead.');
    }
    const pending = readAuthorizationRequest(db, request.query as Params);

    // Consent happens only in the owner's own browser on the loopback origin; the code stays bound
    // to the resource the client asked for.
    if (listener !== 'local') {
      const loopback = loopbackOrigin(db);
      if (!loopback) throw new OAuthError('temporarily_unavailable', 'The loopback listener is not available.', 503);
      return reply.redirect(loopback + request.url);
    }
    const cookie = request.cookies[SESSION_COOKIE];
    if (!cookie || owner.sessionPrincipal(cookie) === null) return reply.redirect(`/login?return_to=${encodeURIComponent(request.url)}`);
    const requestId = storeAuthorizationRequest(db, pending);
    return reply.redirect(`/consent?request=${encodeURIComponent(requestId)}`);
  });

  // --- Token (RFC 6749 §4.1.3, §6) ---

  app.post(
    '/oauth/token',
    {
      ...ANY_ORIGIN,
      bodyLimit: TOKEN_BODY_MAX,
      schema: { response: { 200: TokenResponse } },
      // After the (bounded) body is read: the window is chosen by the credential it carries.
      preHandler: async (request) => {
        if (!tokenWindows.take(tokenRequestClient(db, (request.body ?? {}) as Params))) throw rateLimited();
      },
    },
    async (request, reply) => {
      const tokens = tokenRequest({ db, bus }, (request.body ?? {}) as Params, originServed);
      return reply.header('pragma', 'no-cache').send(tokens);
    },
  );

  // --- Revocation (RFC 7009): always 200, whether or not the token was known ---

  app.post(
    '/oauth/revoke',
    {
      ...ANY_ORIGIN,
      bodyLimit: TOKEN_BODY_MAX,
      preHandler: async (request) => {
        if (!revokeWindows.take(revokeRequestClient(db, (request.body ?? {}) as Params))) throw rateLimited();
      },
    },
    async (request, reply) => {
      revokeRequest({ db, bus }, (request.body ?? {}) as Params);
      return reply.code(200).send();
    },
  );
};
