/**
 * Sizes of worker threads' heaps (issue 19, docs/benchmarks.md), apart from src/core/heap-limits.ts
 * so that modules the web app also reads (src/supervisor/loop-table.ts) import no Node built-in.
 */

/**
 * Young generation of the threads that handle each message (the built-in edge, inbound-pull), in
 * MiB. Smaller means more frequent scavenges; each is cheap, since a message's objects die young.
 */
export const BUSY_THREAD_YOUNG_MB = 8;
