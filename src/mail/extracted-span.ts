/**
 * `extracted_text` as stored (migration 14): a span of `text` when it is one, else its own copy.
 * Extraction (src/mail/extract.ts) keeps a message's text up to its quoted history, trims its end
 * and drops leading blank lines, or keeps the whole text trimmed: so the extracted text, when it
 * is a span at all, starts at 0, after the leading blank lines, or at the first visible
 * character. Only those starts are tried, each a linear comparison. A text that is not
 * well-formed UTF-16 does not read back from SQLite as written, so its offsets would not hold:
 * it keeps a copy.
 */
import { leadingBlankLinesEnd } from './extract.js';

export interface StoredExtract {
  extracted_text: string | null;
  extracted_from: number | null;
  extracted_length: number | null;
}

export function storedExtract(text: string | null, extracted: string | null): StoredExtract {
  const copy = { extracted_text: extracted, extracted_from: null, extracted_length: null };
  if (text === null || extracted === null || extracted.length === 0 || !text.isWellFormed()) return copy;
  const firstVisible = text.search(/\S/);
  for (const from of new Set([0, leadingBlankLinesEnd(text), Math.max(0, firstVisible)])) {
    if (text.startsWith(extracted, from)) return { extracted_text: null, extracted_from: from, extracted_length: extracted.length };
  }
  return copy;
}

/** The extracted text of a stored row: its copy, or its span of `text`. */
export function readExtract(row: { text: string | null } & Partial<StoredExtract>): string | null {
  if (row.extracted_text != null || row.extracted_from == null || row.extracted_length == null || row.text === null) return row.extracted_text ?? null;
  return row.text.slice(row.extracted_from, row.extracted_from + row.extracted_length);
}
