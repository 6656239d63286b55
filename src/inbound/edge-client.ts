/**
 * The home's one client for the edge API (ARCHITECTURE §6; routes in docs/edge.md): inbound
 * objects and queue entries, the long-poll, routing, the outbound relay and delivery reports.
 * Every call goes through `call`, so there is one error mapping — a failed connection, a
 * timeout or an unexpected status is `EdgeUnavailable` (retry later; `status` says which) —
 * and one timeout policy (EDGE_TIMEOUT_MS). Nothing here logs: bodies hold sealed mail.
 */
import { GarbageMeter } from '../core/gc.js';
import type { RoutingUpdate } from '../edge/routing.js';
import type { QueueEntry } from '../edge/buffer.js';
import { BATCH_MAX_KEYS } from '../edge/limits.js';
import { readEdgeIdentity, type EdgeIdentity } from '../edge/identity.js';

/** How long one edge request may take, by kind. */
export const EDGE_TIMEOUT_MS = {
  /** Any request that carries no message: the edge answers from its disk in milliseconds. */
  request: 30_000,
  /** A message handed to the relay (up to the size limit, base64 in JSON) over a slow uplink. */
  upload: 60_000,
  /** Added to a long-poll's own wait, so the edge's empty answer arrives before we give up. */
  longPollGrace: 10_000,
} as const;

/** What an edge that receives only answers the relay routes with (docs/edge.md "The Cloudflare edge"). */
export const NOT_RELAYING = 501;
/** Connection failures that happen before any byte of the request is sent. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);
/**
 * Answers that say the edge took nothing: the request never passed its authentication or routing,
 * or the edge does not relay at all (501, the Cloudflare Email Worker: it receives only).
 */
const REFUSED_UNREAD = new Set([401, 403, 404, NOT_RELAYING]);

/** The edge could not be reached (`status` null) or answered with an error status: retry later. */
export class EdgeUnavailable extends Error {
  /** Whether the edge certainly took nothing of this request (no connection, or refused unread): a send may go elsewhere. */
  readonly notSent: boolean;
  constructor(
    message: string,
    readonly status: number | null = null,
    notConnected = false,
  ) {
    super(message);
    this.notSent = notConnected || (status !== null && REFUSED_UNREAD.has(status));
  }
}

/** Our code for an edge failure, for health and logs: never the edge's text or a URL. */
export function edgeErrorCode(err: unknown): string {
  if (!(err instanceof EdgeUnavailable)) return 'edge_failed';
  return err.status === null ? 'edge_unreachable' : `edge_status_${err.status}`;
}

/** The body of `POST /outbound` (docs/edge.md): the message base64-encoded, idempotent on `ref`. */
export interface OutboundRequest {
  ref: string;
  mail_from: string;
  recipients: string[];
  raw: string;
}

/** What the edge knows of an outbound ref (`GET /outbound/{ref}`). */
export type EdgeOutboundStatus = { ref: string; status: string; recipients: { address: string; status: string; code?: number; message?: string }[] };

/** One page of delivery reports (`GET /events`); `next` is the cursor to ask with next time. */
export interface DeliveryReportPage<Report> {
  events: Report[];
  next: string;
}

/** What the inbound pipeline needs of an edge: EdgeClient over HTTP, or LocalEdgeClient for the built-in edge of the same process. */
export type EdgeObjects = Pick<EdgeClient, 'listObjects' | 'wait' | 'fetchObjects' | 'deleteObjects' | 'getObjectBytes' | 'deleteObject' | 'queueEntry'>;

export class EdgeClient {
  constructor(
    private readonly url: string,
    private readonly token: string,
  ) {}

  /**
   * One request. Answers with these statuses are handed back: 2xx, 404 when `allow404` (as
   * null), and any in `answers`; everything else, and no answer at all, is EdgeUnavailable.
   */
  private async call(
    method: string,
    path: string,
    opts: { body?: unknown; timeoutMs?: number; signal?: AbortSignal; allow404?: boolean; answers?: readonly number[] } = {},
  ): Promise<Response | null> {
    const signals = [AbortSignal.timeout(opts.timeoutMs ?? EDGE_TIMEOUT_MS.request), ...(opts.signal ? [opts.signal] : [])];
    let res: Response;
    try {
      res = await fetch(this.url + path, {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
        signal: AbortSignal.any(signals),
      });
    } catch (err) {
      const code = (err as { cause?: { code?: unknown } }).cause?.code;
      throw new EdgeUnavailable(`edge ${method} ${path.split('?')[0]} failed to connect`, null, typeof code === 'string' && NOT_CONNECTED.has(code));
    }
    if (opts.answers?.includes(res.status)) return res;
    if (res.status === 404 && opts.allow404) {
      await res.body?.cancel().catch(() => {});
      return null;
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      throw new EdgeUnavailable(`edge ${method} ${path.split('?')[0]} answered ${res.status}`, res.status);
    }
    return res;
  }

  /** Whether the edge answers its API with this token (`svc doctor`): a one-object listing, bounded by `timeoutMs`. */
  async probe(timeoutMs: number): Promise<void> {
    const res = await this.call('GET', '/objects?limit=1', { timeoutMs });
    await res?.body?.cancel().catch(() => {});
  }

  async listObjects(after: string | null, limit: number): Promise<{ objects: { key: string; size: number }[]; has_more: boolean }> {
    const res = await this.call('GET', `/objects?limit=${limit}${after ? `&after=${after}` : ''}`);
    return (await res!.json()) as { objects: { key: string; size: number }[]; has_more: boolean };
  }

  /** Whether the edge still holds the object (its body is not read). */
  async hasObject(key: string): Promise<boolean> {
    const res = await this.call('GET', `/objects/${key}`, { allow404: true });
    await res?.body?.cancel();
    return res !== null;
  }

  /** The sealed object as bytes (no string copy of a large object), or null when it is gone. */
  async getObjectBytes(key: string): Promise<Uint8Array | null> {
    const res = await this.call('GET', `/objects/${key}`, { allow404: true });
    return res ? readBody(res) : null;
  }

  async deleteObject(key: string): Promise<void> {
    await this.call('DELETE', `/objects/${key}`);
  }

  /**
   * Several sealed objects in one request (`POST /objects/fetch`). Keys the edge left out of this
   * answer for size are fetched with further requests; keys without an object come back in
   * `missing`. An edge without the batch route (older release) is asked one key at a time.
   */
  async fetchObjects(keys: string[]): Promise<{ objects: Map<string, string | Uint8Array>; missing: string[] }> {
    const objects = new Map<string, string | Uint8Array>();
    const missing: string[] = [];
    for (let i = 0; i < keys.length; i += BATCH_MAX_KEYS) {
      const part = await this.fetchSome(keys.slice(i, i + BATCH_MAX_KEYS));
      for (const [key, jwe] of part.objects) objects.set(key, jwe);
      missing.push(...part.missing);
    }
    return { objects, missing };
  }

  private async fetchSome(keys: string[]): Promise<{ objects: Map<string, string | Uint8Array>; missing: string[] }> {
    const objects = new Map<string, string | Uint8Array>();
    const missing: string[] = [];
    let todo = keys;
    while (todo.length > 0) {
      const res = await this.call('POST', '/objects/fetch', { body: { keys: todo }, allow404: true });
      if (!res) {
        for (const key of todo) {
          const sealed = await this.getObjectBytes(key);
          if (sealed === null) missing.push(key);
          else objects.set(key, sealed);
        }
        break;
      }
      const page = (await res.json()) as { objects: { key: string; jwe: string }[]; missing: string[]; deferred: string[]; separate?: string[] };
      for (const o of page.objects) objects.set(o.key, o.jwe);
      missing.push(...page.missing);
      // Binary (v2) objects do not travel inside JSON: each is fetched on its own.
      for (const key of page.separate ?? []) {
        const bytes = await this.getObjectBytes(key);
        if (bytes === null) missing.push(key);
        else objects.set(key, bytes);
      }
      // The edge always answers at least one object when any exists, so this shrinks every round.
      todo = page.objects.length > 0 ? page.deferred : [];
    }
    return { objects, missing };
  }

  /** Deletes several objects with their queue entries in one request (`POST /objects/delete`); absent keys are fine. */
  async deleteObjects(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += BATCH_MAX_KEYS) {
      const part = keys.slice(i, i + BATCH_MAX_KEYS);
      const res = await this.call('POST', '/objects/delete', { body: { keys: part }, allow404: true });
      if (res) await res.body?.cancel();
      else for (const key of part) await this.deleteObject(key);
    }
  }

  async listQueue(after: string | null, limit: number): Promise<{ entries: QueueEntry[]; has_more: boolean }> {
    const res = await this.call('GET', `/queue?limit=${limit}${after ? `&after=${after}` : ''}`);
    return (await res!.json()) as { entries: QueueEntry[]; has_more: boolean };
  }

  async queueEntry(key: string): Promise<QueueEntry | null> {
    const res = await this.call('GET', `/queue/${key}`, { allow404: true });
    return res ? ((await res.json()) as QueueEntry) : null;
  }

  async deleteQueueEntry(key: string): Promise<void> {
    await this.call('DELETE', `/queue/${key}`);
  }

  /**
   * Pushes the routing; answers what the edge reports of itself with it (its host name, public
   * addresses and smart host, src/edge/identity.ts), or null from an edge that reports nothing.
   */
  async putRouting(routing: RoutingUpdate): Promise<EdgeIdentity | null> {
    const res = await this.call('PUT', '/routing', { body: routing });
    const answer = (await res!.json().catch(() => null)) as { edge?: unknown } | null;
    return readEdgeIdentity(answer?.edge);
  }

  /**
   * Long-poll: answers as soon as objects newer than `after` exist (`available: true`), or with
   * `available: false` at the timeout; `latest` is the edge's newest key either way.
   */
  async wait(after: string | null, timeoutMs: number, signal?: AbortSignal): Promise<{ available: boolean; latest: string | null }> {
    const res = await this.call('GET', `/wait?timeout_ms=${timeoutMs}${after ? `&after=${after}` : ''}`, { timeoutMs: timeoutMs + EDGE_TIMEOUT_MS.longPollGrace, signal });
    return (await res!.json()) as { available: boolean; latest: string | null };
  }

  /**
   * Hands a message to the relay. `accepted` (200 or 202): the edge holds it; `refused` (400,
   * 413): the edge will never take this message. Anything else throws EdgeUnavailable; the ref
   * makes a repeat harmless, as the edge may or may not have stored it.
   */
  async sendOutbound(request: OutboundRequest): Promise<{ accepted: true } | { accepted: false; status: number }> {
    const res = (await this.call('POST', '/outbound', { body: request, timeoutMs: EDGE_TIMEOUT_MS.upload, answers: [400, 413] }))!;
    await res.body?.cancel().catch(() => {});
    if (res.status === 200 || res.status === 202) return { accepted: true };
    if (res.status === 400 || res.status === 413) return { accepted: false, status: res.status };
    throw new EdgeUnavailable(`edge POST /outbound answered ${res.status}`, res.status);
  }

  /** What the edge knows of a ref; null when it never received it. */
  async outboundStatus(ref: string): Promise<EdgeOutboundStatus | null> {
    let res;
    try {
      res = await this.call('GET', `/outbound/${encodeURIComponent(ref)}`, { allow404: true });
    } catch (err) {
      // An edge that never relays holds no job.
      if (err instanceof EdgeUnavailable && err.status === NOT_RELAYING) return null;
      throw err;
    }
    return res ? ((await res.json()) as EdgeOutboundStatus) : null;
  }

  /** Delivery reports after the cursor `after` (null: from the start), oldest first. */
  async deliveryReports<Report>(after: string | null, limit: number, signal?: AbortSignal): Promise<DeliveryReportPage<Report>> {
    const res = await this.call('GET', `/events?limit=${limit}${after ? `&after=${encodeURIComponent(after)}` : ''}`, { signal });
    return (await res!.json()) as DeliveryReportPage<Report>;
  }
}

/**
 * A response body as one Uint8Array that owns its whole ArrayBuffer (so it can be transferred),
 * read into a buffer of the announced length as it arrives: `arrayBuffer()` would hold every
 * chunk and then their concatenation, twice the object at the peak (issue 16, finding 9).
 */
async function readBody(res: Response): Promise<Uint8Array> {
  const announced = Number(res.headers.get('content-length'));
  if (!res.body || !Number.isSafeInteger(announced) || announced <= 0) return new Uint8Array(await res.arrayBuffer());
  const out = new Uint8Array(announced);
  let filled = 0;
  const extra: Uint8Array[] = [];
  const meter = new GarbageMeter();
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    meter.add(chunk.length);
    const fits = Math.min(chunk.length, announced - filled);
    out.set(chunk.subarray(0, fits), filled);
    filled += fits;
    // More than announced is a broken answer; keep it whole so the opener judges it, as before.
    if (fits < chunk.length) extra.push(chunk.subarray(fits));
  }
  if (extra.length === 0 && filled === announced) return out;
  const all = new Uint8Array(filled + extra.reduce((n, c) => n + c.length, 0));
  all.set(out.subarray(0, filled));
  let at = filled;
  for (const c of extra) {
    all.set(c, at);
    at += c.length;
  }
  return all;
}
