/**
 * The shape every background loop shares: wake condition → select work → do it → commit →
 * schedule the next wake. A loop file supplies only its `pass` (its default export); this runner
 * owns sleeping, waking and stopping. A loop thread (loop-thread.ts) runs several loops, each
 * with its own runner. Anything a pass throws escapes to the supervisor, which stops the whole
 * service.
 */
import type { Db } from '../../src/db/open.js';
import { LOOPS, heartbeatIndex, type LocalEdgeHandover, type LoopName, type LoopTiming } from '../../src/supervisor/loop-table.js';
import type { BusMessage } from '../../src/supervisor/bus.js';
import type { PoolTaskName as TaskName } from '../../src/supervisor/pool.js';

/** A test-only interval below this is ignored: passes back to back would call a DNS provider without pause. */
const TEST_KNOB_MIN_MS = 100;
/** Test-only crash injection (docs/testing.md) waits this long after the first pass. */
const FAULT_DELAY_MS = 2_000;

/**
 * Test-only: `SVC_TEST_PROVISIONING_MS=<ms>` replaces the provisioning loop's 10 s between passes,
 * so a test sees a domain move through its states within seconds (docs/testing.md). Unset, the
 * table's timing applies.
 */
function timingOf(name: LoopName): LoopTiming {
  const testMs = Number(process.env.SVC_TEST_PROVISIONING_MS);
  if (name !== 'provisioning' || !process.env.SVC_TEST_PROVISIONING_MS || !Number.isFinite(testMs) || testMs < TEST_KNOB_MIN_MS) return LOOPS[name];
  return { ...LOOPS[name], busyMs: testMs, idleMs: testMs };
}

export interface LoopContext {
  db: Db;
  name: LoopName;
  /** Tell the main thread something happened (e.g. an event was appended). */
  publish(message: BusMessage): void;
  /** Runs CPU work in the shared pool; rejects when the task fails. */
  runTask(task: TaskName, input: unknown): Promise<unknown>;
  /** Ends the current sleep early (e.g. a long-poll saw new work). */
  wakeSelf(): void;
  /** Resolves at the next wake (a bus wake or wakeSelf), for a pass that waits on several things at once. */
  nextWake(): Promise<void>;
  /** Aborted when the service stops: pass it to long-running requests. */
  stopped: AbortSignal;
  /** The test-only fault switch (docs/testing.md), or null. */
  fault: string | null;
  /** The built-in edge's in-process hand-over (inbound-pull's thread with `--local-edge`), or null. */
  localEdge: LocalEdgeHandover | null;
}

/** Returns whether the pass did work ('busy') or found none ('idle'), or an explicit next delay. */
export type LoopPass = (ctx: LoopContext) => Promise<'busy' | 'idle' | { delayMs: number }>;

/** A loop file's default export: its pass. */
export const loopPass = (pass: LoopPass): LoopPass => pass;

/** One loop's schedule within its thread: its own sleep, wake and stop. */
export class LoopRunner {
  #woken = false;
  #wake: (() => void) | null = null;
  #stopping = false;
  /** The promise `nextWake` hands out (one, shared, until the next wake resolves it). */
  #nextWake: { promise: Promise<void>; resolve: () => void } | null = null;
  readonly #stopController = new AbortController();
  readonly ctx: LoopContext;
  readonly #beat: (slot: 0 | 1) => void;

  constructor(
    readonly name: LoopName,
    private readonly pass: LoopPass,
    shared: Omit<LoopContext, 'name' | 'wakeSelf' | 'nextWake' | 'stopped'>,
    /** The loops' shared heartbeats (loop-table.ts), or none (tests that run a pass alone). */
    heartbeat: BigInt64Array | null = null,
  ) {
    this.ctx = { ...shared, name, wakeSelf: () => this.wake(), nextWake: () => this.#waitForWake(), stopped: this.#stopController.signal };
    const at = heartbeatIndex(name);
    this.#beat = heartbeat ? (slot) => void Atomics.store(heartbeat, at + slot, BigInt(Date.now())) : () => {};
  }

  wake(): void {
    this.#woken = true;
    this.#wake?.();
    this.#nextWake?.resolve();
    this.#nextWake = null;
  }

  #waitForWake(): Promise<void> {
    if (!this.#nextWake) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.#nextWake = { promise, resolve };
    }
    return this.#nextWake.promise;
  }

  stop(): void {
    this.#stopping = true;
    this.#stopController.abort();
    this.wake();
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.#woken || this.#stopping) return resolve();
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Passes until stopped. */
  async run(fault: string | null): Promise<void> {
    const timing = timingOf(this.name);
    const crashFault = fault === `loop-crash:${this.name}`;
    let passes = 0;
    while (!this.#stopping) {
      this.#woken = false;
      if (crashFault && passes > 0) throw new Error(`injected fault in ${this.name}`);
      this.#beat(0);
      const result = await this.pass(this.ctx);
      this.#beat(1);
      passes++;
      const delay = result === 'busy' ? timing.busyMs : result === 'idle' ? timing.idleMs : Math.min(result.delayMs, timing.idleMs);
      // Crash injection fires on the second pass, late enough that startup has completed and been
      // reported even on a loaded machine (the test waits for server.ready first).
      await this.#sleep(crashFault ? FAULT_DELAY_MS : delay);
      this.#wake = null;
    }
  }
}

