/**
 * The edge's cache of DNS answers for mail authentication and relaying (docs/edge.md, "SMTP", and its limits table).
 *
 * SPF, DKIM, DMARC and ARC ask the same few names for every message of a sender (its SPF record,
 * its DMARC policy, its DKIM key), and a small server often has no caching resolver of its own:
 * each message then cost several round trips to the name server and their parsing (measured at
 * the ingest benchmark, 0.39 ms of the edge thread per message, and 0.7 ms of the name server's).
 * Answers are kept for CACHE_TTL_MS, and so are "no such name" and "no such record" (RFC 2308
 * negative caching); a timeout, a refused query or a server failure is not kept, so the next
 * message asks again. Questions asked while the same one is in flight share its answer. The
 * cache holds at most CACHE_ENTRIES answers, the oldest dropped first, and only answers of at most
 * MAX_KEPT_CHARS (a 2048-bit DKIM key is about 400; a sender controls its own records and could
 * publish 64 KB ones), so names and records a stranger makes up hold at most about 4 MiB.
 *
 * Each caller gets its own copy of an answer or error (mailauth annotates the errors it is given).
 * Names are compared case-insensitively in ASCII only, as DNS compares them.
 *
 * The answers' own TTLs are not known through node's resolver (only A and AAAA report them), so
 * one time bounds all: a record changed at its zone is seen within a minute, as a resolver
 * honouring a one-minute TTL would.
 */
import type { DNSResolver } from 'mailauth';

export const CACHE_TTL_MS = 60_000;
export const CACHE_ENTRIES = 1_024;
export const MAX_KEPT_CHARS = 4_096;
/** Error codes meaning the name or the record does not exist: an answer, cached like one. */
const NEGATIVE = new Set(['ENOTFOUND', 'ENODATA']);

/** An in-flight question older than this is asked again (the resolver's own timeouts end it long before). */
const IN_FLIGHT_MAX_MS = 30_000;

/** Names compare case-insensitively in ASCII only (RFC 4343): JavaScript's own lower-casing folds more (a Greek Σ to ς or σ) than DNS does. */
const asciiLower = (name: string) => name.replace(/[A-Z]+/g, (s) => s.toLowerCase());

/** What a caller gets: its own copy of a kept answer or error, since mailauth annotates what it is given. */
const copyOf = <T>(value: T): T => structuredClone(value);
/**
 * The copy carries no stack: capturing one was most of the cache's cost in the ingest profile
 * (mail from a sender without SPF or DMARC records gets several NXDOMAIN/NODATA answers per
 * message), and nothing reads a resolver error's stack.
 */
function errorCopy(err: unknown): Error {
  const e = err as NodeJS.ErrnoException & { hostname?: string };
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  let copy: Error;
  try {
    copy = new Error(e?.message ?? String(err));
  } finally {
    Error.stackTraceLimit = limit;
  }
  return Object.assign(copy, { code: e?.code, errno: e?.errno, syscall: e?.syscall, hostname: e?.hostname });
}

export function cachingResolver(resolve: DNSResolver, now: () => number = () => performance.now()): DNSResolver {
  const answers = new Map<string, { until: number; answer: Promise<unknown> }>();
  return ((name, rrtype) => {
    const key = `${rrtype} ${asciiLower(name)}`;
    const at = now();
    let entry = answers.get(key);
    if (entry && entry.until <= at) {
      answers.delete(key);
      entry = undefined;
    }
    if (!entry) {
      const answer: Promise<unknown> = resolve(name, rrtype);
      // In flight: shared until it settles; then kept for the TTL, or forgotten.
      const kept = { until: at + IN_FLIGHT_MAX_MS, answer };
      entry = kept;
      answers.set(key, kept);
      if (answers.size > CACHE_ENTRIES) answers.delete(answers.keys().next().value!);
      const forget = () => {
        if (answers.get(key) === kept) answers.delete(key);
      };
      answer.then(
        (value) => {
          let size = Number.POSITIVE_INFINITY;
          try {
            size = JSON.stringify(value)?.length ?? Number.POSITIVE_INFINITY;
          } catch {
            /* not kept */
          }
          if (size <= MAX_KEPT_CHARS) kept.until = now() + CACHE_TTL_MS;
          else forget();
        },
        (err: unknown) => {
          if (NEGATIVE.has((err as { code?: string })?.code ?? '')) kept.until = now() + CACHE_TTL_MS;
          else forget();
        },
      );
    }
    return entry.answer.then(copyOf, (err: unknown) => Promise.reject(errorCopy(err)));
  }) as DNSResolver;
}
