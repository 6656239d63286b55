/**
 * The edge API: the home's only way into the edge. Every route needs `Authorization: Bearer
 * <api token>`. Errors are `{error, message}` with no internals. Routes are listed in docs/edge.md.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { pipeline, Transform } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { Type, type Static } from 'typebox';
import type { SealedBuffer } from './buffer.js';
import { API_BODY_LIMIT, BATCH_FETCH_MAX_BYTES, BATCH_MAX_KEYS, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, WAIT_MAX_MS } from './limits.js';
import { OBJECT_KEY_PATTERN } from './object-key.js';
import { registerOutboundRoutes, type OutboundApiContext } from './outbound-api.js';
import { EDGE_ERRORS, EdgeApiError } from './api-errors.js';
import { RoutingUpdate, type RoutingTable } from './routing.js';
import type { TlsFiles } from './smtp.js';
import type { EdgeIdentity } from './identity.js';
import { requestValidatorCompiler } from '../core/validation.js';
import { GarbageMeter } from '../core/gc.js';

/** The compact JWE media type (RFC 7516 §9.2.1). */
export const JOSE_MEDIA_TYPE = 'application/jose';
/** A v2 (binary) sealed object (src/edge/sealed.ts). */
export const SEALED_V2_MEDIA_TYPE = 'application/octet-stream';

const KeyParams = Type.Object({ key: Type.String({ pattern: OBJECT_KEY_PATTERN }) });
/** `after` is a key, or empty for "from the start". */
const After = Type.String({ pattern: `^(?:${OBJECT_KEY_PATTERN.slice(1, -1)})?$` });
const ListQuery = Type.Object(
  { after: Type.Optional(After), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LIST_MAX_LIMIT })) },
  { additionalProperties: false },
);
/** The body of the batch routes: distinct keys, at most BATCH_MAX_KEYS. */
const KeyBatch = Type.Object(
  { keys: Type.Array(Type.String({ pattern: OBJECT_KEY_PATTERN }), { minItems: 1, maxItems: BATCH_MAX_KEYS, uniqueItems: true }) },
  { additionalProperties: false },
);
const WaitQuery = Type.Object(
  { after: Type.Optional(After), timeout_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: WAIT_MAX_MS })) },
  { additionalProperties: false },
);

export interface EdgeApiContext {
  buffer: SealedBuffer;
  routing: RoutingTable;
  apiToken: string;
  tls?: TlsFiles;
  /** Reported with the routing (`edge`), for the home's domain plan. */
  identity?: () => EdgeIdentity;
  /** `POST /outbound`, `GET /outbound/{ref}`, `GET /events` (src/edge/outbound-api.ts). */
  outbound?: OutboundApiContext;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Compares digests, so neither the token's content nor its length leaks through timing. */
function tokenMatches(presented: string, expected: Buffer): boolean {
  return timingSafeEqual(digest(presented), expected);
}

function sendError(reply: FastifyReply, err: EdgeApiError): FastifyReply {
  if (err.code === 'unauthorized') reply.header('www-authenticate', 'Bearer realm="svc-edge"');
  return reply.code(EDGE_ERRORS[err.code]).type('application/json; charset=utf-8').send({ error: err.code, message: err.message });
}

/** fastify's own errors (validation, parsing, limits) mapped to the edge codes; anything else is hidden. */
function toEdgeError(err: unknown): EdgeApiError {
  if (err instanceof EdgeApiError) return err;
  const e = err as { code?: string; validation?: unknown; validationContext?: string; message?: string; statusCode?: number };
  if (e.validation) return new EdgeApiError('validation_error', `Invalid ${e.validationContext ?? 'request'}: ${e.message ?? 'invalid input'}`);
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new EdgeApiError('payload_too_large', `The request body is larger than ${API_BODY_LIMIT} bytes.`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new EdgeApiError('unsupported_media_type', 'The request body must be JSON (Content-Type: application/json).');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new EdgeApiError('validation_error', 'The request body is not valid JSON.');
  }
  if (e.code === 'FST_ERR_BAD_URL' || e.statusCode === 400) return new EdgeApiError('validation_error', 'The request is malformed.');
  return new EdgeApiError('internal_error', 'An internal error occurred.');
}

export async function buildEdgeApi(ctx: EdgeApiContext): Promise<FastifyInstance> {
  const expected = digest(ctx.apiToken);
  const tls = ctx.tls;
  const app = Fastify({
    logger: false,
    bodyLimit: API_BODY_LIMIT,
    trustProxy: false,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
    // HTTPS when the edge has a certificate (production); the typed instance stays the HTTP one.
    serverFactory: (handler) => (tls ? https.createServer({ key: tls.key, cert: tls.cert }, handler) : http.createServer(handler)) as http.Server,
  });

  // The home's Ajv setup (src/core/validation.ts), so a schema means the same on both sides.
  app.setValidatorCompiler(requestValidatorCompiler());
  app.setErrorHandler((err, _request, reply) => sendError(reply, toEdgeError(err)));
  app.setNotFoundHandler((request, reply) => sendError(reply, new EdgeApiError('not_found', `There is no route ${request.method} ${request.url.split('?')[0]}.`)));

  // Every path, known or not, needs the token: an unauthenticated caller learns nothing.
  app.addHook('onRequest', async (request) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    if (!match || !tokenMatches(match[1], expected)) throw new EdgeApiError('unauthorized', 'A valid edge API token is required (Authorization: Bearer <token>).');
  });
  app.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    reply.header('x-content-type-options', 'nosniff');
  });

  const { buffer, routing } = ctx;
  // The home reads `edge` from the routing answer it already gets every push (src/edge/identity.ts).
  const withIdentity = <T extends object>(answer: T) => (ctx.identity ? { ...answer, edge: ctx.identity() } : answer);

  app.get<{ Querystring: Static<typeof ListQuery> }>('/objects', { schema: { querystring: ListQuery } }, async (request) => {
    const page = buffer.listObjects(request.query.after || null, request.query.limit ?? LIST_DEFAULT_LIMIT);
    return { objects: page.items, count: page.items.length, has_more: page.hasMore };
  });

  app.get<{ Params: Static<typeof KeyParams> }>('/objects/:key', { schema: { params: KeyParams } }, async (request, reply) => {
    const object = await buffer.openObjectStream(request.params.key);
    if (object === null) throw new EdgeApiError('not_found', 'There is no object with this key (it may have been deleted).');
    // Each chunk read from the file is dead once written; the meter frees them every few MiB
    // instead of letting a large object's worth wait for V8 (issue 16, finding 9).
    const meter = new GarbageMeter();
    const metered = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        meter.add(chunk.length);
        done(null, chunk);
      },
    });
    // A read error destroys `metered`, which ends the response; nothing else to do with it here.
    const body = pipeline(object.stream, metered, () => {});
    return reply.type(object.binary ? SEALED_V2_MEDIA_TYPE : JOSE_MEDIA_TYPE).header('content-length', object.size).send(body);
  });

  app.delete<{ Params: Static<typeof KeyParams> }>('/objects/:key', { schema: { params: KeyParams } }, async (request, reply) => {
    await buffer.deleteObject(request.params.key);
    return reply.code(204).send();
  });

  // Batch forms of the two routes above, so the home moves a page of mail in two requests
  // instead of two per message. Keys without an object are reported, never an error.
  app.post<{ Body: Static<typeof KeyBatch> }>('/objects/fetch', { schema: { body: KeyBatch } }, async (request) => {
    const { objects, missing, deferred, separate } = await buffer.readObjects(request.body.keys, BATCH_FETCH_MAX_BYTES);
    return { objects, missing, deferred, separate };
  });

  app.post<{ Body: Static<typeof KeyBatch> }>('/objects/delete', { schema: { body: KeyBatch } }, async (request) => {
    return buffer.deleteObjects(request.body.keys);
  });

  app.get<{ Querystring: Static<typeof ListQuery> }>('/queue', { schema: { querystring: ListQuery } }, async (request) => {
    const page = buffer.listEntries(request.query.after || null, request.query.limit ?? LIST_DEFAULT_LIMIT);
    return { entries: page.items, count: page.items.length, has_more: page.hasMore };
  });

  app.get<{ Params: Static<typeof KeyParams> }>('/queue/:key', { schema: { params: KeyParams } }, async (request) => {
    const entry = buffer.entry(request.params.key);
    if (!entry) throw new EdgeApiError('not_found', 'There is no queue entry with this key.');
    return entry;
  });

  app.delete<{ Params: Static<typeof KeyParams> }>('/queue/:key', { schema: { params: KeyParams } }, async (request, reply) => {
    await buffer.deleteEntry(request.params.key);
    return reply.code(204).send();
  });

  app.get('/routing', async () => {
    const current = routing.current;
    if (!current) throw new EdgeApiError('not_found', 'No routing has been pushed to this edge yet.');
    return withIdentity(current);
  });

  app.put<{ Body: Static<typeof RoutingUpdate> }>(
    '/routing',
    {
      schema: { body: RoutingUpdate },
      // Named before schema validation so the message says what went wrong, not just "additional property".
      preValidation: async (request) => {
        const key = (request.body as { recipient_public_key?: Record<string, unknown> } | undefined)?.recipient_public_key;
        if (key && typeof key === 'object' && 'd' in key) {
          throw new EdgeApiError('validation_error', 'recipient_public_key must be the public half only; the private key never leaves the home.');
        }
      },
    },
    async (request) => {
      let stored: Awaited<ReturnType<typeof routing.replace>>;
      try {
        stored = await routing.replace(request.body);
      } catch {
        throw new EdgeApiError('service_unavailable', 'The routing could not be stored on the edge (disk full or not writable).');
      }
      return withIdentity(stored);
    },
  );

  app.get<{ Querystring: Static<typeof WaitQuery> }>('/wait', { schema: { querystring: WaitQuery } }, async (request, reply) => {
    const gone = new Promise<void>((resolve) => reply.raw.once('close', () => resolve()));
    const available = await buffer.waitForNewer(request.query.after || null, request.query.timeout_ms ?? WAIT_MAX_MS, gone);
    return { available, latest: buffer.latest };
  });

  if (ctx.outbound) registerOutboundRoutes(app, ctx.outbound);

  return app;
}
