/**
 * The one HTTP gate (issues 16 and 18; docs/security.md): a fastify plugin, `httpGate`, that
 * src/http/app.ts registers on each listener's app before any route, so REST, MCP (`/mcp`) and
 * the event WebSocket (`/v0/ws`) pass the same checks before any handler runs. It owns: request
 * target and `Host` checks, the origin rule, authentication and the route's declared access, the
 * request validators (src/core/validation.ts) and the security headers of every response.
 *
 * - A route declares `config.auth` (who may call it) and optionally `config.origins` (which
 *   browser contexts may call it). A route without `auth` refuses to register, so a new route
 *   cannot be forgotten; every protected handler is wrapped so it cannot run without a principal.
 * - Access is decided from the route the router matched — never from the URL text, which an
 *   attacker spells as they like (`/%76%30/…`, absolute-form targets, dot segments).
 * - Request targets must be canonical origin-form paths; anything else is refused before
 *   authentication, as are `Host` values other than the listener's own names (DNS rebinding).
 * - A browser session is the cookie AND its CSRF token on every request (GET too): browsers send
 *   cookies for 127.0.0.1 to every local port, so the cookie alone may be in a port-mate's hands;
 *   the token lives only in this origin's storage. A session's WebSocket must also name this
 *   listener's origin and carry the token as the `csrf.<token>` subprotocol (docs/websocket.md).
 *
 * Where the other controls live (src/auth/): principal.ts (who is calling, `hasPermission`),
 * permissions.ts (the `Permission` names and their stored forms), access.ts (scope → 404 then
 * permission → 403 for agent routes), credentials.ts (bearer → principal, and re-checks),
 * api-keys.ts (the API key store), inbox-lookup.ts (the inbox reads access needs), secrets.ts
 * (secret generation, hashing, constant-time compare), downloads.ts (signed download URLs).
 * Owner sessions are in src/owner/, OAuth grants and tokens in src/oauth/.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest, RouteOptions } from 'fastify';
import { ApiError, ownerOnly, unauthorized } from '../core/errors.js';
import { isOwner, type Listener, type Principal } from './principal.js';
import { resolveBearer } from './credentials.js';
import { sameSecret } from './secrets.js';
import { markApiKeyUsed } from './api-keys.js';
import type { OwnerAccount } from '../owner/owner-account.js';
import type { Db } from '../db/open.js';
import { CSRF_HEADER, SESSION_COOKIE } from '../owner/limits.js';
import { sessionCsrfToken } from '../owner/session-binding.js';
import { requestValidatorCompiler } from '../core/validation.js';

/**
 * Who may call a route:
 * - `none`: nobody is identified; no credential is read (web app files, OAuth endpoints);
 * - `public`: anyone, and a credential that is sent is checked (owner status, setup, login, downloads);
 * - `agent`: any valid credential (API key, OAuth token for /v0, owner bearer or session);
 * - `owner`: the owner bearer or an owner browser session;
 * - `owner_bearer`: the owner bearer only (minting login links);
 * - `mcp`: a bearer issued for /mcp; cookies are never read (spec §5.3).
 */
export type Access = 'none' | 'public' | 'agent' | 'owner' | 'owner_bearer' | 'mcp';

/**
 * Which browser contexts may call a route:
 * - `own` (the default): only pages of this listener's own origin, or non-browser clients;
 * - `any`: any origin (OAuth discovery, registration, token, revocation: spec §5.3, CORS `*`);
 * - `navigation`: also a top-level GET navigation from elsewhere (links to the web app, the OAuth
 *   consent redirect, download links); state never changes on GET.
 */
export type OriginPolicy = 'own' | 'any' | 'navigation';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: Access;
    origins?: OriginPolicy;
    /**
     * Sudo mode (docs/security.md): a browser session calls this route only within SUDO_MS of
     * proving the owner (login, login link, password). Routes that mint credentials, run commands
     * or change where mail and secrets go. Bearers (the owner's CLI, agents) are not asked.
     */
    sudo?: boolean;
    /**
     * The AgentMail SDK's event socket (docs/websocket.md): this route's WebSocket upgrade may
     * carry an API key as `?api_key=`, because that is where the SDK puts it. Nowhere else, and
     * never on a plain request: every other route refuses credentials in the URL.
     */
    apiKeyInUpgradeUrl?: boolean;
    /** Set by the gate from the route's own declaration: it has a WebSocket handler. */
    upgrades?: boolean;
  }
}

const ACCESS: ReadonlySet<string> = new Set<Access>(['none', 'public', 'agent', 'owner', 'owner_bearer', 'mcp']);
const PROTECTED: ReadonlySet<Access> = new Set<Access>(['agent', 'owner', 'owner_bearer', 'mcp']);
/** Query names that would carry a credential; refused so credentials never travel in URLs. */
const URL_CREDENTIALS = ['access_token', 'api_key', 'token', 'key', 'authorization'];
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Owner routes live here; on the tunnel they do not exist (spec §5.2). */
const OWNER_PREFIX = '/v0/owner';
const CSRF_SUBPROTOCOL_PREFIX = 'csrf.';
/** Unreserved characters (RFC 3986 §2.3): percent-encoding one of them is a second spelling. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

export interface GateContext {
  db: Db;
  owner: OwnerAccount;
  listener: Listener;
  /** The listener's own origin: http://127.0.0.1:PORT, or https://<hostname> for the tunnel. */
  origin: () => string;
}

/**
 * A request refused for its form or where it comes from (target, Host, Origin), before any
 * credential is read. Routes with their own error format (OAuth) render it in theirs.
 */
export class GateRefusal extends ApiError {}

/** `WWW-Authenticate` of spec §5.3 step 1: where an MCP client discovers how to get a token. */
export const mcpChallenge = (origin: string) => `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp", scope="svc"`;

/**
 * Sent with every response, errors included: no MIME sniffing of API bodies, and nothing cached
 * (answers carry mail and credentials). Hijacked responses (/mcp) set them from here too.
 */
export const SECURITY_HEADERS = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' } as const;

/**
 * The gate as a fastify plugin. Registered on the app itself (not encapsulated: its hooks and
 * validators apply to every route), after @fastify/cookie (it reads the session cookie) and
 * @fastify/websocket (so it also wraps the upgrade handler), before any route.
 */
export const httpGate: FastifyPluginAsync<GateContext> = Object.assign(
  async (app: FastifyInstance, ctx: GateContext) => installGate(app, ctx),
  // What fastify-plugin sets: the plugin's hooks and settings apply to the instance registering it.
  { [Symbol.for('skip-override')]: true, [Symbol.for('fastify.display-name')]: 'svc-gate' },
);

/** Installs the gate on a fresh app, before any route is registered (the body of `httpGate`). */
export function installGate(app: FastifyInstance, ctx: GateContext): void {
  app.setValidatorCompiler(requestValidatorCompiler());
  app.addHook('onSend', async (_request, reply) => {
    reply.headers(SECURITY_HEADERS);
  });
  app.addHook('onRoute', (route) => declareRoute(route));
  app.addHook('onRequest', async (request) => {
    checkTarget(request);
    checkHost(request, ctx);
    if (request.is404) return; // the not-found handler answers; no route, nothing to protect
    const config = request.routeOptions.config;
    const access = config.auth as Access; // declareRoute guarantees it
    if (ctx.listener === 'tunnel' && !servedOnTunnel(request, access)) throw noRoute(request);
    checkOrigin(request, ctx, config.origins ?? 'own');
    // An upgrade of a route that has no socket would be accepted and closed at once: answer it as no route.
    if (isUpgrade(request) && config.upgrades !== true) throw noRoute(request);
    if (access === 'none') return;
    const urlKey = apiKeyFromUrl(request, config);
    request.principal = access === 'mcp' ? mcpPrincipal(request, ctx) : authenticate(request, ctx, access, urlKey);
    authorize(request.principal, access);
    if (config.sudo === true && request.principal?.kind === 'session' && !ctx.owner.recentlyProved(request.principal.id)) throw sudoRequired();
  });
}

/** A session that has not proved the owner recently enough for this route. */
export const SUDO_HEADER = 'x-svc-sudo';
function sudoRequired(): ApiError {
  return new ApiError('forbidden', 'This action needs you to confirm your password first.', {
    fix: 'Confirm with POST /v0/owner/sudo {"password": "…"} (the web app asks for it), then repeat the request within 10 minutes.',
    headers: { [SUDO_HEADER]: 'required' },
  });
}

/** The answer for a path with no route; owner routes on the tunnel answer the same. */
export function noRoute(request: FastifyRequest): ApiError {
  return new ApiError('not_found', `There is no route ${request.method} ${request.url.split('?')[0]}.`, { fix: 'Check the path against the API reference; the API lives under /v0.' });
}

/**
 * Every route states its access, or svc does not start; protected handlers are wrapped so that,
 * whatever happens to the hooks, they never run without a principal.
 */
function declareRoute(route: RouteOptions): void {
  const access = route.config?.auth;
  // @fastify/websocket (registered first) leaves `wsHandler` on the routes it upgrades.
  route.config = { ...route.config, upgrades: typeof route.wsHandler === 'function' };
  const methods = Array.isArray(route.method) ? route.method.join(',') : route.method;
  if (typeof access !== 'string' || !ACCESS.has(access)) {
    throw new Error(`Route ${methods} ${route.url} declares no access (config.auth); every route must say who may call it.`);
  }
  if (!PROTECTED.has(access as Access)) return;
  const handler = route.handler;
  route.handler = function guardedHandler(this: FastifyInstance, request, reply) {
    if (!request.principal) throw unauthorized();
    return handler.call(this, request, reply);
  };
  // @fastify/websocket (registered first) has already folded `wsHandler` into `handler`, so this
  // guard also stands before every WebSocket upgrade.
}

/**
 * Origin-form targets in one canonical spelling only (RFC 9112 §3.2.1). Absolute-form, `*`,
 * backslashes, empty or dot segments (encoded or not) and percent-encoded unreserved characters
 * are all second spellings of some path: refused, so no layer can read them differently.
 */
function checkTarget(request: FastifyRequest): void {
  const target = request.raw.url ?? '';
  const end = target.search(/[?#]/);
  const path = end === -1 ? target : target.slice(0, end);
  const problem = pathProblem(path);
  if (problem !== null) {
    throw new GateRefusal('validation_error', `The request path is not in canonical form: ${problem}.`, {
      fix: 'Send an origin-form path such as /v0/inboxes, with no dot segments, no doubled slashes and no percent-encoding of letters, digits or -._~.',
    });
  }
}

function pathProblem(path: string): string | null {
  if (!path.startsWith('/')) return 'it must start with /';
  if (path.includes('\\')) return 'it contains a backslash';
  const segments = path.slice(1).split('/');
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    if (segment === '' && i < segments.length - 1) return 'it contains an empty segment (//)';
    // Most segments have no percent-encoding: nothing to decode (this runs on every request).
    if (!segment.includes('%')) {
      if (segment === '.' || segment === '..') return 'it contains a dot segment';
      continue;
    }
    let plain = '';
    for (let j = 0; j < segment.length; j++) {
      if (segment[j] !== '%') {
        plain += segment[j];
        continue;
      }
      const code = Number.parseInt(segment.slice(j + 1, j + 3), 16);
      if (!/^[0-9A-Fa-f]{2}$/.test(segment.slice(j + 1, j + 3))) return 'it contains a malformed percent-encoding';
      const char = String.fromCharCode(code);
      if (UNRESERVED.test(char)) return `it percent-encodes the plain character "${char}"`;
      plain += '%';
      j += 2;
    }
    if (plain === '.' || plain === '..') return 'it contains a dot segment';
  }
  return null;
}

/** allowedHosts' last answer per listener context, kept while its origin stays the same (every request asks). */
const hostsByContext = new WeakMap<GateContext, { origin: string; hosts: string[] }>();

/** The names this listener answers to: loopback names with its port, or the tunnel's hostname. */
function allowedHosts(ctx: GateContext): string[] {
  const current = ctx.origin();
  const known = hostsByContext.get(ctx);
  if (known?.origin === current) return known.hosts;
  const hosts = hostNames(ctx.listener, current);
  hostsByContext.set(ctx, { origin: current, hosts });
  return hosts;
}

function hostNames(listener: GateContext['listener'], originText: string): string[] {
  const origin = new URL(originText);
  if (listener === 'tunnel') return [origin.hostname, `${origin.hostname}:443`];
  return [`127.0.0.1:${origin.port}`, `localhost:${origin.port}`, `[::1]:${origin.port}`];
}

/** DNS rebinding: a page on evil.example resolving to 127.0.0.1 still says `Host: evil.example`. */
function checkHost(request: FastifyRequest, ctx: GateContext): void {
  const host = request.headers.host?.toLowerCase();
  const allowed = allowedHosts(ctx);
  if (host === undefined || !allowed.includes(host)) {
    throw new GateRefusal('forbidden', 'This Host is not served here.', {
      fix: `Address svc as ${allowed[0]}${ctx.listener === 'local' ? ' (or localhost with the same port)' : ''}.`,
    });
  }
}

/** The browser origins of this listener. */
export function ownOrigins(ctx: Pick<GateContext, 'listener' | 'origin'>): string[] {
  const origin = ctx.origin();
  if (ctx.listener === 'tunnel') return [origin];
  const port = new URL(origin).port;
  return [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`];
}

/** Spec §4: browser requests must come from the service's own origin (with the route's exceptions). */
function checkOrigin(request: FastifyRequest, ctx: GateContext, policy: OriginPolicy): void {
  if (policy === 'any') return;
  const origin = request.headers.origin;
  const site = request.headers['sec-fetch-site'];
  const foreignSite = site === 'cross-site' || site === 'same-site';
  const foreignOrigin = origin !== undefined && !ownOrigins(ctx).includes(origin);
  if (policy === 'navigation' && SAFE_METHODS.has(request.method) && request.headers['sec-fetch-mode'] !== 'cors' && request.headers['sec-fetch-mode'] !== 'websocket') {
    return; // a link followed from elsewhere; nothing changes on GET
  }
  if (foreignOrigin || foreignSite) {
    throw new GateRefusal('forbidden', 'Cross-origin requests are not allowed.', { fix: `Call svc from ${ctx.origin()} or from a non-browser client.` });
  }
}

/** The tunnel serves agent routes only: owner routes and the web app do not exist there (spec §5.2). */
function servedOnTunnel(request: FastifyRequest, access: Access): boolean {
  const url = request.routeOptions.url ?? '';
  return access !== 'owner' && access !== 'owner_bearer' && url !== OWNER_PREFIX && !url.startsWith(`${OWNER_PREFIX}/`);
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header);
  if (!match) throw unauthorized('The Authorization header must be `Bearer <credential>`.');
  return match[1];
}

const urlCredentialRefused = () =>
  new ApiError('validation_error', 'Credentials are not accepted in the URL.', { fix: 'Send the credential in the `Authorization: Bearer` header.' });

/**
 * The one credential a URL may carry: `?api_key=` on the WebSocket upgrade of a route that
 * declares `apiKeyInUpgradeUrl` (the AgentMail SDK's socket). Any credential-named parameter
 * anywhere else — another route, a plain request, another name, the name twice — is refused
 * before anything reads it. The key is never echoed: messages name the parameter, not its value.
 */
function apiKeyFromUrl(request: FastifyRequest, config: FastifyRequest['routeOptions']['config']): string | undefined {
  const query = request.query as Record<string, unknown> | undefined;
  const named = query ? URL_CREDENTIALS.filter((k) => k in query) : [];
  if (named.length === 0) return undefined;
  const allowed = config.apiKeyInUpgradeUrl === true && isUpgrade(request) && named.length === 1 && named[0] === 'api_key';
  if (!allowed || typeof query!.api_key !== 'string' || query!.api_key === '') throw urlCredentialRefused();
  return query!.api_key;
}

/**
 * Authorization header first (cookies ignored when present), then the bound browser session. A
 * credential from the URL (see apiKeyFromUrl) must be the header's own (the SDK sends both), or,
 * with no header, an API key: the owner token is never taken from a URL alone.
 */
function authenticate(request: FastifyRequest, ctx: GateContext, access: Access, urlKey?: string): Principal | null {
  const header = bearerToken(request);
  if (urlKey !== undefined && header !== undefined && !sameSecret(urlKey, header)) {
    throw unauthorized('`?api_key=` and the Authorization header name different credentials.');
  }
  const token = header ?? urlKey;
  if (token !== undefined) {
    const principal = resolveBearer(ctx.db, ctx.owner, token, { origin: ctx.origin(), audience: '/v0', listener: ctx.listener });
    if (!principal) throw unauthorized('The credential is not valid, or it was revoked or expired.');
    // The SDK copies its key into the URL beside the header; alone there, only an API key will do.
    if (urlKey !== undefined && header === undefined && principal.kind !== 'api_key') {
      throw new ApiError('unauthorized', 'Only an API key is accepted as `?api_key=`.', { fix: 'Send the owner token or an OAuth token in the `Authorization: Bearer` header.' });
    }
    if (principal.kind === 'api_key') markApiKeyUsed(ctx.db, principal.id);
    return principal;
  }
  return sessionPrincipal(request, ctx, access);
}

/**
 * An owner browser session: the cookie and the CSRF token it was issued with, together. The
 * token comes in `X-Svc-CSRF`, or for a WebSocket (which cannot set headers) as the `csrf.<token>`
 * subprotocol. A cookie without its token is no session: public routes see nobody, protected
 * routes answer 401 to a read and 403 to a write (spec §5.1's CSRF rule).
 */
function sessionPrincipal(request: FastifyRequest, ctx: GateContext, access: Access): Principal | null {
  const cookie = request.cookies[SESSION_COOKIE];
  if (!cookie || ctx.listener !== 'local') return null;
  const stored = ctx.owner.sessionPrincipal(cookie);
  if (!stored?.csrfToken) return null;
  // The token the browser holds is bound to this listener's origin and this process start (src/owner/session-binding.ts).
  const principal = { ...stored, csrfToken: sessionCsrfToken(stored.csrfToken, ctx.origin(), ctx.owner.epoch) };
  if (isUpgrade(request)) return sessionUpgrade(request, ctx, principal, access);
  const proof = request.headers[CSRF_HEADER];
  if (typeof proof === 'string' && sameSecret(proof, principal.csrfToken)) return principal;
  if (access === 'public') return null;
  const fix = 'Send the csrf_token from setup, login or login-link redemption in the X-Svc-CSRF header of every request.';
  // A read with the cookie alone is simply unauthenticated; a write keeps spec §5.1's CSRF refusal.
  if (SAFE_METHODS.has(request.method)) throw new ApiError('unauthorized', 'The session cookie alone is not a credential: X-Svc-CSRF is missing or wrong.', { fix });
  throw new ApiError('forbidden', 'The X-Svc-CSRF header is missing or wrong.', { fix });
}

const isUpgrade = (request: FastifyRequest) => request.headers.upgrade?.toLowerCase() === 'websocket';

/** The subprotocols a WebSocket upgrade offers, in order. */
export function offeredSubprotocols(request: FastifyRequest): string[] {
  return String(request.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim()).filter(Boolean);
}

/**
 * A session's WebSocket (docs/websocket.md): a browser cannot set headers on one, so the page
 * proves itself the way the spec says — its exact origin (a browser always sends Origin on a
 * WebSocket; a foreign one was refused already) and the CSRF token as the `csrf.<token>`
 * subprotocol. Either missing is 403 on a protected route: an upgrade with the cookie alone is
 * refused, never treated as anonymous (a public route sees nobody, as for any unproved cookie).
 */
function sessionUpgrade(request: FastifyRequest, ctx: GateContext, principal: Principal & { csrfToken: string }, access: Access): Principal | null {
  const origins = ownOrigins(ctx);
  const proof = offeredSubprotocols(request).find((p) => p.startsWith(CSRF_SUBPROTOCOL_PREFIX))?.slice(CSRF_SUBPROTOCOL_PREFIX.length);
  const ownPage = request.headers.origin !== undefined && origins.includes(request.headers.origin);
  if (ownPage && proof !== undefined && sameSecret(proof, principal.csrfToken)) return principal;
  if (access === 'public') return null;
  if (!ownPage) {
    throw new ApiError('forbidden', "A browser session may open a WebSocket only from the service's own origin.", { fix: `Open the WebSocket from a page served by ${origins[0]}.` });
  }
  throw new ApiError('forbidden', 'The `csrf.<csrf_token>` subprotocol is missing or the CSRF token is wrong.', {
    fix: 'Connect with new WebSocket(url, ["svc.events", "csrf." + csrf_token]) using the csrf_token from login or GET /v0/owner/status.',
  });
}

/** /mcp: a bearer only, for the /mcp audience; a refusal says where to get a token (spec §5.3). */
function mcpPrincipal(request: FastifyRequest, ctx: GateContext): Principal {
  const origin = ctx.origin();
  const challenge = { 'www-authenticate': mcpChallenge(origin) };
  const fix = `Send \`Authorization: Bearer <credential>\` with an API key or an OAuth access token issued for ${origin}/mcp.`;
  const match = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(request.headers.authorization ?? '');
  const principal = match ? resolveBearer(ctx.db, ctx.owner, match[1], { origin, audience: '/mcp', listener: ctx.listener }) : null;
  if (!principal) {
    const message = request.headers.authorization === undefined ? 'A bearer credential is required.' : 'The credential is not valid here, or it was revoked or expired.';
    throw new ApiError('unauthorized', message, { fix, headers: challenge });
  }
  if (principal.kind === 'api_key') markApiKeyUsed(ctx.db, principal.id);
  return principal;
}

function authorize(p: Principal | null, access: Access): void {
  if (access === 'public') return;
  if (!p) throw unauthorized();
  if (access === 'owner' && !isOwner(p)) throw ownerOnly();
  if (access === 'owner_bearer' && p.kind !== 'owner') {
    throw new ApiError('missing_permission', 'This route needs the owner bearer token.', { fix: 'Use the owner_token from connection.json (the local CLI does this for you).' });
  }
}
