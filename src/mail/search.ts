/**
 * Full-text search over messages_fts (subject, participants, body), ranked by bm25 with the
 * subject weighted highest. Search never returns hidden mail.
 *
 * Hits are read best first in growing batches straight from FTS5 (which ranks in C and keeps
 * only the top K), and only those K rows are joined to messages for scope, time and hidden-label
 * checks. Joining every match instead costs one random page read per match, which on a large
 * store is the whole latency budget. A thread ranks by its best visible hit; the order key of a
 * thread or message is its best hit's (score, rowid), which is also the keyset cursor. Page
 * tokens are bound to the index generation by the routes, so scores never change under a token.
 */
import type { Db } from '../db/open.js';
import type { Cursor } from '../core/pagination.js';
import { SEARCH_VISIBILITY, visibleSql } from './labels.js';
import { messageItems } from './messages.js';
import { LISTED_THREAD_COLUMNS, listedSummaries, type ListedThreadRow } from './threads.js';
import { MESSAGE_ITEM_COLUMNS, type MessageItem, type MessageRow, type ThreadItem } from './serialize.js';
import { prepared } from '../db/statements.js';

export const MAX_QUERY_LENGTH = 512;
/** Column weights for bm25: subject, participants, body. */
const RANK = 'bm25(messages_fts, 10.0, 4.0, 1.0)';
/** First batch: this many hits per result wanted; each further batch is GROWTH times larger. */
const FIRST_BATCH_FACTOR = 4;
const GROWTH = 4;
/** Beyond this many best hits, filtering by scope first is cheaper than reading more hits. */
const MAX_BATCH = 2048;
const VISIBLE = visibleSql('m', SEARCH_VISIBILITY);

/**
 * Free text → an FTS5 query that cannot be a syntax error: every whitespace-separated word
 * becomes a quoted phrase (so `a@b.com` matches its tokens in order), all of them required;
 * a trailing `*` keeps its prefix meaning. Null when nothing searchable is left.
 */
export function ftsQuery(q: string): string | null {
  const phrases = q
    .split(/\s+/)
    .filter((word) => /[\p{L}\p{N}]/u.test(word))
    .map((word) => {
      const prefix = word.endsWith('*');
      const body = (prefix ? word.slice(0, -1) : word).replace(/"/g, '""');
      return `"${body}"${prefix ? ' *' : ''}`;
    });
  return phrases.length ? phrases.join(' ') : null;
}

export interface SearchRequest {
  q: string;
  /** Inboxes to search (the route resolves the caller's scope). */
  inboxIds: readonly string[];
  before?: string;
  after?: string;
  limit: number;
  cursor: Cursor | null;
}

interface Hit {
  id: number;
  score: number;
  thread_id: string | null;
  ok: 0 | 1;
}

/** Conditions on inbox and time for messages aliased `m` (or unaliased with ''). */
function scopeSql(r: SearchRequest, params: unknown[], m: 'm.' | ''): string {
  const conditions: string[] = [];
  if (r.inboxIds.length === 1) {
    conditions.push(`${m}inbox_id = ?`);
    params.push(r.inboxIds[0]);
  } else {
    conditions.push(`${m}inbox_id IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(r.inboxIds));
  }
  if (r.before) {
    conditions.push(`${m}timestamp < ?`);
    params.push(r.before);
  }
  if (r.after) {
    conditions.push(`${m}timestamp > ?`);
    params.push(r.after);
  }
  return conditions.join(' AND ');
}

/** The best `k` hits in (score, rowid) order, each marked whether it passes scope, time and visibility. */
function bestHits(db: Db, match: string, r: SearchRequest, k: number): Hit[] {
  const params: unknown[] = [];
  const scope = scopeSql(r, params, 'm.');
  // LEFT JOIN keeps FTS5 as the outer loop and every hit in the count, passing or not.
  return prepared(
    db,
    `SELECT h.id, h.score, m.thread_id, (m.id IS NOT NULL AND ${scope} AND ${VISIBLE}) AS ok
     FROM (SELECT rowid AS id, ${RANK} AS score FROM messages_fts WHERE messages_fts MATCH ? ORDER BY score, rowid LIMIT ?) h
     LEFT JOIN messages m ON m.id = h.id ORDER BY h.score, h.id`,
  ).all(...params, match, k) as Hit[];
}

/**
 * Every passing hit, for queries whose best hits mostly fall outside the caller's scope or time
 * range: the scope is taken from the covering index messages_inbox_time first, so only passing
 * hits are joined to their rows.
 */
function allPassingHits(db: Db, match: string, r: SearchRequest): Hit[] {
  const params: unknown[] = [match];
  const scope = scopeSql(r, params, '');
  return prepared(
    db,
    `WITH h AS MATERIALIZED (SELECT rowid AS id, ${RANK} AS score FROM messages_fts WHERE messages_fts MATCH ?)
     SELECT h.id, h.score, m.thread_id, 1 AS ok FROM h CROSS JOIN messages m ON m.id = h.id
     WHERE h.id IN (SELECT id FROM messages WHERE ${scope}) AND ${VISIBLE} ORDER BY h.score, h.id`,
  ).all(...params) as Hit[];
}

const after = (key: [number, number], cursor: Cursor | null) =>
  cursor === null || key[0] > Number(cursor[0]) || (key[0] === Number(cursor[0]) && key[1] > Number(cursor[1]));

/**
 * Walks hits best first, in batches that grow until `want` keys after the cursor are found or
 * every hit has been seen. `keyOf` names the result a passing hit belongs to (a thread or the
 * message itself); a result's key is its first, i.e. best, hit.
 */
function rankedResults(db: Db, r: SearchRequest, keyOf: (h: Hit) => string): { key: string; cursor: [number, number] }[] | null {
  const match = ftsQuery(r.q);
  if (match === null || r.inboxIds.length === 0) return null;
  const want = r.limit + 1;
  for (let k = want * FIRST_BATCH_FACTOR; ; k *= GROWTH) {
    const complete = k > MAX_BATCH;
    const batch = complete ? allPassingHits(db, match, r) : bestHits(db, match, r, k);
    const seen = new Set<string>();
    const results: { key: string; cursor: [number, number] }[] = [];
    for (const h of batch) {
      if (!h.ok) continue;
      const key = keyOf(h);
      if (seen.has(key)) continue;
      seen.add(key);
      if (after([h.score, h.id], r.cursor)) results.push({ key, cursor: [h.score, h.id] });
      if (results.length === want) return results;
    }
    if (complete || batch.length < k) return results;
  }
}

function page<T>(results: { key: string; cursor: [number, number] }[] | null, limit: number, load: (keys: string[]) => T[]): { items: T[]; next: Cursor | null } {
  if (!results) return { items: [], next: null };
  const more = results.length > limit;
  const shown = results.slice(0, limit);
  return { items: load(shown.map((x) => x.key)), next: more ? shown[shown.length - 1].cursor : null };
}

/** Messages, best match first. */
export function searchMessages(db: Db, r: SearchRequest): { items: MessageItem[]; next: Cursor | null } {
  return page(
    rankedResults(db, r, (h) => String(h.id)),
    r.limit,
    (keys) => {
      const rows = prepared(db, `SELECT ${MESSAGE_ITEM_COLUMNS} FROM messages m WHERE m.id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(keys.map(Number))) as MessageRow[];
      const byId = new Map(rows.map((row) => [String(row.id), row]));
      return messageItems(
        db,
        keys.flatMap((key) => byId.get(key) ?? []),
      );
    },
  );
}

/** Threads ranked by their best-matching visible message. */
export function searchThreads(db: Db, r: SearchRequest): { items: ThreadItem[]; next: Cursor | null } {
  return page(
    rankedResults(db, r, (h) => h.thread_id!),
    r.limit,
    (keys) => {
      const threads = prepared(db, `SELECT ${LISTED_THREAD_COLUMNS} FROM threads t WHERE t.thread_id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(keys)) as ListedThreadRow[];
      const byId = new Map(threads.map((t) => [t.thread_id, t]));
      return listedSummaries(
        db,
        keys.flatMap((key) => byId.get(key) ?? []),
        SEARCH_VISIBILITY,
      );
    },
  );
}
