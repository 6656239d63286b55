/**
 * How much memory the service's JavaScript heaps and SQLite connections may hold under load
 * (issue 19; measured in docs/benchmarks.md, "Memory under ingest"). V8 sizes its heaps for
 * throughput on a machine with memory to spare: a busy thread's young generation grows to 48 MiB,
 * and after each full collection the old generation may grow to up to four times what survived
 * before the next one. Under an ingest burst that let the edge and inbound threads hold over
 * 60 MiB each, mostly garbage. These limits cut the peak by about 100 MiB at no measurable CPU cost.
 */
import v8 from 'node:v8';

/**
 * Old-generation growth allowed between full collections, in percent of the heap that survived
 * the last one (V8 otherwise picks 10–300% from its speed estimates). The flag is read at every
 * full collection, so setting it at start-up covers the main thread and every worker.
 */
export const HEAP_GROWING_PERCENT = 30;

export { BUSY_THREAD_YOUNG_MB } from './thread-limits.js';

/**
 * SQLite page cache of each writing connection (the request thread, the loop threads), in KiB.
 * The build's default is 16,000 KiB a connection; the writers touch the newest pages of each
 * table, and reads of older mail run in the reader threads, which keep the default.
 */
export const WRITER_CACHE_KIB = 4_096;

/** Applies HEAP_GROWING_PERCENT to every isolate of the process; called by `svc serve` once it is ready, and by `svc edge`. */
export function limitHeapGrowth(): void {
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
