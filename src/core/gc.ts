/**
 * A full garbage collection on request, for the few places that just let go of a large message
 * (issue 16, finding 9). V8 frees large dead buffers and strings only at a full collection, which
 * an idle thread may not run for a long time; until then they stay resident. Node exposes `gc`
 * only under --expose-gc; the flag is set at run time and the function taken from a fresh
 * context (the way Jest's leak detector does it), so `svc serve` needs no special command line.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * A message at least this large leaves enough dead memory behind to be worth a full collection
 * (tens of milliseconds); below it V8's own schedule is cheaper, and a stream of medium-sized
 * mail must not cost a collection each.
 */
export const COLLECT_AFTER_BYTES = 4 * 1024 * 1024;

let collect: ((options?: { type: 'major' | 'minor' }) => void) | null = null;

/**
 * Runs a synchronous collection of this thread's heap: `full` (tens of milliseconds on a small
 * heap) or `minor` (about a millisecond), which frees buffers that died young, such as the chunks
 * of a body being read: V8 counts their bytes only loosely, so tens of megabytes of them can wait.
 */
export function collectGarbage(kind: 'full' | 'minor' = 'full'): void {
  if (collect === null) {
    try {
      v8.setFlagsFromString('--expose-gc');
      const gc: unknown = vm.runInNewContext('gc');
      // A runtime without it only loses the hint: V8 still collects on its own schedule.
      collect = typeof gc === 'function' ? (gc as typeof collect & object) : () => {};
    } catch {
      collect = () => {};
    }
  }
  collect({ type: kind === 'full' ? 'major' : 'minor' });
}

/** Bytes of short-lived buffers after which a `GarbageMeter` runs a minor collection. */
const METER_BYTES = 4 * 1024 * 1024;

/** Counts the bytes of chunks passed along (a body read or written) and frees the dead ones every few megabytes. */
export class GarbageMeter {
  #bytes = 0;

  add(bytes: number): void {
    this.#bytes += bytes;
    if (this.#bytes < METER_BYTES) return;
    this.#bytes = 0;
    collectGarbage('minor');
  }
}

let soon: NodeJS.Timeout | null = null;

/**
 * A full collection shortly after now, once for any number of calls in the meantime: for code
 * that lets go of a large message but whose callers still hold it for a moment (the SMTP session
 * until its reply is written, a page until its edge delete is answered).
 */
export function collectGarbageSoon(delayMs = 250): void {
  if (soon !== null) return;
  soon = setTimeout(() => {
    soon = null;
    collectGarbage();
  }, delayMs);
  soon.unref();
}
