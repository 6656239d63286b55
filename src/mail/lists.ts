/**
 * Allow and block lists (spec §2.7, §4.8): the stored entries and the verdict the inbound and
 * outbound pipelines ask for. An entry is a lower-cased address or domain; global entries are
 * stored with inbox_id '' and a pod's (docs/pods.md) with `pod:<pod_id>` (never an address: no
 * `@`), so one primary key covers the three levels. The entry's schema is in ./list-schemas.ts.
 */
import { domainToASCII } from 'node:url';
import type { Db } from '../db/open.js';
import { ApiError } from '../core/errors.js';
import { prepared } from '../db/statements.js';
import { SINGLE_ORGANIZATION_ID } from './inboxes.js';
import type { ListEntry } from './list-schemas.js';

export type { ListEntry } from './list-schemas.js';

export const DIRECTIONS = ['receive', 'send', 'reply'] as const;
export const LIST_TYPES = ['allow', 'block'] as const;
export type ListDirection = (typeof DIRECTIONS)[number];
export type ListType = (typeof LIST_TYPES)[number];

/** Longest accepted `reason`, in characters. */
export const REASON_MAX = 500;
/** RFC 5321 limits: 64 octets of local part, 254 for the whole address, 253 for a domain. */
const LOCAL_MAX = 64;
const ADDRESS_MAX = 254;
const DOMAIN_MAX = 253;

/**
 * Which list: global (`inboxId` and `podId` null), one pod's (`podId` only) or one inbox's
 * (`inboxId`, with `podId` its pod), for one direction and type.
 */
export interface ListKey {
  inboxId: string | null;
  podId: string | null;
  direction: ListDirection;
  type: ListType;
}

interface ListEntryRow {
  inbox_id: string;
  direction: ListDirection;
  type: ListType;
  entry: string;
  reason: string | null;
  created_at: string;
}

const GLOBAL = '';
const POD_LIST_PREFIX = 'pod:';

/** The stored `inbox_id` column of a list: '' (global), `pod:<pod_id>` or the inbox's address. */
const listColumn = (key: ListKey) => key.inboxId ?? (key.podId === null ? GLOBAL : `${POD_LIST_PREFIX}${key.podId}`);

function toEntry(row: ListEntryRow, key: ListKey): ListEntry {
  return {
    entry: row.entry,
    entry_type: row.entry.includes('@') ? 'email' : 'domain',
    direction: row.direction,
    list_type: row.type,
    reason: row.reason,
    inbox_id: key.inboxId,
    created_at: row.created_at,
    organization_id: SINGLE_ORGANIZATION_ID,
    ...(key.podId === null ? {} : { pod_id: key.podId }),
  };
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
// Dot-atom characters (RFC 5322) plus any non-ASCII character (RFC 6531 SMTPUTF8 local parts).
const LOCAL = /^[a-z0-9!#$%&'*+/=?^_`{|}~\u{80}-\u{10ffff}-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~\u{80}-\u{10ffff}-]+)*$/u;

/** ASCII (punycode) form of a domain with at least two labels, or null when it is not one. */
function canonicalDomain(value: string): string | null {
  if (value.length === 0 || value.length > DOMAIN_MAX || value.endsWith('.')) return null;
  // domainToASCII turns IDNs into punycode and answers '' for anything that is not a host name.
  const ascii = /^[\x21-\x7e]+$/.test(value) ? value : domainToASCII(value);
  const labels = ascii.split('.');
  if (ascii.length > DOMAIN_MAX || labels.length < 2 || !labels.every((l) => LABEL.test(l))) return null;
  if (/^[0-9]+$/.test(labels[labels.length - 1])) return null; // an IP address is not a mail domain
  return ascii;
}

/** `local@domain` lower-cased with the domain in punycode, or null when it is not a mail address. */
export function canonicalAddress(raw: string): string | null {
  const value = raw.trim().toLowerCase();
  const at = value.lastIndexOf('@');
  if (at <= 0) return null;
  const local = value.slice(0, at);
  const domain = canonicalDomain(value.slice(at + 1));
  if (!domain || Buffer.byteLength(local) > LOCAL_MAX || !LOCAL.test(local)) return null;
  const address = `${local}@${domain}`;
  return Buffer.byteLength(address) <= ADDRESS_MAX ? address : null;
}

/**
 * The stored form of an entry: `local@domain` or a bare domain, trimmed and lower-cased, with an
 * international domain in punycode. Throws `validation_error` for anything else.
 */
export function normalizeListEntry(raw: string): string {
  const value = raw.trim().toLowerCase();
  const at = value.lastIndexOf('@');
  if (at === -1) {
    const domain = canonicalDomain(value);
    if (domain) return domain;
  } else {
    const local = value.slice(0, at);
    const domain = canonicalDomain(value.slice(at + 1));
    if (domain && Buffer.byteLength(local) <= LOCAL_MAX && LOCAL.test(local)) {
      const address = `${local}@${domain}`;
      if (Buffer.byteLength(address) <= ADDRESS_MAX) return address;
    }
  }
  throw new ApiError('validation_error', `"${raw.slice(0, 100)}" is not an email address or a domain.`, {
    fix: 'Give an address like `name@example.com` or a bare domain like `example.com` (no `@`, `*` or scheme); a domain also covers its subdomains.',
  });
}

const KEY_WHERE = 'inbox_id = ? AND direction = ? AND type = ?';
const keyParams = (key: ListKey) => [listColumn(key), key.direction, key.type];

/** Adds an entry; an existing one (same list, same entry) is `409 already_exists`. */
export function createListEntry(db: Db, key: ListKey, entry: string, reason: string | null): ListEntry {
  const row: ListEntryRow = { inbox_id: listColumn(key), direction: key.direction, type: key.type, entry, reason, created_at: new Date().toISOString() };
  const inserted = db
    .prepare('INSERT INTO list_entries (inbox_id, direction, type, entry, reason, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING')
    .run(row.inbox_id, row.direction, row.type, row.entry, row.reason, row.created_at);
  if (inserted.changes === 0) {
    throw new ApiError('already_exists', `${entry} is already on this ${key.direction} ${key.type} list.`, {
      fix: 'Read it with GET on the entry; to change its reason, delete it and add it again.',
    });
  }
  return toEntry(row, key);
}

export function getListEntry(db: Db, key: ListKey, entry: string): ListEntry | null {
  const row = db.prepare(`SELECT * FROM list_entries WHERE ${KEY_WHERE} AND entry = ?`).get(...keyParams(key), entry) as ListEntryRow | undefined;
  return row ? toEntry(row, key) : null;
}

/** True when an entry was removed. */
export function deleteListEntry(db: Db, key: ListKey, entry: string): boolean {
  return db.prepare(`DELETE FROM list_entries WHERE ${KEY_WHERE} AND entry = ?`).run(...keyParams(key), entry).changes > 0;
}

/** Up to `limit` entries after `after` (exclusive), in ascending entry order. */
export function listListEntries(db: Db, key: ListKey, after: string | null, limit: number): ListEntry[] {
  const rows = db
    .prepare(`SELECT * FROM list_entries WHERE ${KEY_WHERE} AND entry > ? ORDER BY entry ASC LIMIT ?`)
    .all(...keyParams(key), after ?? '', limit) as ListEntryRow[];
  return rows.map((row) => toEntry(row, key));
}

/**
 * How the lists judge one address:
 * - `block`: a block entry matches (block wins over any allow entry);
 * - `allow`: an allow entry matches and no block entry does;
 * - `not_allowed`: an allow list is in force (non-empty) and nothing on it matches;
 * - `none`: no entry matches and no allow list is in force.
 * `allow` and `none` let mail through; `block` and `not_allowed` do not.
 */
export type ListVerdict = 'block' | 'allow' | 'not_allowed' | 'none';

export interface VerdictQuery {
  inboxId: string;
  direction: ListDirection;
  /** The bare address (`local@domain`) being judged: a sender on receive, a recipient on send and reply. */
  address: string;
}

/** The address itself, its domain and every parent domain: the entries that can match it. */
function candidates(address: string): string[] {
  const value = address.trim().toLowerCase();
  const at = value.lastIndexOf('@');
  const rawDomain = at === -1 ? value : value.slice(at + 1);
  const domain = canonicalDomain(rawDomain) ?? rawDomain;
  const out = at === -1 ? [] : [`${value.slice(0, at)}@${domain}`];
  const labels = domain.split('.');
  for (let i = 0; i < labels.length - 1; i++) out.push(labels.slice(i).join('.'));
  return out.length > 0 ? out : [value];
}

/**
 * Inbox, pod and global lists all apply, as one list per type: an address passes an allow list in
 * force when any level's allow list names it, and a block entry at any level blocks it.
 * A domain entry matches addresses at that domain and at any of its subdomains.
 */
export function listVerdict(db: Db, query: VerdictQuery): ListVerdict {
  const inboxId = query.inboxId.trim().toLowerCase();
  const keys = candidates(query.address);
  const podList = (prepared(db, 'SELECT pod_id FROM inboxes WHERE inbox_id = ?').pluck().get(inboxId) as string | undefined) ?? null;
  const lists = [GLOBAL, inboxId, podList === null ? GLOBAL : `${POD_LIST_PREFIX}${podList}`];
  const matched = prepared(db, `SELECT DISTINCT type FROM list_entries WHERE inbox_id IN (?, ?, ?) AND direction = ? AND entry IN (${keys.map(() => '?').join(', ')})`)
    .all(...lists, query.direction, ...keys) as { type: ListType }[];
  if (matched.some((m) => m.type === 'block')) return 'block';
  if (matched.length > 0) return 'allow';
  const allowInForce = prepared(db, "SELECT 1 FROM list_entries WHERE inbox_id IN (?, ?, ?) AND direction = ? AND type = 'allow' LIMIT 1").get(...lists, query.direction);
  return allowInForce ? 'not_allowed' : 'none';
}
