/**
 * The MCP endpoint `/mcp` (spec §1.8, §4.14, §5.3 step 1): Streamable HTTP in stateless mode —
 * every POST carries its own bearer and gets a fresh server and transport bound to that caller,
 * so a revoked key or token stops working on its next request and nothing is kept between
 * requests. Answers are plain JSON (no SSE stream); GET and DELETE, which only serve sessions
 * and server-initiated streams, answer 405 after authentication.
 *
 * Credentials: `Authorization: Bearer` with an API key, the owner bearer (loopback listener
 * only) or an OAuth access token issued for `<origin>/mcp`. Cookies are never read here, so a
 * browser cannot act through /mcp with the owner's session; requests whose `Origin` is not the
 * listener's own are refused (DNS rebinding). There is no CORS: browsers are not MCP clients.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../http/app.js';
import { resolveBearer } from '../http/credentials.js';
import { ApiError, unauthorized } from '../http/errors.js';
import type { Principal } from '../http/principal.js';
import { markApiKeyUsed } from '../mail/api-keys.js';

/**
 * The MCP SDK and its schema library take about half a second to load: they are loaded on the
 * first /mcp request, not at start-up, so a service nobody reaches over MCP starts faster and
 * stays smaller.
 */
let mcpModules: Promise<[typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('../mcp/server.js')]> | null = null;
const loadMcp = () => (mcpModules ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('../mcp/server.js')]));

export const MCP_PATH = '/mcp';

/** `WWW-Authenticate` of spec §5.3 step 1: where a client discovers how to get a token. */
export const mcpChallenge = (origin: string) => `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp", scope="svc"`;

const JSON_TYPE = 'application/json; charset=utf-8';

function refuse(reply: FastifyReply, err: ApiError, headers: Record<string, string> = {}): FastifyReply {
  return reply.code(err.status).headers({ ...headers, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }).type(JSON_TYPE).send(err.toBody());
}

/** Browsers send Origin on POST; only the listener's own origin may call (as on /v0). */
function foreignOrigin(request: FastifyRequest, ownOrigin: string): boolean {
  const origin = request.headers.origin;
  const site = request.headers['sec-fetch-site'];
  const allowed = [ownOrigin, ownOrigin.replace('//127.0.0.1:', '//localhost:')];
  return (origin !== undefined && !allowed.includes(origin)) || site === 'cross-site' || site === 'same-site';
}

/** The caller, from the bearer alone; null when absent or not valid here. */
function bearerPrincipal(request: FastifyRequest, ctx: AppContext): Principal | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  if (!match) return null;
  const principal = resolveBearer(ctx.db, ctx.owner, match[1], { origin: ctx.origin(), audience: '/mcp', listener: ctx.listener });
  if (principal?.kind === 'api_key') markApiKeyUsed(ctx.db, principal.id);
  return principal;
}

export const mcpRoutes: FastifyPluginAsync = async (app) => {
  const ctx = app.svc;

  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: MCP_PATH,
    // Before the body is read: a refused caller never gets its body parsed.
    onRequest: async (request, reply) => {
      const origin = ctx.origin();
      if (foreignOrigin(request, origin)) {
        return refuse(reply, new ApiError('forbidden', 'Cross-origin requests to /mcp are not allowed.', { fix: `Call /mcp from an MCP client, not from a web page; the only origin allowed is ${origin}.` }));
      }
      request.principal = bearerPrincipal(request, ctx);
      if (!request.principal) {
        const message = request.headers.authorization === undefined ? 'A bearer credential is required.' : 'The credential is not valid here, or it was revoked or expired.';
        const err = unauthorized(message);
        return refuse(reply, new ApiError('unauthorized', message, { fix: `${err.fix} An OAuth access token must be issued for ${origin}/mcp.` }), { 'www-authenticate': mcpChallenge(origin) });
      }
    },
    handler: async (request, reply) => {
      if (request.method !== 'POST') {
        // Stateless: no sessions to end and no server-initiated stream to open.
        return reply
          .code(405)
          .header('allow', 'POST')
          .type(JSON_TYPE)
          .send({ jsonrpc: '2.0', error: { code: -32000, message: `${request.method} is not supported: this MCP endpoint is stateless; send requests with POST.` }, id: null });
      }
      const principal = request.principal!;
      const [{ StreamableHTTPServerTransport }, { mcpServer }] = await loadMcp();
      reply.hijack();
      const res = reply.raw;
      res.setHeader('cache-control', 'no-store');
      res.setHeader('x-content-type-options', 'nosniff');
      const server = mcpServer({ svc: ctx, principal }, (tool, err) =>
        request.log.error({ tool, err_name: err instanceof Error ? err.name : typeof err }, 'mcp tool failed'),
      );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(request.raw, res, request.body);
      } catch {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': JSON_TYPE });
          res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error.' }, id: null }));
        }
      }
    },
  });
};
