/**
 * The MCP endpoint `/mcp` (spec §1.8, §4.14, §5.3 step 1): Streamable HTTP in stateless mode —
 * every POST carries its own bearer and gets a fresh server and transport bound to that caller,
 * so a revoked key or token stops working on its next request and nothing is kept between
 * requests. Answers are plain JSON (no SSE stream); GET and DELETE, which only serve sessions
 * and server-initiated streams, answer 405 after authentication.
 *
 * Credentials (checked by the gate, src/auth/gate.ts, access `mcp`): `Authorization: Bearer` with
 * an API key, the owner bearer (loopback listener only) or an OAuth access token issued for
 * `<origin>/mcp`. Cookies are never read here, so a browser cannot act through /mcp with the
 * owner's session; a foreign `Origin` or `Host` is refused (DNS rebinding). There is no CORS:
 * browsers are not MCP clients.
 */
import type { FastifyPluginAsync } from 'fastify';
import { SECURITY_HEADERS } from '../auth/gate.js';

/**
 * The MCP SDK and its schema library take about half a second to load: they are loaded on the
 * first /mcp request, not at start-up, so a service nobody reaches over MCP starts faster and
 * stays smaller.
 */
let mcpModules: Promise<[typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('../mcp/server.js')]> | null = null;
const loadMcp = () => (mcpModules ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('../mcp/server.js')]));

export const MCP_PATH = '/mcp';

const JSON_TYPE = 'application/json; charset=utf-8';

export const mcpRoutes: FastifyPluginAsync = async (app) => {
  const ctx = app.svc;

  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: MCP_PATH,
    // The gate authenticates before the body is read: a refused caller never gets its body parsed.
    config: { auth: 'mcp' },
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
      // A hijacked reply skips fastify's onSend hooks: the gate's headers are set here.
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
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
