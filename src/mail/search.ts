/**
 * Full-text search over messages_fts (subject, participants, body), ranked by bm25 with the
 * subject weighted highest. Search never returns hidden mail. Results are keyset-paged on
 * (score, id); page tokens are bound to the index generation by the routes, so a score never
 * changes under a token.
 */
import type { Db } from '../db/open.js';
import type { Cursor } from '../http/pagination.js';
import { SEARCH_VISIBILITY, visibleSql } from './labels.js';
import { messageItems } from './messages.js';
import { threadSummaries } from './threads.js';
import { MESSAGE_ITEM_COLUMNS, type MessageItem, type MessageRow, type ThreadItem, type ThreadRow } from './serialize.js';
import { prepared } from './statements.js';

export const MAX_QUERY_LENGTH = 512;
/** Column weights for bm25: subject, participants, body. */
const RANK = 'bm25(messages_fts, 10.0, 4.0, 1.0)';
const VISIBLE = visibleSql('m', SEARCH_VISIBILITY);
/** Ranked hits; materialized because bm25() only works where the FTS table is queried directly. */
const HITS = `WITH h AS MATERIALIZED (SELECT rowid AS id, ${RANK} AS score FROM messages_fts WHERE messages_fts MATCH ?)`;

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

function scopeSql(inboxIds: readonly string[], params: unknown[]): string {
  if (inboxIds.length === 1) {
    params.push(inboxIds[0]);
    return 'm.inbox_id = ?';
  }
  params.push(JSON.stringify(inboxIds));
  return 'm.inbox_id IN (SELECT value FROM json_each(?))';
}

function timeSql(r: SearchRequest, where: string[], params: unknown[]): void {
  if (r.before) {
    where.push('m.timestamp < ?');
    params.push(r.before);
  }
  if (r.after) {
    where.push('m.timestamp > ?');
    params.push(r.after);
  }
}

/** Messages, best match first. */
export function searchMessages(db: Db, r: SearchRequest): { items: MessageItem[]; next: Cursor | null } {
  const match = ftsQuery(r.q);
  if (match === null || r.inboxIds.length === 0) return { items: [], next: null };
  const params: unknown[] = [match];
  const where = [scopeSql(r.inboxIds, params), VISIBLE];
  timeSql(r, where, params);
  if (r.cursor) {
    where.push('(h.score > ? OR (h.score = ? AND m.id > ?))');
    params.push(r.cursor[0], r.cursor[0], r.cursor[1]);
  }
  const rows = prepared(
    db,
    `${HITS} SELECT ${MESSAGE_ITEM_COLUMNS}, h.score FROM h JOIN messages m ON m.id = h.id WHERE ${where.join(' AND ')} ORDER BY h.score, m.id LIMIT ?`,
  ).all(...params, r.limit + 1) as (MessageRow & { score: number })[];
  const more = rows.length > r.limit;
  if (more) rows.length = r.limit;
  const last = rows[rows.length - 1];
  return { items: messageItems(db, rows), next: more ? [last.score, last.id] : null };
}

/** Threads ranked by their best-matching visible message. */
export function searchThreads(db: Db, r: SearchRequest): { items: ThreadItem[]; next: Cursor | null } {
  const match = ftsQuery(r.q);
  if (match === null || r.inboxIds.length === 0) return { items: [], next: null };
  const params: unknown[] = [match];
  const where = [scopeSql(r.inboxIds, params), VISIBLE];
  timeSql(r, where, params);
  let having = '';
  if (r.cursor) {
    having = 'HAVING min(h.score) > ? OR (min(h.score) = ? AND m.thread_id > ?)';
    params.push(r.cursor[0], r.cursor[0], r.cursor[1]);
  }
  const hits = prepared(
    db,
    `${HITS} SELECT m.thread_id, min(h.score) AS score FROM h JOIN messages m ON m.id = h.id WHERE ${where.join(' AND ')} GROUP BY m.thread_id ${having} ORDER BY score, m.thread_id LIMIT ?`,
  ).all(...params, r.limit + 1) as { thread_id: string; score: number }[];
  const more = hits.length > r.limit;
  if (more) hits.length = r.limit;
  const threads = prepared(db, 'SELECT t.rowid AS rid, t.thread_id, t.inbox_id, t.subject, t.created_at, t.updated_at FROM threads t WHERE t.thread_id IN (SELECT value FROM json_each(?))').all(
    JSON.stringify(hits.map((h) => h.thread_id)),
  ) as ThreadRow[];
  const byId = new Map(threads.map((t) => [t.thread_id, t]));
  const last = hits[hits.length - 1];
  return {
    items: threadSummaries(
      db,
      hits.flatMap((h) => byId.get(h.thread_id) ?? []),
      SEARCH_VISIBILITY,
    ),
    next: more ? [last.score, last.thread_id] : null,
  };
}
