/**
 * Human output of the CLI: tables and `key: value` blocks on stdout. Values that come from mail
 * (subjects, names, addresses) are printed without control characters, so a message cannot move
 * the cursor or recolour the terminal.
 */

/** Writes one block of text with a final newline. */
export function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** --json output: one JSON document per command. */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value ?? null) + '\n');
}

/** A cell: control characters (incl. ESC and line breaks) become spaces; null is a dash. */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  const text = Array.isArray(value) ? value.join(', ') : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
}

/** Long free text (message bodies): keeps line breaks and tabs, drops other control characters. */
export function bodyText(value: string): string {
  return value.replace(/\r\n?/g, '\n').replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '');
}

/** Shortens a cell to `max` characters with an ellipsis. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Columns padded to their widest cell; the last column is left ragged. */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd()).join('\n');
}

/**
 * `max` of a column of identifiers (ids, addresses): never clipped, because a clipped id pasted
 * into the next command finds nothing. Free text is clipped instead (60 characters by default).
 */
export const WHOLE = Number.POSITIVE_INFINITY;

export type Column<T> = [header: string, value: (item: T) => unknown, max?: number];

/** A table of items, or `empty` when there are none. */
export function itemsTable<T>(items: T[], columns: Column<T>[], empty: string): string {
  if (items.length === 0) return empty;
  return table([columns.map(([h]) => h), ...items.map((item) => columns.map(([, get, max]) => clip(cell(get(item)), max ?? 60)))]);
}

/** `label: value` lines with the labels aligned. */
export function fields(pairs: [label: string, value: unknown][]): string {
  const width = Math.max(...pairs.map(([l]) => l.length)) + 1;
  return pairs.map(([label, value]) => `${`${label}:`.padEnd(width)} ${cell(value)}`).join('\n');
}

/** The hint printed under a page of a list when more exist. */
export function nextPageHint(page: { next_page_token?: string }): string {
  return page.next_page_token ? `\n(more: repeat with --page-token ${page.next_page_token})` : '';
}

/** A list page: the table plus the next-page hint. */
export function pageTable<T>(page: { next_page_token?: string }, items: T[], columns: Column<T>[], empty: string): string {
  return itemsTable(items, columns, empty) + nextPageHint(page);
}
