/**
 * The outbound routes of the edge API (docs/edge.md "Outbound"): `POST /outbound` queues a signed
 * message durably before answering and is idempotent on the home's `ref`; `GET /outbound/{ref}`
 * answers its status (for recovery after a crash); `GET /events` pages the delivery reports.
 * Registered by `buildEdgeApi`, behind the same bearer token and error handler.
 */
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { EdgeApiError } from './api-errors.js';
import { EVENTS_DEFAULT_LIMIT, EVENTS_MAX_LIMIT, MAX_OUTBOUND_RECIPIENTS, OUTBOUND_REF_PATTERN } from './limits.js';
import { jobStatus, type OutboundStore } from './outbound-store.js';
import type { OutboundRelay } from './relay.js';
import { REPORT_ID_PATTERN, type ReportLog } from './reports.js';

export interface OutboundApiContext {
  store: OutboundStore;
  reports: ReportLog;
  relay: OutboundRelay;
  /** The largest message accepted (decoded `raw`), the same limit as inbound. */
  maxMessageBytes: number;
}

const RefParams = Type.Object({ ref: Type.String({ pattern: OUTBOUND_REF_PATTERN }) });
const EventsQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ pattern: `^(?:${REPORT_ID_PATTERN.slice(1, -1)})?$` })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: EVENTS_MAX_LIMIT })),
  },
  { additionalProperties: false },
);

const REF = new RegExp(OUTBOUND_REF_PATTERN);
/** A bare address: no display name or brackets, a host-name domain. */
const ADDRESS = /^[^\s@<>"(),;:\\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;
const MAX_ADDRESS_LENGTH = 320;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** The first line of an RFC 5322 message is a header field. */
const HEADER_FIELD = /^[!-9;-~]+:/;

export interface ValidOutbound {
  ref: string;
  mailFrom: string;
  recipients: string[];
  raw: Buffer;
}

function invalid(message: string): EdgeApiError {
  return new EdgeApiError('validation_error', message);
}

function isAddress(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_ADDRESS_LENGTH && ADDRESS.test(value);
}

/** Checks a `POST /outbound` body field by field, so the message names what is wrong. Unknown fields are ignored. */
export function validateOutbound(body: unknown, maxMessageBytes: number): ValidOutbound {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('The body must be a JSON object {ref, mail_from, recipients, raw}.');
  const b = body as Record<string, unknown>;
  if (typeof b.ref !== 'string' || !REF.test(b.ref)) throw invalid('ref must be 1 to 128 characters of A-Z, a-z, 0-9, ".", "_" and "-".');
  if (typeof b.mail_from !== 'string' || (b.mail_from !== '' && !isAddress(b.mail_from))) {
    throw invalid('mail_from must be the envelope sender as a bare address (user@example.com), or "" for the null sender.');
  }
  if (!Array.isArray(b.recipients) || b.recipients.length < 1 || b.recipients.length > MAX_OUTBOUND_RECIPIENTS) {
    throw invalid(`recipients must be an array of 1 to ${MAX_OUTBOUND_RECIPIENTS} addresses.`);
  }
  const recipients: string[] = [];
  const seen = new Set<string>();
  for (const [i, r] of b.recipients.entries()) {
    if (!isAddress(r)) throw invalid(`recipients[${i}] must be a bare address like user@example.com (no display name or angle brackets).`);
    // The same mailbox twice gets one copy.
    if (!seen.has(r.toLowerCase())) recipients.push(r);
    seen.add(r.toLowerCase());
  }
  if (typeof b.raw !== 'string' || b.raw.length === 0) throw invalid('raw must be the message as base64 (the full RFC 5322 message, already signed).');
  const base64 = b.raw.replace(/\r?\n/g, '');
  if (base64.length % 4 !== 0 || !BASE64.test(base64)) throw invalid('raw is not valid base64 (standard alphabet with padding).');
  const raw = Buffer.from(base64, 'base64');
  if (raw.length > maxMessageBytes) throw new EdgeApiError('payload_too_large', `The message is larger than ${maxMessageBytes} bytes.`);
  if (raw.length === 0 || !HEADER_FIELD.test(raw.subarray(0, 1000).toString('latin1'))) {
    throw invalid('raw must decode to an RFC 5322 message (header fields, a blank line, the body).');
  }
  return { ref: b.ref, mailFrom: b.mail_from, recipients, raw };
}

export function registerOutboundRoutes(app: FastifyInstance, ctx: OutboundApiContext): void {
  const { store, reports, relay } = ctx;
  // base64 grows the message by a third; the JSON around it is small.
  const bodyLimit = Math.ceil(ctx.maxMessageBytes / 3) * 4 + 64 * 1024;

  app.post('/outbound', { bodyLimit }, async (request, reply) => {
    const input = validateOutbound(request.body, ctx.maxMessageBytes);
    let result: Awaited<ReturnType<OutboundStore['create']>>;
    try {
      result = await store.create(input);
    } catch {
      throw new EdgeApiError('service_unavailable', 'The message could not be queued on the edge (disk full or not writable); try again.');
    }
    if (!result.created) return reply.code(200).send(jobStatus(result.job));
    // A snapshot before the relay may touch the job: a new job is answered as queued.
    const answer = jobStatus(result.job);
    relay.wake();
    return reply.code(202).send(answer);
  });

  app.get<{ Params: Static<typeof RefParams> }>('/outbound/:ref', { schema: { params: RefParams } }, async (request) => {
    const job = store.get(request.params.ref);
    if (!job) throw new EdgeApiError('not_found', 'There is no outbound job with this ref (never queued here, or finished more than 7 days ago).');
    return jobStatus(job);
  });

  // How many reports were refused since the edge started, by reason (forged or untied reports).
  app.get('/reports/dropped', async () => ({ dropped: relay.droppedReports() }));

  app.get<{ Querystring: Static<typeof EventsQuery> }>('/events', { schema: { querystring: EventsQuery } }, async (request) => {
    return reports.page(request.query.after || null, request.query.limit ?? EVENTS_DEFAULT_LIMIT);
  });
}
