/**
 * Migration 14: `extracted_text` stored as a span of `text` when it is one (issue 19). The new
 * part of a message that quotes nothing is its whole text, trimmed; of a reply, the text before
 * the quote. Storing it again doubled the body in every message row (10 of the 51 KiB a 10 KB
 * message wrote at its commit). When `extracted_from` is set, `extracted_text` is NULL and the
 * extracted text is `text` from that UTF-16 offset for `extracted_length` units
 * (src/mail/extracted-span.ts). Rows stored before keep their copy.
 */
export const EXTRACTED_SPAN_MIGRATION = `
  ALTER TABLE messages ADD COLUMN extracted_from INTEGER;
  ALTER TABLE messages ADD COLUMN extracted_length INTEGER;
`;
