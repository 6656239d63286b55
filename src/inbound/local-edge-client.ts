/**
 * The home's client for the built-in edge of the same process (`svc serve --local-edge`): the
 * inbound operations of EdgeClient over the MessagePort the edge thread serves
 * (src/edge/local-handover.ts) instead of loopback HTTP. Same answers and the same failure: a
 * request the edge cannot answer, or does not answer in time, is EdgeUnavailable.
 */
import type { MessagePort } from 'node:worker_threads';
import type { HandoverAnswers, HandoverReply, HandoverRequest } from '../edge/local-handover.js';
import type { QueueEntry } from '../edge/buffer.js';
import { BATCH_MAX_KEYS } from '../edge/limits.js';
import { EDGE_TIMEOUT_MS, EdgeUnavailable, type EdgeObjects } from './edge-client.js';

type Op = Exclude<HandoverRequest['op'], 'cancel'>;
type Body<O extends Op> = Omit<Extract<HandoverRequest, { op: O }>, 'id' | 'op'>;

export class LocalEdgeClient implements EdgeObjects {
  #nextId = 1;
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();

  constructor(private readonly port: MessagePort) {
    port.on('message', (reply: HandoverReply) => {
      const pending = this.#pending.get(reply.id);
      if (!pending) return;
      this.#pending.delete(reply.id);
      if (reply.ok) pending.resolve(reply.value);
      else pending.reject(new EdgeUnavailable('the built-in edge could not answer', 503));
    });
    // A request in flight keeps the thread alive by its timer; an idle port must not hold a stopping
    // thread. After the listener: adding a 'message' listener refs the port again (Node), which held
    // every `--local-edge` stop for the loops' 10 s grace.
    port.unref();
    port.once('close', () => {
      for (const pending of this.#pending.values()) pending.reject(new EdgeUnavailable('the built-in edge is gone'));
      this.#pending.clear();
    });
  }

  /** One request; rejects with EdgeUnavailable after `timeoutMs` or when `signal` aborts (the edge is told to drop a wait). */
  #ask<O extends Op>(op: O, body: Body<O>, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<HandoverAnswers[O]> {
    const id = this.#nextId++;
    return new Promise<HandoverAnswers[O]>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', abort);
        this.#pending.delete(id);
      };
      const abort = () => {
        done();
        this.port.postMessage({ id, op: 'cancel' } satisfies HandoverRequest);
        reject(new EdgeUnavailable(`the built-in edge did not answer ${op}`));
      };
      const timer = setTimeout(abort, opts.timeoutMs ?? EDGE_TIMEOUT_MS.request);
      if (opts.signal?.aborted) return abort();
      opts.signal?.addEventListener('abort', abort, { once: true });
      this.#pending.set(id, {
        resolve: (value) => {
          done();
          resolve(value as HandoverAnswers[O]);
        },
        reject: (err) => {
          done();
          reject(err);
        },
      });
      this.port.postMessage({ id, op, ...body } as unknown as HandoverRequest);
    });
  }

  listObjects(after: string | null, limit: number): Promise<{ objects: { key: string; size: number }[]; has_more: boolean }> {
    return this.#ask('list', { after, limit });
  }

  getObjectBytes(key: string): Promise<Uint8Array | null> {
    return this.#ask('get', { key });
  }

  async deleteObject(key: string): Promise<void> {
    await this.#ask('delete', { keys: [key] });
  }

  /** Several sealed objects as bytes; keys left out of one answer for size are asked for again. */
  async fetchObjects(keys: string[]): Promise<{ objects: Map<string, string | Uint8Array>; missing: string[] }> {
    const objects = new Map<string, string | Uint8Array>();
    const missing: string[] = [];
    for (let i = 0; i < keys.length; i += BATCH_MAX_KEYS) {
      let todo = keys.slice(i, i + BATCH_MAX_KEYS);
      while (todo.length > 0) {
        const page = await this.#ask('fetch', { keys: todo });
        for (const o of page.objects) objects.set(o.key, o.bytes);
        missing.push(...page.missing);
        // The edge answers at least one object when any exists, so this shrinks every round.
        todo = page.objects.length > 0 ? page.deferred : [];
      }
    }
    return { objects, missing };
  }

  async deleteObjects(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += BATCH_MAX_KEYS) await this.#ask('delete', { keys: keys.slice(i, i + BATCH_MAX_KEYS) });
  }

  queueEntry(key: string): Promise<QueueEntry | null> {
    return this.#ask('entry', { key });
  }

  wait(after: string | null, timeoutMs: number, signal?: AbortSignal): Promise<{ available: boolean; latest: string | null }> {
    return this.#ask('wait', { after, timeoutMs }, { timeoutMs: timeoutMs + EDGE_TIMEOUT_MS.longPollGrace, signal });
  }
}
