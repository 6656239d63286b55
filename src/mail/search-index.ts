/**
 * The search index in shards by message row id (migration 31; docs/mail-store.md, "Search").
 *
 * FTS5's bm25 computes each query word's IDF on every query by walking the word's whole posting
 * list, so one index over every message made ranked search grow with the store: measured 341 ms
 * at a million messages against 4 ms at 10,000 for two common words. Shard `k` holds the messages
 * whose row id is in [k << bits, (k + 1) << bits), 8,192 of them at most, in an FTS5 table of its
 * own (`messages_fts_<k>`), so a query pays for the shards it reads, each bounded, and search reads
 * the newest first. Row ids below `legacy_end` (the mail stored before migration 31) stay in
 * `messages_fts`, shard -1, as they were indexed.
 *
 * A shard's table is made with its first message, in that message's transaction, and listed in
 * `search_shards`; the writers here are the only code that touches the shard tables.
 *
 * Scoped words (migration 36). Mail of every inbox shares a shard, so a search of one inbox of 50
 * read every inbox's postings of its words to find its own: the common words of a shard are
 * thousands of entries, the inbox's share of them a fiftieth. A shard from `scoped_from` on also
 * holds each message's words tagged with its inbox (`s_subject`, `s_participants`, `s_body`:
 * every word prefixed with the inbox's tag, scopeTag), so a search of a few inboxes matches their
 * tagged words and reads only their postings. The untagged columns serve searches of many
 * inboxes. The tagged words are runs of TAGGABLE characters only: letters and digits of scripts
 * every SQLite version's tokenizer (unicode61) knows as such, and the combining diacritics it keeps
 * inside a word and removes; every other character separates them. So SQLite splits a tagged text
 * exactly where it was split here, and the tag stays joined to each whole word (a letter newer
 * than SQLite's tables would split a word after the tag, and a prefix search could then end in
 * the bare tag). A query with any other letter or digit is searched by its untagged words
 * (src/mail/search.ts `taggable`). Case and diacritics are folded by the tokenizer afterwards.
 */
import { createHash } from 'node:crypto';
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';

/** Shard of the mail indexed before migration 31, in `messages_fts`. */
export const LEGACY_SHARD = -1;

export interface ShardLayout {
  /** A shard spans 2^bits row ids. */
  bits: number;
  /** Row ids below this are in the legacy shard. */
  legacyEnd: number;
  /** Shards from this one on also hold the scoped words. */
  scopedFrom: number;
}

const layouts = new WeakMap<Db, ShardLayout>();

/** The home's layout (fixed by migration 31), read once per connection. */
export function shardLayout(db: Db): ShardLayout {
  let layout = layouts.get(db);
  if (!layout) {
    const row = prepared(db, 'SELECT bits, legacy_end, scoped_from FROM search_layout WHERE id = 1').get() as { bits: number; legacy_end: number; scoped_from: number };
    layout = { bits: row.bits, legacyEnd: row.legacy_end, scopedFrom: row.scoped_from };
    layouts.set(db, layout);
  }
  return layout;
}

export const shardOf = (layout: ShardLayout, rowid: number): number => (rowid < layout.legacyEnd ? LEGACY_SHARD : Math.floor(rowid / 2 ** layout.bits));

/** The FTS5 table of shard `k` (a number, so the name is safe to put in SQL). */
export const shardTable = (k: number): string => (k === LEGACY_SHARD ? 'messages_fts' : `messages_fts_${Math.trunc(k)}`);

/** Whether shard `k` holds the scoped words. */
export const isScoped = (layout: ShardLayout, k: number): boolean => k !== LEGACY_SHARD && k >= layout.scopedFrom;

/** The untagged and the tagged columns of a scoped shard, as FTS5 column filters. */
export const PLAIN_COLUMNS = '{subject participants body}';
export const SCOPED_COLUMNS = '{s_subject s_participants s_body}';

/**
 * Characters a tagged word is made of: ASCII letters and digits, the Latin-1 and Latin Extended-A
 * and -B letters, the basic Greek letters, Cyrillic, hiragana, katakana, the CJK ideographs of Unicode 6.1,
 * Hangul syllables (all letters to unicode61 since Unicode 6.1), and the combining diacritics
 * U+0300–U+0331, which unicode61 keeps inside a word and removes.
 */
const TAGGABLE_CHAR = '(?:(?=[\\p{L}\\p{N}])[0-9A-Za-z\\u00C0-\\u024F\\u0386-\\u03CE\\u0400-\\u04FF\\u3041-\\u3096\\u30A1-\\u30FA\\u4E00-\\u9FCB\\uAC00-\\uD7A3]|[\\u0300-\\u0331])';
const TAGGABLE_WORD = new RegExp(`${TAGGABLE_CHAR}+`, 'gu');
const UNTAGGABLE = new RegExp(`(?!${TAGGABLE_CHAR})[\\p{L}\\p{N}]`, 'u');

/** The words of a text as they are tagged: runs of taggable characters. */
export const wordsOf = (text: string): string[] => text.match(TAGGABLE_WORD) ?? [];

/** Whether every letter and digit of `text` is taggable, so its tagged words find what its untagged words find. */
export const taggable = (text: string): boolean => !UNTAGGABLE.test(text);

const TAG_LENGTH = 8;
const tags = new Map<string, string>();

/**
 * An inbox's tag: 40 bits of the SHA-256 of its id, in base 36, always TAG_LENGTH characters, so
 * a tagged word is the tag followed by the word, never ambiguous. Two inboxes sharing a tag only
 * cost their searches each other's postings: search still checks every match's inbox.
 */
export function scopeTag(inboxId: string): string {
  let tag = tags.get(inboxId);
  if (tag === undefined) {
    tag = createHash('sha256').update(inboxId).digest().readUIntBE(0, 5).toString(36).padStart(TAG_LENGTH, '0');
    if (tags.size >= 10_000) tags.clear();
    tags.set(inboxId, tag);
  }
  return tag;
}

/** What the index holds of a message: its text, and the same words tagged with its inbox. */
export interface SearchText {
  subject: string;
  participants: string;
  body: string;
  scoped: [subject: string, participants: string, body: string];
}

/**
 * A message's search text for inbox `inboxId`. The tagged words are made here, from text already
 * bounded (MAX_INDEXED_BODY), so a caller can make them before its transaction.
 */
export function searchText(inboxId: string, subject: string, participants: string, body: string): SearchText {
  const tag = scopeTag(inboxId);
  const tagged = (text: string) => wordsOf(text).map((w) => tag + w).join(' ');
  return { subject, participants, body, scoped: [tagged(subject), tagged(participants), tagged(body)] };
}

/** The lowest row id shard `k` holds. */
export const shardFloor = (layout: ShardLayout, k: number): number => (k === LEGACY_SHARD ? 0 : Math.max(k * 2 ** layout.bits, layout.legacyEnd));

/** The shards that exist at or below shard `k`, newest first (the legacy shard last). */
export function shardsFrom(db: Db, k: number): number[] {
  return prepared(db, 'SELECT k FROM search_shards WHERE k <= ? ORDER BY k DESC').pluck().all(k) as number[];
}

/** Every shard that exists above shard `k`, oldest first. */
export function shardsAbove(db: Db, k: number): number[] {
  return prepared(db, 'SELECT k FROM search_shards WHERE k > ? ORDER BY k').pluck().all(k) as number[];
}

/**
 * Indexes a message in its shard, making the shard's table when this is its first message, and
 * widens the shard's time span (`first_at`..`last_at`, migration 33) to the message's timestamp:
 * search finds a scope's share of a shard by that span (src/mail/search.ts shardScope), so the span
 * must hold every message of the shard. Runs inside the caller's transaction.
 */
export function indexMessage(db: Db, rowid: number, timestamp: string, text: SearchText): void {
  const layout = shardLayout(db);
  const k = shardOf(layout, rowid);
  const scoped = isScoped(layout, k);
  const span = prepared(db, 'SELECT first_at, last_at, merged FROM search_shards WHERE k = ?').get(k) as { first_at: string | null; last_at: string | null; merged: number } | undefined;
  // A merged shard written to again (an attachment's text indexed later) is merged again (src/db/search-merge.ts).
  if (span?.merged === 1) prepared(db, 'UPDATE search_shards SET merged = 0 WHERE k = ?').run(k);
  if (!span) {
    prepared(db, 'INSERT INTO search_shards (k, first_at, last_at) VALUES (?, ?, ?)').run(k, timestamp, timestamp);
    if (k !== LEGACY_SHARD) {
      const columns = scoped ? 'subject, participants, body, s_subject, s_participants, s_body' : 'subject, participants, body';
      db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS ${shardTable(k)} USING fts5 (${columns}, tokenize = 'unicode61 remove_diacritics 2', content = '', contentless_delete = 1)`);
    }
  } else if (span.first_at === null || span.last_at === null || timestamp < span.first_at || timestamp > span.last_at) {
    prepared(db, 'UPDATE search_shards SET first_at = min(coalesce(first_at, ?), ?), last_at = max(coalesce(last_at, ?), ?) WHERE k = ?').run(timestamp, timestamp, timestamp, timestamp, k);
  }
  if (scoped) {
    prepared(db, `INSERT INTO ${shardTable(k)} (rowid, subject, participants, body, s_subject, s_participants, s_body) VALUES (?, ?, ?, ?, ?, ?, ?)`).run(rowid, text.subject, text.participants, text.body, ...text.scoped);
  } else {
    prepared(db, `INSERT INTO ${shardTable(k)} (rowid, subject, participants, body) VALUES (?, ?, ?, ?)`).run(rowid, text.subject, text.participants, text.body);
  }
}

/** The time span of shard `k`'s messages (every one's timestamp lies in it); null when not known. */
export function shardSpan(db: Db, k: number): { firstAt: string; lastAt: string } | null {
  const row = prepared(db, 'SELECT first_at, last_at FROM search_shards WHERE k = ?').get(k) as { first_at: string | null; last_at: string | null } | undefined;
  return row?.first_at != null && row.last_at != null ? { firstAt: row.first_at, lastAt: row.last_at } : null;
}

/** The highest row id shard `k` holds. */
export const shardCeiling = (layout: ShardLayout, k: number): number => (k === LEGACY_SHARD ? layout.legacyEnd - 1 : (k + 1) * 2 ** layout.bits - 1);

/** Message row ids grouped by their shard. */
export function byShard(db: Db, rowids: readonly number[]): Map<number, number[]> {
  const layout = shardLayout(db);
  const groups = new Map<number, number[]>();
  for (const rowid of rowids) {
    const k = shardOf(layout, rowid);
    const ids = groups.get(k);
    if (ids) ids.push(rowid);
    else groups.set(k, [rowid]);
  }
  return groups;
}

/** Removes messages from the index, each from its shard. Runs inside the caller's transaction. */
export function unindexMessages(db: Db, rowids: readonly number[]): void {
  const existing = new Set(prepared(db, 'SELECT k FROM search_shards').pluck().all() as number[]);
  for (const [k, ids] of byShard(db, rowids)) {
    if (k !== LEGACY_SHARD && !existing.has(k)) continue;
    prepared(db, `DELETE FROM ${shardTable(k)} WHERE rowid IN (SELECT value FROM json_each(?))`).run(JSON.stringify(ids));
  }
}
