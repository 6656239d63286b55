/**
 * The mail search box's language (docs/web-app.md "Mail"): free words plus filter chips the way
 * Gmail and Fastmail write them — `from:`, `to:`, `subject:`, `label:`, `has:attachment`,
 * `is:unread`, `in:archive|trash|spam` — turned into the owner list's query parameters.
 */
import { query } from '../api';
import type { ThreadItem } from '../api-types';

export type ChipKey = 'from' | 'to' | 'subject' | 'label' | 'has' | 'is' | 'in';
export interface Chip {
  key: ChipKey;
  value: string;
}
export interface ParsedSearch {
  chips: Chip[];
  /** The free words, for full-text search; '' when there are none. */
  words: string;
}

const CHIP_KEYS = new Set<string>(['from', 'to', 'subject', 'label', 'has', 'is', 'in']);
/** `key:value` or `key:"several words"`; anything else is a word. One pass, linear in the input. */
const TOKEN = /(\w+):"([^"]*)"?|(\w+):(\S+)|"([^"]*)"?|(\S+)/g;
/** The archive is a label the app adds with `e`; the default view leaves archived threads out. */
export const ARCHIVE_LABEL = 'archived';

export function parseSearch(text: string): ParsedSearch {
  const chips: Chip[] = [];
  const words: string[] = [];
  for (const m of text.matchAll(TOKEN)) {
    const key = (m[1] ?? m[3])?.toLowerCase();
    const value = m[2] ?? m[4];
    if (key && value !== undefined && CHIP_KEYS.has(key) && value.trim() !== '') chips.push({ key: key as ChipKey, value: value.trim() });
    else words.push(m[0]);
  }
  return { chips, words: words.join(' ').trim() };
}

export function chipText(c: Chip): string {
  return `${c.key}:${/\s/.test(c.value) ? `"${c.value}"` : c.value}`;
}

export function searchText(parsed: ParsedSearch): string {
  return [...parsed.chips.map(chipText), parsed.words].filter(Boolean).join(' ');
}

/** Adds the chip, or removes it when it is there already (the quick filter buttons). */
export function toggleChip(text: string, chip: Chip): string {
  const parsed = parseSearch(text);
  const has = parsed.chips.some((c) => c.key === chip.key && c.value.toLowerCase() === chip.value.toLowerCase());
  const chips = has ? parsed.chips.filter((c) => !(c.key === chip.key && c.value.toLowerCase() === chip.value.toLowerCase())) : [...parsed.chips, chip];
  return searchText({ chips, words: parsed.words });
}

export function removeChip(text: string, index: number): string {
  const parsed = parseSearch(text);
  return searchText({ chips: parsed.chips.filter((_, i) => i !== index), words: parsed.words });
}

const values = (chips: Chip[], key: ChipKey) => chips.filter((c) => c.key === key).map((c) => c.value);

/** The list's query string for the chips (the words go to the search route instead). */
export function listQuery(parsed: ParsedSearch, inboxIds: string[] | undefined, pageToken?: string, limit = 100): string {
  const chips = parsed.chips;
  const is = values(chips, 'is').map((v) => v.toLowerCase());
  const where = values(chips, 'in').map((v) => v.toLowerCase());
  const labels = [...values(chips, 'label'), ...(is.includes('unread') ? ['unread'] : []), ...(where.includes('archive') ? [ARCHIVE_LABEL] : []), ...where.filter((w) => w === 'trash' || w === 'spam')];
  return query({
    inbox_ids: inboxIds,
    limit,
    page_token: pageToken,
    labels: labels.length ? labels : undefined,
    senders: values(chips, 'from').length ? values(chips, 'from') : undefined,
    recipients: values(chips, 'to').length ? values(chips, 'to') : undefined,
    subject: values(chips, 'subject').length ? values(chips, 'subject') : undefined,
    has_attachment: values(chips, 'has').some((v) => /^attachments?$/i.test(v)),
    include_trash: where.includes('trash'),
    include_spam: where.includes('spam'),
    // The inbox view: archived threads stay out unless asked for by label or `in:`.
    exclude_labels: where.length === 0 && !labels.includes(ARCHIVE_LABEL) ? [ARCHIVE_LABEL] : undefined,
  });
}

const contains = (haystack: string[], needle: string) => haystack.some((h) => h.toLowerCase().includes(needle.toLowerCase()));

/**
 * Full-text search answers without filters, so with words and chips together the chips narrow
 * each page of results here, from what a listed thread carries.
 */
export function matchesChips(t: ThreadItem, chips: Chip[]): boolean {
  return chips.every((c) => {
    switch (c.key) {
      case 'from':
        return contains(t.senders, c.value);
      case 'to':
        return contains(t.recipients, c.value);
      case 'subject':
        return (t.subject ?? '').toLowerCase().includes(c.value.toLowerCase());
      case 'label':
        return t.labels.includes(c.value);
      case 'has':
        return t.attachments.length > 0;
      case 'is':
        return c.value.toLowerCase() === 'unread' ? t.labels.includes('unread') : c.value.toLowerCase() === 'read' ? !t.labels.includes('unread') : true;
      case 'in':
        return true;
    }
  });
}
