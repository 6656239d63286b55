/**
 * One webhook request (ARCHITECTURE §8): the event object as the JSON body, signed with the
 * Standard Webhooks scheme and the same three values under the svix-* names. No redirects are
 * followed, the whole request is bounded by a timeout, and deliveries of agent-created webhooks
 * connect only to public addresses. Nothing here logs; errors become short codes.
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { guardedLookup, isInternalLiteral, InternalAddressError } from './target.js';

export const DELIVERY_TIMEOUT_MS = 10_000;

/** The signature header value: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export interface DeliveryRequest {
  url: string;
  secret: string;
  eventId: string;
  body: string;
  customHeaders: { name: string; value: string }[];
  /** Agent-created webhooks may only reach public addresses. */
  guarded: boolean;
  timeoutMs: number;
  signal: AbortSignal;
}

/** `ok`, or why it failed: `http_<status>`, `timeout`, `connection_refused`, ... */
export type DeliveryOutcome = { ok: true } | { ok: false; code: string };

// Keep-alive pools: one for the owner's webhooks, one whose every new connection is checked.
const agents = {
  open: { http: new http.Agent({ keepAlive: true, maxSockets: 16 }), https: new https.Agent({ keepAlive: true, maxSockets: 16 }) },
  guarded: {
    http: new http.Agent({ keepAlive: true, maxSockets: 16, lookup: guardedLookup }),
    https: new https.Agent({ keepAlive: true, maxSockets: 16, lookup: guardedLookup }),
  },
};

function errorCode(err: unknown): string {
  if (err instanceof InternalAddressError) return 'address_not_allowed';
  const code = (err as { code?: string }).code ?? '';
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection_refused';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'connection_reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return 'dns_failed';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'unreachable';
    case 'ETIMEDOUT':
      return 'timeout';
  }
  if (code.startsWith('ERR_TLS') || code.startsWith('CERT_') || code.includes('SELF_SIGNED') || code.startsWith('UNABLE_TO') || code.startsWith('ERR_SSL')) return 'tls_error';
  return 'network_error';
}

export function deliver(req: DeliveryRequest): Promise<DeliveryOutcome> {
  const url = new URL(req.url);
  if (req.guarded && isInternalLiteral(url)) return Promise.resolve({ ok: false, code: 'address_not_allowed' });
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = signWebhook(req.secret, req.eventId, timestamp, req.body);
  const headers: Record<string, string> = {};
  for (const h of req.customHeaders) headers[h.name] = h.value;
  Object.assign(headers, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(req.body)),
    'user-agent': 'svc-webhooks/1',
    'webhook-id': req.eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature,
    'svix-id': req.eventId,
    'svix-timestamp': String(timestamp),
    'svix-signature': signature,
  });
  const isHttps = url.protocol === 'https:';
  const pool = req.guarded ? agents.guarded : agents.open;
  return new Promise<DeliveryOutcome>((resolve) => {
    let settled = false;
    const finish = (outcome: DeliveryOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.signal.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    const request = (isHttps ? https : http).request(url, { method: 'POST', headers, agent: isHttps ? pool.https : pool.http }, (res) => {
      const status = res.statusCode ?? 0;
      // Drain the answer so the connection can be reused; its content is never read.
      res.on('error', () => finish({ ok: false, code: 'connection_reset' }));
      res.on('end', () => finish(status >= 200 && status < 300 ? { ok: true } : { ok: false, code: `http_${status}` }));
      res.resume();
    });
    const timer = setTimeout(() => {
      finish({ ok: false, code: 'timeout' });
      request.destroy();
    }, req.timeoutMs);
    const onAbort = () => {
      finish({ ok: false, code: 'stopped' });
      request.destroy();
    };
    req.signal.addEventListener('abort', onAbort);
    request.on('error', (err) => finish({ ok: false, code: errorCode(err) }));
    request.end(req.body);
  });
}
