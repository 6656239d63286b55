/** The home's client for the edge API (ARCHITECTURE §6; routes in docs/edge.md). */
import type { RoutingUpdate } from '../edge/routing.js';
import type { QueueEntry } from '../edge/buffer.js';

const REQUEST_TIMEOUT_MS = 30_000;

/** The edge could not be reached or answered with an error: retry later. */
export class EdgeUnavailable extends Error {}

export class EdgeClient {
  constructor(
    private readonly url: string,
    private readonly token: string,
  ) {}

  private async call(method: string, path: string, opts: { body?: unknown; timeoutMs?: number; signal?: AbortSignal; allow404?: boolean } = {}): Promise<Response | null> {
    const signals = [AbortSignal.timeout(opts.timeoutMs ?? REQUEST_TIMEOUT_MS), ...(opts.signal ? [opts.signal] : [])];
    let res: Response;
    try {
      res = await fetch(this.url + path, {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
        signal: AbortSignal.any(signals),
      });
    } catch {
      throw new EdgeUnavailable(`edge ${method} ${path.split('?')[0]} failed to connect`);
    }
    if (res.status === 404 && opts.allow404) {
      await res.body?.cancel();
      return null;
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new EdgeUnavailable(`edge ${method} ${path.split('?')[0]} answered ${res.status}`);
    }
    return res;
  }

  async listObjects(after: string | null, limit: number): Promise<{ objects: { key: string; size: number }[]; has_more: boolean }> {
    const res = await this.call('GET', `/objects?limit=${limit}${after ? `&after=${after}` : ''}`);
    return (await res!.json()) as { objects: { key: string; size: number }[]; has_more: boolean };
  }

  /** The sealed object, or null when it is gone. */
  async getObject(key: string): Promise<string | null> {
    const res = await this.call('GET', `/objects/${key}`, { allow404: true });
    return res ? res.text() : null;
  }

  async deleteObject(key: string): Promise<void> {
    await this.call('DELETE', `/objects/${key}`);
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

  async putRouting(routing: RoutingUpdate): Promise<void> {
    await this.call('PUT', '/routing', { body: routing });
  }

  /** Long-poll: resolves true as soon as objects newer than `after` exist, false at the timeout. */
  async wait(after: string | null, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    const res = await this.call('GET', `/wait?timeout_ms=${timeoutMs}${after ? `&after=${after}` : ''}`, { timeoutMs: timeoutMs + 10_000, signal });
    return ((await res!.json()) as { available: boolean }).available;
  }
}
