/**
 * Label rules (spec §2.3): system state labels are read-only, hidden labels need
 * `label_<name>_read` to be seen, everything else (`unread`, custom labels) is editable.
 * A "visibility" is the set of hidden labels that make a message invisible in one context.
 * The label edit's schemas are in ./label-schemas.ts.
 */
import type { Db } from '../db/open.js';
import { ApiError } from '../core/errors.js';
import { requirePermission } from '../auth/access.js';
import { hasPermission, type Principal } from '../auth/principal.js';
import type { Permission } from '../auth/permissions.js';
import { prepared } from '../db/statements.js';

export const SYSTEM_LABELS = ['received', 'queued', 'sent', 'send_unknown', 'failed', 'delivered', 'bounced', 'complained', 'rejected', 'deferred'] as const;
/** `trash` hides mail like the other three; the pipeline sets those, callers set `trash`. */
export const HIDDEN_LABELS = ['spam', 'blocked', 'unauthenticated', 'trash'] as const;
export type HiddenLabel = (typeof HIDDEN_LABELS)[number];
/** Hidden labels inbound mail can arrive with, in the order that picks the event variant (§6.2 rule 1). */
export const INBOUND_HIDDEN_ORDER = ['blocked', 'spam', 'unauthenticated'] as const;
export type InboundHiddenLabel = (typeof INBOUND_HIDDEN_ORDER)[number];
/**
 * Set on received mail with a manipulation finding (issue 20 §3, docs/manipulation.md). Advisory:
 * the mail is delivered as usual; its spelling is fixed, and it can be removed (a false positive).
 */
export const SUSPICIOUS_LABEL = 'suspicious';

export const MAX_LABEL_LENGTH = 64;
export const MAX_LABELS_PER_EDIT = 50;

const SYSTEM = new Set<string>(SYSTEM_LABELS);
const HIDDEN = new Set<string>(HIDDEN_LABELS);
/** Names whose spelling is fixed: any case variant means the reserved label. */
const RESERVED = new Set<string>([...SYSTEM_LABELS, ...HIDDEN_LABELS, 'unread', SUSPICIOUS_LABEL]);

export const labelPermission = (label: HiddenLabel) => `label_${label}_read` as const satisfies Permission;

/** The hidden labels that hide a message from this caller in this context. */
export interface Visibility {
  excluded: readonly HiddenLabel[];
}

/** Direct reads by id: a hidden message is readable with the matching permission. */
export function readVisibility(p: Principal): Visibility {
  return { excluded: HIDDEN_LABELS.filter((l) => !hasPermission(p, labelPermission(l))) };
}

/** Search never shows hidden mail. */
export const SEARCH_VISIBILITY: Visibility = { excluded: HIDDEN_LABELS };

export type IncludeFlags = Partial<Record<`include_${HiddenLabel}`, boolean>>;

/** Lists hide hidden mail unless asked; asking needs the matching permission (else 403). */
export function listVisibility(p: Principal, flags: IncludeFlags): Visibility {
  for (const label of HIDDEN_LABELS) if (flags[`include_${label}`]) requirePermission(p, labelPermission(label));
  return { excluded: HIDDEN_LABELS.filter((l) => !flags[`include_${l}`]) };
}

export function isVisible(labels: readonly string[], v: Visibility): boolean {
  return !v.excluded.some((l) => labels.includes(l));
}

export interface LabelEdit {
  add: string[];
  remove: string[];
}

const invalidLabel = (label: string, why: string) =>
  new ApiError('validation_error', `The label ${JSON.stringify(label)} ${why}.`, {
    fix: `Labels are 1 to ${MAX_LABEL_LENGTH} characters, without control characters or surrounding spaces.`,
  });

function canonicalLabel(label: string): string {
  if (label.length === 0 || [...label].length > MAX_LABEL_LENGTH) throw invalidLabel(label, `is not 1 to ${MAX_LABEL_LENGTH} characters long`);
  if (/[\p{Cc}\p{Cs}\u2028\u2029]/u.test(label)) throw invalidLabel(label, 'contains control characters');
  if (label.trim() !== label) throw invalidLabel(label, 'has surrounding spaces');
  const lower = label.toLowerCase();
  return RESERVED.has(lower) ? lower : label;
}

function asList(value: string | string[] | undefined | null): string[] {
  if (value === undefined || value === null) return [];
  return typeof value === 'string' ? [value] : value;
}

/**
 * Validates a label edit as a whole, before anything changes, so a batch either applies fully
 * or not at all. System labels → validation_error; hidden labels need their read permission,
 * since a caller may only move mail between views it can see. Removal wins over addition.
 */
export function labelEdit(p: Principal, add: string | string[] | undefined | null, remove: string | string[] | undefined | null): LabelEdit {
  const adds = asList(add).map(canonicalLabel);
  const removes = asList(remove).map(canonicalLabel);
  const system = [...adds, ...removes].filter((l) => SYSTEM.has(l));
  if (system.length > 0) {
    throw new ApiError('validation_error', `System state labels cannot be added or removed: ${[...new Set(system)].join(', ')}.`, {
      fix: `Leave out ${SYSTEM_LABELS.join(', ')}; they follow the message's delivery state.`,
    });
  }
  for (const label of [...adds, ...removes]) if (HIDDEN.has(label)) requirePermission(p, labelPermission(label as HiddenLabel));
  const removeSet = new Set(removes);
  return { add: [...new Set(adds)].filter((l) => !removeSet.has(l)), remove: [...removeSet] };
}

export const touchesHidden = (edit: LabelEdit) => [...edit.add, ...edit.remove].some((l) => HIDDEN.has(l));

/** Applies an edit to messages; runs inside the caller's transaction. */
export function applyLabelEdit(db: Db, messageRowids: readonly number[], edit: LabelEdit): void {
  if (messageRowids.length === 0 || (edit.add.length === 0 && edit.remove.length === 0)) return;
  const now = new Date().toISOString();
  const insert = prepared(db, 'INSERT OR IGNORE INTO message_labels (message_rowid, label) VALUES (?, ?)');
  const remove = prepared(db, 'DELETE FROM message_labels WHERE message_rowid = ? AND label = ?');
  const touch = prepared(db, 'UPDATE messages SET updated_at = ? WHERE id = ?');
  for (const rowid of messageRowids) {
    for (const label of edit.add) insert.run(rowid, label);
    for (const label of edit.remove) remove.run(rowid, label);
    touch.run(now, rowid);
  }
}

/** Labels of each message, sorted, in one query. */
export function labelsOf(db: Db, messageRowids: readonly number[]): Map<number, string[]> {
  const result = new Map<number, string[]>(messageRowids.map((id) => [id, []]));
  if (messageRowids.length === 0) return result;
  const rows = prepared(db, 'SELECT message_rowid, label FROM message_labels WHERE message_rowid IN (SELECT value FROM json_each(?)) ORDER BY message_rowid, label').all(
    JSON.stringify(messageRowids),
  ) as { message_rowid: number; label: string }[];
  for (const row of rows) result.get(row.message_rowid)?.push(row.label);
  return result;
}

/**
 * A label filter carried by at most this many messages in the whole home is "rare": a list
 * filtered by it starts from the label's own rows (message_labels_label) instead of walking the
 * inbox newest first and testing each message. The walk costs a row for every message it passes,
 * so a label few messages carry (`send_unknown`, an agent's `needs-reply`) made a filtered list
 * read the whole inbox (docs/mail-store.md, "Labels"). Counting up to this many index entries
 * costs about half a millisecond.
 */
export const RARE_LABEL_ROWS = 5000;

/** The filter label carried by the fewest messages when that is at most RARE_LABEL_ROWS, else null. */
export function rareLabel(db: Db, labels: readonly string[] | undefined, limit = RARE_LABEL_ROWS): string | null {
  let best: { label: string; rows: number } | null = null;
  // Index entries counted for one list at most: a filter of many common labels (up to 50) costs
  // a few counts, not one each; a rare label after them is then not looked for, and the list walks.
  let budget = 3 * (limit + 1);
  for (const label of new Set(labels ?? [])) {
    // A later label is counted only as far as it takes to be the rarer one.
    const bound = Math.min(best === null ? limit : best.rows - 1, budget - 1);
    if (bound < 0) break;
    const rows = prepared(db, 'SELECT count(*) FROM (SELECT 1 FROM message_labels WHERE label = ? LIMIT ?)').pluck().get(label, bound + 1) as number;
    budget -= rows;
    if (rows <= bound) best = { label, rows };
  }
  return best?.label ?? null;
}

/**
 * SQL condition: the message aliased `alias` carries none of the excluded hidden labels.
 * The labels are inlined (they are fixed identifiers) so each shape is one cached statement.
 */
export function visibleSql(alias: string, v: Visibility): string {
  if (v.excluded.length === 0) return '1 = 1';
  // `+hl.label`: scan the message's few labels by the key prefix rather than build a lookup table
  // from the IN list for every row (measured about a third cheaper on a page of thread summaries).
  return `NOT EXISTS (SELECT 1 FROM message_labels hl WHERE hl.message_rowid = ${alias}.id AND +hl.label IN (${v.excluded.map((l) => `'${l}'`).join(', ')}))`;
}
