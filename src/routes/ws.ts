/**
 * The event WebSocket, `GET /v0/ws` (spec §4.10, §6.4), and the same stream in the AgentMail
 * SDK's protocol at `GET /v0` (docs/websocket.md, "The AgentMail SDK's socket"). Everything that
 * can be refused is refused with an HTTP error before the upgrade: credential (401), and for a
 * browser session its origin and CSRF subprotocol (403), all in the gate (src/auth/gate.ts), like
 * every other route; then here the `svc.events` subprotocol of a browser session (403), read
 * permission (403), and an unknown `?last_event_id=` (400). After the upgrade the socket belongs
 * to the event hub.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { Type, type Static } from 'typebox';
import { ApiError } from '../core/errors.js';
import { offeredSubprotocols } from '../auth/gate.js';
import { latestSeq, seqOfEventId } from '../events/log.js';
import { EventHub, eventStreamTiming, type StreamDialect, type UrlResume } from '../events/hub.js';
import { STREAM_READ_PERMISSIONS, canReadEventStream } from '../events/visibility.js';

/** The subprotocol the server selects; browsers also offer `csrf.<csrf_token>` (never selected). */
export const EVENTS_SUBPROTOCOL = 'svc.events';

const LastEventId = Type.String({ minLength: 1, maxLength: 128 });
const WsQuery = Type.Object({ last_event_id: Type.Optional(LastEventId) }, { additionalProperties: false });
type WsQuery = Static<typeof WsQuery>;
/** The SDK's socket URL: its `?api_key=` (read by the gate, for this upgrade only) and svc's resume point. */
const AgentMailSocketQuery = Type.Object(
  { api_key: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })), last_event_id: Type.Optional(LastEventId) },
  { additionalProperties: false },
);

/**
 * A browser's socket (its origin and CSRF subprotocol already proved in the gate) must also ask
 * for the event protocol by name: a browser fails a handshake whose offered protocols were all
 * declined, so refusing here gives the page a status to read instead.
 */
function requireEventsSubprotocol(request: FastifyRequest): void {
  if (!offeredSubprotocols(request).includes(EVENTS_SUBPROTOCOL)) {
    throw new ApiError('forbidden', 'The subprotocol `svc.events` is missing.', {
      fix: 'Connect with new WebSocket(url, ["svc.events", "csrf." + csrf_token]) using the csrf_token from login or GET /v0/owner/status.',
    });
  }
}

export const wsRoutes: FastifyPluginAsync = async (app) => {
  const { db, bus } = app.svc;
  const hub = new EventHub(db, bus, eventStreamTiming(process.env));
  // Close the sockets before the HTTP server waits for its connections to end.
  app.addHook('preClose', () => hub.close());

  /** URL resume points checked before the upgrade, handed to the socket handler. */
  const urlResumes = new WeakMap<FastifyRequest, UrlResume>();
  /**
   * The log head before the upgrade answers: a stream without a resume point starts after it. Read
   * later, in the socket handler, an event a client commits as soon as it sees the socket open
   * could fall before the start and never reach it.
   */
  const headsAtOpen = new WeakMap<FastifyRequest, number>();

  /** The checks before either socket opens, and what the socket handler needs from them. */
  const beforeUpgrade = async (request: FastifyRequest<{ Querystring: WsQuery }>) => {
    const principal = request.principal!;
    if (principal.kind === 'session' && request.ws) requireEventsSubprotocol(request);
    if (!canReadEventStream(principal)) {
      throw new ApiError('missing_permission', `The event stream needs \`${STREAM_READ_PERMISSIONS.join('` or `')}\`.`, {
        fix: 'Ask the owner to grant message_read or draft_read to this key; webhook permissions alone are not enough.',
      });
    }
    const eventId = request.query.last_event_id;
    if (eventId !== undefined) {
      const seq = seqOfEventId(db, eventId);
      if (seq === null) {
        throw new ApiError('validation_error', 'The last_event_id is unknown or has expired from the event log.', {
          fix: 'Events are kept 30 days. Reconnect without last_event_id and read current state over REST.',
        });
      }
      urlResumes.set(request, { eventId, seq });
    }
    headsAtOpen.set(request, latestSeq(db));
  };
  const accept = (dialect: StreamDialect) => (socket: WebSocket, request: FastifyRequest) => {
    hub.accept(socket, request.principal!, urlResumes.get(request) ?? null, headsAtOpen.get(request) ?? latestSeq(db), dialect);
  };

  app.route<{ Querystring: WsQuery }>({
    method: 'GET',
    url: '/ws',
    config: { auth: 'agent' },
    schema: { querystring: WsQuery },
    preHandler: beforeUpgrade,
    // A plain GET (no upgrade) after all checks passed: there is no REST route for the event log.
    handler: async () => {
      throw new ApiError('not_found', 'GET /v0/ws only upgrades to a WebSocket; there is no REST route for the event log.', {
        fix: 'Connect with a WebSocket client and send a subscribe frame.',
      });
    },
    wsHandler: accept('svc'),
  });

  // The AgentMail SDK's `client.websockets.connect()` opens `<baseUrl>/v0`, with the key in the
  // Authorization header, or as `?api_key=` when given to connect() (the one URL credential svc
  // takes, for this upgrade only: docs/security.md). The prefix alone, so `/v0/` is no route.
  app.route<{ Querystring: Static<typeof AgentMailSocketQuery> }>({
    method: 'GET',
    url: '',
    config: { auth: 'agent', apiKeyInUpgradeUrl: true },
    schema: { querystring: AgentMailSocketQuery },
    preHandler: beforeUpgrade,
    handler: async () => {
      throw new ApiError('not_found', 'GET /v0 only upgrades to a WebSocket (the AgentMail SDK\'s event socket).', {
        fix: 'Connect with client.websockets.connect() from the agentmail SDK, or any WebSocket client, and send a subscribe frame.',
      });
    },
    wsHandler: accept('agentmail'),
  });
};
