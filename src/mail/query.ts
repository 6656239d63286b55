/**
 * Query-string conventions of the mail list routes: array parameters, time bounds, hidden-label
 * include flags and keyset page requests bound to their filters (spec §4.1).
 */
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { DEFAULT_LIMIT, decodePageToken, encodePageToken, pageResponse, type Cursor, type PageBinding } from '../core/pagination.js';
import { PageQuery } from '../core/schemas.js';
import type { Principal } from '../auth/principal.js';
import { prepared } from '../db/statements.js';
import { MAX_LABEL_LENGTH, MAX_LABELS_PER_EDIT } from './labels.js';
import type { PageRequest } from './messages.js';
import { MAX_QUERY_LENGTH } from './search.js';
import { MAX_FILTER_VALUES, MAX_HEADER_LINE } from './limits.js';

/** A filter value (an address, a subject) is matched against one header line, so it is no longer than one. */
const FilterList = Type.Array(Type.String({ minLength: 1, maxLength: MAX_HEADER_LINE }), { maxItems: MAX_FILTER_VALUES });
const Timestamp = Type.String({ format: 'date-time' });

export const TimeQuery = {
  before: Type.Optional(Timestamp),
  after: Type.Optional(Timestamp),
};

export const IncludeQuery = {
  include_spam: Type.Optional(Type.Boolean()),
  include_blocked: Type.Optional(Type.Boolean()),
  include_unauthenticated: Type.Optional(Type.Boolean()),
  include_trash: Type.Optional(Type.Boolean()),
};

const strict = { additionalProperties: false } as const;

export const ThreadListQuery = Type.Object(
  {
    ...PageQuery,
    ...TimeQuery,
    ...IncludeQuery,
    labels: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: MAX_LABEL_LENGTH * 4 }), { maxItems: MAX_LABELS_PER_EDIT })),
    senders: Type.Optional(FilterList),
    recipients: Type.Optional(FilterList),
    subject: Type.Optional(FilterList),
  },
  strict,
);
export type ThreadListQuery = Static<typeof ThreadListQuery>;

export const MessageListQuery = Type.Object(
  {
    ...PageQuery,
    ...TimeQuery,
    ...IncludeQuery,
    labels: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: MAX_LABEL_LENGTH * 4 }), { maxItems: MAX_LABELS_PER_EDIT })),
    from: Type.Optional(FilterList),
    to: Type.Optional(FilterList),
    subject: Type.Optional(FilterList),
  },
  strict,
);
export type MessageListQuery = Static<typeof MessageListQuery>;

export const SearchQuery = Type.Object(
  {
    q: Type.String({ minLength: 1, maxLength: MAX_QUERY_LENGTH }),
    limit: PageQuery.limit,
    page_token: PageQuery.page_token,
    ...TimeQuery,
  },
  strict,
);
export type SearchQuery = Static<typeof SearchQuery>;

export const ThreadPageQuery = Type.Object({ limit: PageQuery.limit, page_token: PageQuery.page_token }, strict);
export type ThreadPageQuery = Static<typeof ThreadPageQuery>;

/**
 * Array parameters arrive repeated (`?labels=a&labels=b`, the spec's form) or, from the
 * AgentMail SDK, as one JSON-encoded array (`?labels=["a","b"]`); both mean the same list.
 */
export function queryList(values: string[] | undefined): string[] | undefined {
  if (values === undefined) return undefined;
  const out = values.flatMap((v) => {
    if (!v.startsWith('[')) return [v];
    try {
      const parsed: unknown = JSON.parse(v);
      if (Array.isArray(parsed) && parsed.every((x): x is string => typeof x === 'string')) return parsed;
    } catch {
      /* a literal value that happens to start with '[' */
    }
    return [v];
  });
  return out.length ? [...new Set(out)] : undefined;
}

/** Time bounds normalized to the stored form (ISO UTC with milliseconds). */
export function timeBounds(q: { before?: string; after?: string }): { before?: string; after?: string } {
  return {
    ...(q.before ? { before: new Date(q.before).toISOString() } : {}),
    ...(q.after ? { after: new Date(q.after).toISOString() } : {}),
  };
}

/**
 * One keyset page: reads the token (stale when the filters or caller differ), and afterwards
 * makes the response with the next token bound to the same filters.
 */
export function keysetPage(db: Db, binding: PageBinding, q: { limit?: number; page_token?: string; ascending?: boolean }) {
  const limit = q.limit ?? DEFAULT_LIMIT;
  const cursor: Cursor | null = q.page_token ? decodePageToken(db, q.page_token, binding) : null;
  const page: PageRequest = { limit, ascending: q.ascending === true, cursor };
  return {
    page,
    respond: <T>(key: string, items: T[], next: Cursor | null) => pageResponse(key, items, limit, next ? encodePageToken(db, binding, next) : null),
    token: (next: Cursor | null) => (next ? encodePageToken(db, binding, next) : null),
  };
}

/** The inboxes an instance-wide list or search covers: every inbox in the caller's scope. */
export function scopeInboxes(db: Db, p: Principal): string[] {
  if (p.inboxScope !== 'all') return [...p.inboxScope].sort();
  return (prepared(db, 'SELECT inbox_id FROM inboxes ORDER BY inbox_id').all() as { inbox_id: string }[]).map((r) => r.inbox_id);
}
