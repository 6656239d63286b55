/**
 * The edge's cache of DNS answers for mail authentication and relaying (docs/edge.md, "DNS").
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

type Answer = ReturnType<DNSResolver>;

export function cachingResolver(resolve: DNSResolver, now: () => number = () => performance.now()): DNSResolver {
  const answers = new Map<string, { until: number; answer: Answer }>();
  return (name, rrtype) => {
    const key = `${rrtype} ${name.toLowerCase()}`;
    const at = now();
    const kept = answers.get(key);
    if (kept && kept.until > at) return kept.answer;
    if (kept) answers.delete(key);
    const answer = resolve(name, rrtype);
    // In flight: shared until it settles; then kept for the TTL, or forgotten on a failure.
    const entry = { until: Number.POSITIVE_INFINITY, answer };
    answers.set(key, entry);
    if (answers.size > CACHE_ENTRIES) answers.delete(answers.keys().next().value!);
    answer.then(
      (value) => {
        if (JSON.stringify(value).length <= MAX_KEPT_CHARS) entry.until = now() + CACHE_TTL_MS;
        else if (answers.get(key) === entry) answers.delete(key);
      },
      (err: unknown) => {
        if (NEGATIVE.has((err as { code?: string }).code ?? '')) entry.until = now() + CACHE_TTL_MS;
        else if (answers.get(key) === entry) answers.delete(key);
      },
    );
    return answer;
  };
}
