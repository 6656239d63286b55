/**
 * Requests waiting for the next message (issue 20 §1; docs/waiting.md). A waiter costs a timer
 * and an entry here: nothing is polled per waiter. When the bus says an event was committed (and,
 * as a safety net for writers that do not post on the bus, once a second while anyone waits), one
 * read in a reader thread returns the messages received since the lowest waiter's log position,
 * without bodies; each is matched against every waiter in memory (src/mail/waits.ts matchesWait),
 * and a waiter it matches reads that one message, with its credential as it is now, to answer.
 */
import type { Bus } from '../supervisor/bus.js';
import type { Readers } from '../supervisor/readers.js';
import type { Principal } from '../auth/principal.js';
import { ApiError, unauthorized } from '../core/errors.js';
import type { Message } from '../mail/serialize.js';
import { matchesWait, type ReceivedRow } from '../mail/waits.js';
import type { WaitStart } from '../requests/message-waits.js';

/** Waits one credential may hold at once, and the whole process (docs/waiting.md). */
export const MAX_WAITS_PER_CREDENTIAL = 1_000;
export const MAX_WAITS = 10_000;
/** Received messages read per scan of the log. */
const SCAN_BATCH = 500;
/** While anyone waits, the log is also read this often, for commits no bus message announced. */
const SAFETY_SCAN_MS = 1_000;

interface Waiter {
  principal: Principal;
  start: WaitStart;
  /** The log position up to which this waiter has seen every received message. */
  seen: number;
  /** A matched message is being read for the answer: no other candidate until it is settled. */
  reading: boolean;
  settle: (result: WaitAnswer | null | ApiError) => void;
}

/** A wait's answer: the message, and its JSON made once for every waiter it answers. */
export interface WaitAnswer {
  message: Message;
  json: string;
}

export class MessageWaits {
  readonly #reads: Readers;
  readonly #waiters = new Set<Waiter>();
  readonly #perCredential = new Map<string, number>();
  #scanning = false;
  #again = false;
  #closed = false;
  #safety: NodeJS.Timeout | null = null;

  constructor(reads: Readers, bus: Bus) {
    this.#reads = reads;
    bus.subscribe('event', () => this.#scan());
  }

  /** Waiters now (for tests and the metrics of issue 20 §5). */
  get size(): number {
    return this.#waiters.size;
  }

  /**
   * Waits for a message that passes `start`'s filters, up to its timeout; null when none came.
   * `start.found` answers at once. `signal` ends the wait when the client goes away.
   */
  wait(principal: Principal, start: WaitStart, signal?: AbortSignal): Promise<WaitAnswer | null> {
    if (start.found) return Promise.resolve({ message: start.found, json: JSON.stringify(start.found) });
    if (this.#closed) return Promise.reject(stopping());
    if (start.timeoutMs === 0 || signal?.aborted) return Promise.resolve(null);
    const held = this.#perCredential.get(principal.id) ?? 0;
    if (held >= MAX_WAITS_PER_CREDENTIAL || this.#waiters.size >= MAX_WAITS) {
      return Promise.reject(
        new ApiError('rate_limited', `Too many waits at once (at most ${MAX_WAITS_PER_CREDENTIAL} per credential).`, {
          fix: 'Wait on the instance-wide form (GET /v0/messages/wait) with filters instead of one wait per message, or use the WebSocket event stream.',
          headers: { 'retry-after': '1' },
        }),
      );
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => waiter.settle(null), start.timeoutMs);
      const onAbort = () => waiter.settle(null);
      const waiter: Waiter = {
        principal,
        start,
        seen: start.head,
        reading: false,
        settle: (result) => {
          if (!this.#waiters.delete(waiter)) return;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          const left = (this.#perCredential.get(principal.id) ?? 1) - 1;
          if (left > 0) this.#perCredential.set(principal.id, left);
          else this.#perCredential.delete(principal.id);
          if (this.#waiters.size === 0 && this.#safety) {
            clearInterval(this.#safety);
            this.#safety = null;
          }
          if (result instanceof ApiError) reject(result);
          else resolve(result);
        },
      };
      this.#waiters.add(waiter);
      this.#perCredential.set(principal.id, held + 1);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#safety ??= setInterval(() => this.#scan(), SAFETY_SCAN_MS);
      this.#safety.unref();
      // Commits between the waiter's first read and now are found by this scan.
      this.#scan();
    });
  }

  /** Ends every wait with `service_unavailable` (the service is stopping) and takes no more. */
  close(): void {
    this.#closed = true;
    for (const waiter of [...this.#waiters]) waiter.settle(stopping());
  }

  /** Reads the log from the lowest position any waiter has seen, until caught up; one scan at a time. */
  #scan(): void {
    if (this.#waiters.size === 0) return;
    if (this.#scanning) {
      this.#again = true;
      return;
    }
    this.#scanning = true;
    void (async () => {
      try {
        do {
          this.#again = false;
          const waiting = [...this.#waiters].filter((w) => !w.reading);
          if (waiting.length === 0) break;
          const from = Math.min(...waiting.map((w) => w.seen));
          const { head, rows } = await this.#reads.run('receivedAfterSeq', from, SCAN_BATCH);
          // Waiters that one message answers for the same credential and hidden labels share one read of it.
          const groups = new Map<string, { row: ReceivedRow; waiters: Waiter[] }>();
          for (const waiter of waiting) {
            if (!this.#waiters.has(waiter) || waiter.reading || waiter.seen < from) continue;
            const match = rows.find((row) => row.seq > waiter.seen && matchesWait(row, waiter.start.after, waiter.start.filters));
            if (!match) {
              waiter.seen = Math.max(waiter.seen, head);
              continue;
            }
            const p = waiter.principal;
            const key = `${match.seq}\u0000${p.kind}\u0000${p.id}\u0000${p.tokenId ?? ''}\u0000${waiter.start.filters.excluded.join(',')}`;
            const group = groups.get(key);
            if (group) group.waiters.push(waiter);
            else groups.set(key, { row: match, waiters: [waiter] });
          }
          for (const { row, waiters } of groups.values()) this.#answer(waiters, row);
          if (rows.length === SCAN_BATCH) this.#again = true;
        } while (this.#again && !this.#closed);
      } catch {
        // A failed read (a reader restarting, the service stopping) is retried by the next event or the safety scan.
      } finally {
        this.#scanning = false;
      }
    })();
  }

  /**
   * Reads a matched message once for waiters of one credential and answers them all; a skipped
   * one (not readable for them now) moves them past it, and they look again.
   */
  #answer(waiters: Waiter[], row: ReceivedRow): void {
    const [first] = waiters;
    for (const waiter of waiters) waiter.reading = true;
    void this.#reads
      .run('waitedMessage', first!.principal, row.inbox_id, row.message_id, first!.start.filters.excluded)
      .then((result) => {
        const answer = result.status === 'found' ? { message: result.message, json: JSON.stringify(result.message) } : null;
        for (const waiter of waiters) {
          if (answer) waiter.settle(answer);
          else if (result.status === 'revoked') waiter.settle(unauthorized('The credential was revoked or expired while waiting.'));
          else waiter.seen = row.seq;
        }
      })
      .catch((err: unknown) => {
        const failure = err instanceof ApiError ? err : new ApiError('service_unavailable', 'The message could not be read.', { fix: 'Wait again.' });
        for (const waiter of waiters) waiter.settle(failure);
      })
      .finally(() => {
        for (const waiter of waiters) waiter.reading = false;
        this.#scan();
      });
  }
}

const stopping = () =>
  new ApiError('service_unavailable', 'svc is stopping; the wait ended without an answer.', { fix: 'Wait again once the service is back; mail that arrived meanwhile is found by `after`.' });
