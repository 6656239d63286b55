/**
 * Full-text search over the sharded search index (subject, participants, body), ranked by bm25 with the
 * subject weighted highest. Search never returns hidden mail.
 *
 * Ranking is exact bm25 within bands of passing matches (in scope, in the time range, visible),
 * newest first: the first band is the newest BAND passing matches, ranked best first; the next
 * band is the BAND before it, and so on. A query with up to BAND passing matches (nearly every
 * real one) is therefore ranked exactly as bm25 over all of them; a broad one shows the best of
 * the recent mail first instead of scoring every match, which costs about a microsecond per
 * match (about 17 ms for the 18,750 matches of a broad query at 100,000 messages, issue 19;
 * docs/mail-store.md, "Search", and docs/benchmarks.md).
 *
 * The index is in shards by row id (src/mail/search-index.ts), each with its own bm25 IDF, read
 * newest first; a band lies in one shard, so a query's cost follows the shards it reads, not the
 * store. A band is read from FTS5 newest first joined to its message for the scope, time and
 * visibility checks, so only passing matches are scored. A thread is listed once, in the band of
 * its newest passing match, at its best hit there; the order key of a thread or message is its
 * (band, score, rowid), which is also the keyset cursor. Page tokens are bound to the index
 * generation by the routes, so bands and scores never change under a token.
 *
 * A search of a few inboxes matches their tagged words in a shard that has them (migration 36,
 * src/mail/search-index.ts), so it reads their postings only, not every inbox's.
 */
import type { Db } from '../db/open.js';
import type { Cursor } from '../core/pagination.js';
import { ApiError } from '../core/errors.js';
import { SEARCH_VISIBILITY, visibleSql } from './labels.js';
import { messageItems } from './messages.js';
import { LISTED_THREAD_COLUMNS, listedSummaries, type ListedThreadRow } from './threads.js';
import { MESSAGE_ITEM_COLUMNS, type MessageItem, type MessageRow, type ThreadItem } from './serialize.js';
import { prepared } from '../db/statements.js';
import { byShard, isScoped, PLAIN_COLUMNS, SCOPED_COLUMNS, scopeTag, shardCeiling, shardFloor, shardLayout, shardOf, shardSpan, shardsAbove, shardsFrom, shardTable, taggable, wordsOf, type ShardLayout } from './search-index.js';

export const MAX_QUERY_LENGTH = 512;
/** Column weights for bm25: subject, participants, body (and their scoped words in a scoped shard). */
const rank = (table: string, scoped: boolean) => `bm25(${table}, 10.0, 4.0, 1.0${scoped ? ', 10.0, 4.0, 1.0' : ''})`;
/** Passing matches ranked together: exact bm25 below this many, newest bands of it above. */
export const BAND = 500;
/** A scope of at most this many messages is gathered first (smallScope). */
const SMALL_SCOPE = 5000;
/**
 * A larger scope's share of one shard is gathered when it is at most this many (a quarter of a
 * shard); a scope that fills more of a shard passes most of its matches, so checking each match's
 * row costs little more than gathering would (shardScope).
 */
const SHARD_SCOPE = 2048;
/**
 * The index entries one shard's gather reads at most (its time span may hold entries of the scope
 * outside the shard's row ids, mail stored late), and the inboxes it seeks at most: each inbox is
 * a seek per shard reached, so an instance-wide search of many inboxes checks matches instead.
 */
const SHARD_SCOPE_SCAN = 4 * SHARD_SCOPE;
const SHARD_SCOPE_INBOXES = 32;
/**
 * A search of at most this many inboxes matches their tagged words in a scoped shard (one phrase
 * per inbox and query word, src/mail/search-index.ts), while those phrases hold at most
 * SCOPED_TOKENS words in all; a wider one matches the untagged words. (A query of 256 one-letter
 * words over 16 inboxes took 0.65 s tagged against 0.15 s untagged.)
 */
const SCOPED_INBOXES = 16;
const SCOPED_TOKENS = 64;
/** A tagged search gathers a scope of at most this many messages first, to skip shards holding none of it. */
const TAGGED_SMALL_SCOPE = 500;
/** Above every rowid: the top of the first band. */
const NO_TOP = Number.MAX_SAFE_INTEGER;
const VISIBLE = visibleSql('m', SEARCH_VISIBILITY);

/**
 * Free text → an FTS5 query that cannot be a syntax error: every whitespace-separated word
 * becomes a quoted phrase (so `a@b.com` matches its tokens in order), all of them required;
 * a trailing `*` keeps its prefix meaning. Null when nothing searchable is left.
 */
export function ftsQuery(q: string): string | null {
  const phrases = queryWords(q).map(({ text, prefix }) => `"${text.replace(/"/g, '""')}"${prefix ? ' *' : ''}`);
  return phrases.length ? phrases.join(' ') : null;
}

/** The searchable words of a query: each without its trailing `*`, which `prefix` records. Control characters separate words (a NUL would end FTS5's query text). */
function queryWords(q: string): { text: string; prefix: boolean }[] {
  return q
    .replace(/\p{Cc}/gu, ' ')
    .split(/\s+/)
    .filter((word) => /[\p{L}\p{N}]/u.test(word))
    .map((word) => {
      const prefix = word.endsWith('*');
      return { text: prefix ? word.slice(0, -1) : word, prefix };
    });
}

/**
 * The query over a scoped shard's tagged words of `inboxIds`: each query word a phrase of its
 * words (split as the index splits them) tagged with an inbox, one phrase per inbox, and every
 * query word required. The words hold only letters and digits, so nothing needs quoting.
 */
function scopedQuery(q: string, inboxIds: readonly string[]): string {
  const words = queryWords(q).map(({ text, prefix }) => {
    const phrases = inboxIds.map((id) => `"${wordsOf(text).map((w) => scopeTag(id) + w).join(' ')}"${prefix ? ' *' : ''}`);
    return phrases.length === 1 ? phrases[0] : `(${phrases.join(' OR ')})`;
  });
  return `${SCOPED_COLUMNS} : (${words.join(' AND ')})`;
}

/**
 * Whether a search matches tagged words in scoped shards: a few inboxes, a bounded number of
 * tagged words, and every letter and digit of the query taggable. Its page tokens carry the
 * answer, since scores of tagged and untagged words differ (`rankedResults`).
 */
function isNarrow(r: SearchRequest): boolean {
  if (r.inboxIds.length > SCOPED_INBOXES || !taggable(r.q)) return false;
  const words = queryWords(r.q).reduce((n, { text }) => n + wordsOf(text).length, 0);
  return r.inboxIds.length * words <= SCOPED_TOKENS;
}

/** How one shard is searched: the FTS5 query, and whether the shard has the scoped columns. */
interface ShardQuery {
  match: string;
  scoped: boolean;
}

/**
 * The queries of one search, by shard: a scoped shard searched for at most SCOPED_INBOXES
 * inboxes matches their tagged words; a scoped shard searched wider matches only its untagged
 * columns; an older shard has only those.
 */
function shardQueries(r: SearchRequest, layout: ShardLayout, plain: string, narrow: boolean): (k: number) => ShardQuery & { tagged: boolean } {
  let tagged: string | null = null;
  return (k) => {
    if (!isScoped(layout, k)) return { match: plain, scoped: false, tagged: false };
    if (!narrow) return { match: `${PLAIN_COLUMNS} : (${plain})`, scoped: true, tagged: false };
    tagged ??= scopedQuery(r.q, r.inboxIds);
    return { match: tagged, scoped: true, tagged: true };
  };
}

export interface SearchRequest {
  q: string;
  /** Inboxes to search (the route resolves the caller's scope). */
  inboxIds: readonly string[];
  before?: string;
  after?: string;
  limit: number;
  cursor: Cursor | null;
  /** The largest scope gathered first (smallScope); SMALL_SCOPE unless a test sets it. */
  smallScope?: number;
}

/** A passing hit of a band, best first, with the band's bounds and size on every row. */
type BandRow = [id: number, score: number, threadId: string, top: number, floor: number, size: number];

/**
 * Conditions on inbox and time for messages aliased `alias`. With `unindexed` they are checked on
 * the rows another index found (`+m.inbox_id` keeps SQLite from scanning the inbox by its index).
 */
function scopeSql(r: SearchRequest, params: unknown[], alias = 'm', unindexed = false): string {
  const m = `${unindexed ? '+' : ''}${alias}.`;
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

/**
 * The ids of the caller's scope and time range, by shard, when they are at most SMALL_SCOPE
 * messages (read on the covering index, never past that); null for a larger scope. A match
 * outside a small scope is then rejected against the shard's share of the ids before its message
 * is looked up, and a shard holding none of them is not read at all: without that, a search
 * whose newest matches fall outside the scope (a small inbox of a large store, a `before` far
 * back) costs a row lookup, often a page read and decryption, for every newer match: 0.3 s at
 * 100,000 messages against 9–15 ms (docs/mail-store.md). Counting up to 5,000 costs 0.5 ms; up
 * to 20,000, 1.7 ms on every search. Gathering a large scope costs more than
 * it saves when its newest matches pass, as in a whole busy inbox.
 */
function smallScope(db: Db, r: SearchRequest, limit = r.smallScope ?? SMALL_SCOPE): Map<number, number[]> | null {
  const params: unknown[] = [];
  const scope = scopeSql(r, params, 's');
  const ids = prepared(db, `SELECT s.id FROM messages s WHERE ${scope} LIMIT ?`).pluck().all(...params, limit + 1) as number[];
  return ids.length > limit ? null : byShard(db, ids);
}

/**
 * A scope too large to gather whole (smallScope), gathered one shard at a time as search reaches
 * it: the scope's messages in shard `k`, from the (inbox_id, timestamp) index within the shard's
 * time span, which holds every message of the shard (src/mail/search-index.ts), so no message row
 * is read. An inbox of 20,000 in a store of 1,000,000 has about 160 in a shard, while the shard's
 * matches for common words are thousands; without this each match's row is looked up (a page read
 * and decryption) only to find it is another inbox's. Undefined when the shard holds none of the
 * scope (the shard is skipped); null when the span is unknown or the share is over SHARD_SCOPE
 * (each match's row is checked instead).
 */
function shardScope(db: Db, r: SearchRequest, layout: ShardLayout, k: number): number[] | null | undefined {
  if (r.inboxIds.length > SHARD_SCOPE_INBOXES) return null;
  const span = shardSpan(db, k);
  if (span === null) return null;
  const params: unknown[] = [];
  const scope = scopeSql(r, params, 's');
  params.push(span.firstAt, span.lastAt, SHARD_SCOPE_SCAN + 1);
  const inSpan = prepared(db, `SELECT s.id FROM messages s INDEXED BY messages_inbox_time WHERE ${scope} AND s.timestamp BETWEEN ? AND ? LIMIT ?`)
    .pluck()
    .all(...params) as number[];
  if (inSpan.length > SHARD_SCOPE_SCAN) return null;
  const [floor, ceiling] = [shardFloor(layout, k), shardCeiling(layout, k)];
  const ids = inSpan.filter((id) => id >= floor && id <= ceiling);
  if (ids.length > SHARD_SCOPE) return null;
  return ids.length === 0 ? undefined : ids;
}

/**
 * Whether the scope may have a message in shard `k` within the request's time range: one in the
 * shard's time span, from the (inbox_id, timestamp) index (a seek per inbox). For a tagged search
 * with a time range: the tagged words already hold only the scope's mail, so this spares the
 * full-text query of a shard the range leaves none of (each match's row would be read to fail it).
 */
function scopeInShard(db: Db, r: SearchRequest, k: number): boolean {
  const span = shardSpan(db, k);
  if (span === null) return true;
  const params: unknown[] = [];
  const scope = scopeSql(r, params, 's');
  return prepared(db, `SELECT 1 FROM messages s INDEXED BY messages_inbox_time WHERE ${scope} AND s.timestamp BETWEEN ? AND ? LIMIT 1`).get(...params, span.firstAt, span.lastAt) !== undefined;
}

/**
 * The conditions every passing match meets, for the shard table `table` joined to its message
 * `m`. In a small scope, `+<table>.rowid` (not offered to FTS5, which would probe once per id) is
 * checked against the scope's ids first.
 */
function passingSql(r: SearchRequest, params: unknown[], scopeIds: number[] | null, table: string): string {
  let scopeFirst = '';
  if (scopeIds) {
    scopeFirst = `+${table}.rowid IN (SELECT value FROM json_each(?)) AND `;
    params.push(JSON.stringify(scopeIds));
  }
  return `${scopeFirst}${scopeSql(r, params)} AND ${VISIBLE}`;
}

/**
 * Whether a band checks its matches in `messages_search` (migration 37) instead of their rows: a
 * search of one inbox without a time range. That index holds (inbox_id, id, thread_id) of every
 * message without a hidden label, so a match passes when it has an entry there, and an inbox's
 * entries in one shard lie in a page or two, where each message row is a page of its own at
 * scale. A search of several inboxes would seek the index once per inbox and match, and a time
 * range needs the row's timestamp: both check the row.
 */
const keyed = (r: SearchRequest): boolean => r.inboxIds.length === 1 && !r.before && !r.after;

/**
 * The band of the newest BAND passing matches at or below rowid `top` in shard `k`, best first.
 * FTS5 is the outer loop in rowid order (CROSS JOIN), so bm25 runs only for passing matches of
 * the band, with the IDF of the shard's own messages (src/mail/search-index.ts).
 */
function band(db: Db, query: ShardQuery, r: SearchRequest, scopeIds: number[] | null, top: number, k: number): IterableIterator<BandRow> {
  const table = shardTable(k);
  let join: string;
  let passing: string;
  const params: unknown[] = [];
  // A band from the top of its shard (a walk's first band in a shard, unless a page token resumes
  // inside it) has no bound: FTS5 read newest first from a rowid bound costs about 20 µs more a
  // band than from the end of the doclists.
  const bound = top < shardCeiling(shardLayout(db), k) ? [top] : [];
  const below = bound.length ? ` AND ${table}.rowid <= ?` : '';
  if (keyed(r)) {
    join = `messages m INDEXED BY messages_search ON m.inbox_id = ? AND m.id = ${table}.rowid AND m.hidden = 0`;
    params.push(r.inboxIds[0], query.match, ...bound);
    passing = '1 = 1';
    if (scopeIds) {
      passing = `+${table}.rowid IN (SELECT value FROM json_each(?))`;
      params.push(JSON.stringify(scopeIds));
    }
  } else {
    join = `messages m ON m.id = ${table}.rowid`;
    params.push(query.match, ...bound);
    passing = passingSql(r, params, scopeIds, table);
  }
  return prepared(
    db,
    `WITH band AS MATERIALIZED (
       SELECT ${table}.rowid AS id, ${rank(table, query.scoped)} AS score, m.thread_id
       FROM ${table} CROSS JOIN ${join}
       WHERE ${table} MATCH ?${below} AND ${passing}
       ORDER BY ${table}.rowid DESC LIMIT ${BAND})
     SELECT id, score, thread_id, (SELECT max(id) FROM band), (SELECT min(id) FROM band), (SELECT count(*) FROM band)
     FROM band ORDER BY score, id`,
  )
    .raw(true)
    .iterate(...params) as IterableIterator<BandRow>;
}

/**
 * A check, for one band, of whether a thread has a passing match above rowid `top`, i.e. was
 * listed in an earlier band. A thread's newer passing messages come from its own index (most
 * threads have none), and only when one has some are the matches above `top` read, once for the
 * band, as rowids: no full-text probe per message, which a long thread made cost seconds.
 */
function listedAbove(db: Db, queryOf: (k: number) => ShardQuery, r: SearchRequest, top: number): (threadId: string) => boolean {
  let matchesAbove: Set<number> | null = null;
  return (threadId) => {
    const params: unknown[] = [threadId, top];
    const scope = scopeSql(r, params, 'm', true);
    const newer = prepared(db, `SELECT m.id FROM messages m WHERE m.thread_id = ? AND m.id > ? AND ${scope} AND ${VISIBLE}`)
      .pluck()
      .all(...params) as number[];
    if (newer.length === 0) return false;
    matchesAbove ??= matchesAboveRowid(db, queryOf, top);
    return newer.some((id) => matchesAbove!.has(id));
  };
}

/** The rowids of every match above `top`: in its shard above it, and in every newer shard. */
function matchesAboveRowid(db: Db, queryOf: (k: number) => ShardQuery, top: number): Set<number> {
  const k = shardOf(shardLayout(db), top);
  const found = new Set<number>();
  for (const shard of [k, ...shardsAbove(db, k)]) {
    const table = shardTable(shard);
    for (const id of prepared(db, `SELECT rowid FROM ${table} WHERE ${table} MATCH ? AND rowid > ?`).pluck().iterate(queryOf(shard).match, top) as IterableIterator<number>) found.add(id);
  }
  return found;
}

const isAfter = (score: number, id: number, cursor: [number, number] | null) => cursor === null || score > cursor[0] || (score === cursor[0] && id > cursor[1]);

const staleCursor = () =>
  new ApiError('page_token_stale', 'The page_token belongs to an earlier version of search.', { fix: 'Start again without page_token.' });

/**
 * Walks bands from the cursor's, best first within each, until `want` results after the cursor
 * are found or no band is left. `keyOf` names the result a hit belongs to (a thread or the
 * message itself); `once` says results may repeat across hits (threads): a result is shown at its
 * first (best) hit in its band, and not in a later band when it has a passing match above it.
 */
function rankedResults(db: Db, r: SearchRequest, keyOf: (h: BandRow) => string, once: boolean): { key: string; cursor: Cursor }[] | null {
  const match = ftsQuery(r.q);
  if (match === null || r.inboxIds.length === 0) return null;
  // A token's fifth member says whether its scores are of tagged words: one made before the scope
  // crossed SCOPED_INBOXES (an inbox created or deleted between pages) would compare scores of the
  // other kind, so it is stale.
  const narrow = isNarrow(r) ? 1 : 0;
  if (r.cursor && (r.cursor.length !== 5 || !r.cursor.every((v) => typeof v === 'number') || r.cursor[4] !== narrow)) throw staleCursor();
  const want = r.limit + 1;
  const results: { key: string; cursor: Cursor }[] = [];
  let [index, top] = r.cursor ? [r.cursor[0] as number, r.cursor[1] as number] : [0, NO_TOP];
  let after: [number, number] | null = r.cursor ? [r.cursor[2] as number, r.cursor[3] as number] : null;
  const layout = shardLayout(db);
  const queryOf = shardQueries(r, layout, match, narrow === 1);
  // The scope gathered whole (smallScope), once a shard whose words are not tagged needs it; and
  // for tagged shards, when it is at most TAGGED_SMALL_SCOPE messages.
  let small: Map<number, number[]> | null | undefined;
  let few: Map<number, number[]> | null | undefined;
  let emptyTagged = 0;
  // Results already shown in a band this walk passed: a later band skips them without a query.
  // Only bands above the walk's start (a later page's) need the index (listedAbove), once.
  const listedEarlier = new Set<string>();
  const listedBeforeStart = once && index > 0 ? listedAbove(db, queryOf, r, top) : null;
  // Shards newest first from the one `top` is in; within a shard, bands from `top` down. A band
  // never spans two shards, so its scores all come from one shard's IDF.
  for (const k of shardsFrom(db, shardOf(layout, top))) {
    const query = queryOf(k);
    let scopeIds: number[] | null | undefined;
    if (query.tagged) {
      // The match itself is the scope's. A scope of up to TAGGED_SMALL_SCOPE messages is gathered
      // once, and a shard without any of them skipped: a small inbox of a large store searched for
      // a word it lacks would otherwise look the word up in every shard. Without a time range it
      // is gathered only once two tagged bands have found nothing: a busy inbox finds its words in
      // nearly every shard (the newest, partly filled, may lack them), and reading its first
      // TAGGED_SMALL_SCOPE messages only to give up cost 0.06–0.15 ms of a 1.6 ms search at
      // 1,000,000 messages. A larger scope with a time range skips a shard the range leaves
      // nothing of (each match's row would be read only to fail the range); without one, looking
      // for the scope in the shard costs about what the match costs when it finds nothing.
      if (few === undefined && (r.before || r.after || emptyTagged >= 2)) few = smallScope(db, r, Math.min(TAGGED_SMALL_SCOPE, r.smallScope ?? TAGGED_SMALL_SCOPE));
      if (few) scopeIds = few.has(k) ? null : undefined;
      else scopeIds = (r.before || r.after) && !scopeInShard(db, r, k) ? undefined : null;
    } else {
      // null (too large to gather) is an answer too; a scope the tagged shards gathered is the whole scope already.
      if (small === undefined) small = few ?? smallScope(db, r);
      scopeIds = small ? small.get(k) : shardScope(db, r, layout, k);
    }
    // A scope with nothing in this shard: no match here can pass.
    if (scopeIds === undefined) {
      after = null;
      continue;
    }
    for (;;) {
      const seen = new Set<string>();
      let next: { top: number; floor: number; size: number } | null = null;
      for (const hit of band(db, query, r, scopeIds, top, k)) {
        next ??= { top: hit[3], floor: hit[4], size: hit[5] };
        const key = keyOf(hit);
        if (seen.has(key)) continue;
        seen.add(key);
        if (!isAfter(hit[1], hit[0], after)) continue;
        if (once && (listedEarlier.has(key) || listedBeforeStart?.(key))) continue;
        results.push({ key, cursor: [index, next.top, hit[1], hit[0], narrow] });
        if (results.length === want) return results; // leaving the loop ends the statement
      }
      if (once) for (const key of seen) listedEarlier.add(key);
      // An empty band lists nothing, so the next one keeps its number.
      if (next !== null) [index, after] = [index + 1, null];
      else if (query.tagged) emptyTagged++;
      if (next === null || next.size < BAND) break;
      top = next.floor - 1;
    }
    [top, after] = [shardFloor(layout, k) - 1, null];
    if (top < 0) break;
  }
  return results;
}

function page<T>(results: { key: string; cursor: Cursor }[] | null, limit: number, load: (keys: string[]) => T[]): { items: T[]; next: Cursor | null } {
  if (!results) return { items: [], next: null };
  const more = results.length > limit;
  const shown = results.slice(0, limit);
  return { items: load(shown.map((x) => x.key)), next: more ? shown[shown.length - 1].cursor : null };
}

/** Messages, best match first. */
export function searchMessages(db: Db, r: SearchRequest): { items: MessageItem[]; next: Cursor | null } {
  return page(
    rankedResults(db, r, (h) => String(h[0]), false),
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
    rankedResults(db, r, (h) => h[2], true),
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
