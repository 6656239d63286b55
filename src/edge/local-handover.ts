/**
 * The built-in edge's hand-over to the home in the same process (`svc serve --local-edge`): the
 * inbound pull loop's thread lists, fetches, deletes and waits for sealed objects over a
 * MessagePort instead of the loopback edge API. Same operations and the same rules as the API
 * (docs/edge.md): objects stay in the spool until the home deletes them after its commit, and
 * they cross as the sealed bytes the spool holds (the edge cannot read them). No token is needed:
 * only the home's inbound thread holds the other end of the port.
 *
 * Why: per page of mail, the HTTP hand-over cost two HTTP requests with JSON of every sealed
 * object (base64 text in JSON, parsed again on the other side), and each wake of the pull loop a
 * long-poll round trip (issue 37 §2). Here a sealed object is copied once into a buffer that is
 * moved, not copied, to the inbound thread.
 */
import type { MessagePort } from 'node:worker_threads';
import type { SealedBuffer } from './buffer.js';
import type { QueueEntry } from './buffer.js';
import { BATCH_FETCH_MAX_BYTES, BATCH_MAX_KEYS, LIST_MAX_LIMIT, WAIT_MAX_MS } from './limits.js';
import { isObjectKey } from './object-key.js';

/** A request from the home's inbound thread; `id` pairs it with its reply. */
export type HandoverRequest =
  | { id: number; op: 'list'; after: string | null; limit: number }
  | { id: number; op: 'fetch'; keys: string[] }
  | { id: number; op: 'get'; key: string }
  | { id: number; op: 'delete'; keys: string[] }
  | { id: number; op: 'entry'; key: string }
  | { id: number; op: 'wait'; after: string | null; timeoutMs: number }
  /** The home gave up on a wait (its pass is stopping): answer it now. */
  | { id: number; op: 'cancel' };

/** What each operation answers with. */
export interface HandoverAnswers {
  list: { objects: { key: string; size: number }[]; has_more: boolean };
  /** Sealed objects as bytes; keys without an object in `missing`, keys left for size in `deferred`. */
  fetch: { objects: { key: string; bytes: Uint8Array }[]; missing: string[]; deferred: string[] };
  get: Uint8Array | null;
  delete: null;
  entry: QueueEntry | null;
  wait: { available: boolean; latest: string | null };
}

export type HandoverReply = { id: number; ok: true; value: unknown } | { id: number; ok: false };

/** A copy of `bytes` in a buffer of its own, so it can be moved to the other thread. */
function movable(bytes: Uint8Array): Uint8Array {
  const own = new Uint8Array(bytes.byteLength);
  own.set(bytes);
  return own;
}

const keysValid = (keys: unknown): keys is string[] =>
  Array.isArray(keys) && keys.length <= BATCH_MAX_KEYS && keys.every((k) => typeof k === 'string' && isObjectKey(k));
const afterValid = (after: unknown): after is string | null => after === null || (typeof after === 'string' && isObjectKey(after));

/** Answers the home's requests on `port` from `buffer` until the port closes. */
export function serveLocalHandover(port: MessagePort, buffer: SealedBuffer): { close(): void } {
  const cancels = new Map<number, () => void>();
  let closed = false;
  const answer = (reply: HandoverReply, transfer: ArrayBuffer[] = []) => {
    if (!closed) port.postMessage(reply, transfer);
  };
  const handle = async (m: HandoverRequest): Promise<void> => {
    switch (m.op) {
      case 'list': {
        if (!afterValid(m.after)) return answer({ id: m.id, ok: false });
        const page = buffer.listObjects(m.after, Math.max(1, Math.min(LIST_MAX_LIMIT, Math.trunc(m.limit) || 1)));
        return answer({ id: m.id, ok: true, value: { objects: page.items, has_more: page.hasMore } satisfies HandoverAnswers['list'] });
      }
      case 'fetch': {
        if (!keysValid(m.keys)) return answer({ id: m.id, ok: false });
        const read = await buffer.readObjectBytes(m.keys, BATCH_FETCH_MAX_BYTES);
        const objects = read.objects.map((o) => ({ key: o.key, bytes: movable(o.bytes) }));
        const value: HandoverAnswers['fetch'] = { objects, missing: read.missing, deferred: read.deferred };
        return answer({ id: m.id, ok: true, value }, objects.map((o) => o.bytes.buffer as ArrayBuffer));
      }
      case 'get': {
        if (!isObjectKey(m.key)) return answer({ id: m.id, ok: false });
        const bytes = await buffer.readObject(m.key);
        const value = bytes === null ? null : movable(bytes);
        return answer({ id: m.id, ok: true, value }, value ? [value.buffer as ArrayBuffer] : []);
      }
      case 'delete': {
        if (!keysValid(m.keys)) return answer({ id: m.id, ok: false });
        await buffer.deleteObjects(m.keys);
        return answer({ id: m.id, ok: true, value: null });
      }
      case 'entry': {
        if (!isObjectKey(m.key)) return answer({ id: m.id, ok: false });
        return answer({ id: m.id, ok: true, value: buffer.entry(m.key) });
      }
      case 'wait': {
        if (!afterValid(m.after)) return answer({ id: m.id, ok: false });
        const cancelled = new Promise<void>((resolve) => cancels.set(m.id, resolve));
        const available = await buffer.waitForNewer(m.after, Math.max(0, Math.min(WAIT_MAX_MS, m.timeoutMs)), cancelled);
        cancels.delete(m.id);
        return answer({ id: m.id, ok: true, value: { available, latest: buffer.latest } satisfies HandoverAnswers['wait'] });
      }
      case 'cancel':
        cancels.get(m.id)?.();
        return;
    }
  };
  port.on('message', (m: HandoverRequest) => {
    // A storage error is the home's to retry; it learns only that the request failed.
    handle(m).catch(() => answer({ id: m.id, ok: false }));
  });
  // The edge thread ends when it is stopped, whether or not the home still holds its end. After the
  // listener: adding a 'message' listener refs the port again (Node).
  port.unref();
  const close = () => {
    closed = true;
    for (const cancel of cancels.values()) cancel();
    port.close();
  };
  port.once('close', () => {
    closed = true;
    for (const cancel of cancels.values()) cancel();
  });
  return { close };
}
