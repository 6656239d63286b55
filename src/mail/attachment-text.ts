/**
 * Attachment text in the mail store (docs/attachments.md): kept beside the attachment, appended
 * to its message's search body, and answered on the attachment routes. Text not read at the
 * commit (older mail, sent mail, an attachment past the receive budget) is read on the first read
 * of the attachment, in the extraction lane, and kept in a short transaction of its own.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { bumpSearchGeneration } from '../core/pagination.js';
import { indexMessage, searchText, unindexMessages } from './search-index.js';
import { MAX_MESSAGE_ATTACHMENT_TEXT_BYTES } from '../attachment-text/limits.js';
import type { AttachmentText, AttachmentTextFields } from '../attachment-text/schemas.js';
import type { ExtractText } from '../attachment-text/on-receive.js';
import type { Static } from 'typebox';

/** Body text indexed for search per message; longer bodies are searchable by their start. */
export const MAX_INDEXED_BODY = 256 * 1024;

/** A message's search body: its text's start, then each attachment's text. */
export function searchBodyWith(text: string | null, attachmentTexts: readonly (string | null | undefined)[]): string {
  const body = (text ?? '').slice(0, MAX_INDEXED_BODY);
  const extra = attachmentTexts.filter((t): t is string => typeof t === 'string' && t.length > 0);
  return extra.length === 0 ? body : [body, ...extra].join('\n\n');
}

type Reading = { [K in keyof typeof AttachmentTextFields]: Static<(typeof AttachmentTextFields)[K]> };

interface StoredText {
  text: string | null;
  text_status: AttachmentText['status'] | null;
  text_truncated: number;
}

/** The response's extension fields for one reading. */
export function readingShape(r: AttachmentText): Reading {
  return { extracted_text: r.text, extraction: { status: r.status, truncated: r.truncated, bytes: r.text === null ? 0 : Buffer.byteLength(r.text) } };
}

/**
 * The attachment's text, read now in the extraction lane when it has not been read yet, and kept.
 * Reading outside any transaction: the file is a stranger's.
 */
export async function attachmentReading(db: Db, messageRowid: number, attachmentId: string, extract: ExtractText): Promise<Reading> {
  const stored = prepared(db, 'SELECT text, text_status, text_truncated FROM attachments WHERE message_rowid = ? AND attachment_id = ?').get(messageRowid, attachmentId) as StoredText | undefined;
  if (stored && stored.text_status !== null) return readingShape({ status: stored.text_status, text: stored.text, truncated: stored.text_truncated === 1 });
  const file = prepared(db, 'SELECT content, content_type, filename FROM attachments WHERE message_rowid = ? AND attachment_id = ?').get(messageRowid, attachmentId) as
    | { content: Uint8Array; content_type: string | null; filename: string | null }
    | undefined;
  if (!file) return readingShape({ status: 'failed', text: null, truncated: false });
  const used = prepared(db, "SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) AS n FROM attachments WHERE message_rowid = ? AND text_status = 'ok'").get(messageRowid) as { n: number };
  const read = await extract({ content: file.content, contentType: file.content_type, filename: file.filename, maxBytes: MAX_MESSAGE_ATTACHMENT_TEXT_BYTES - used.n });
  return readingShape(keepAttachmentText(db, messageRowid, attachmentId, read));
}

/**
 * Keeps a reading made after the commit and re-indexes the message with it. A reading kept
 * meanwhile (two first reads at once) wins: it is returned instead, so both answers agree.
 */
export function keepAttachmentText(db: Db, messageRowid: number, attachmentId: string, read: AttachmentText): AttachmentText {
  return db.transaction((): AttachmentText => {
    const changed = prepared(db, 'UPDATE attachments SET text = ?, text_status = ?, text_truncated = ? WHERE message_rowid = ? AND attachment_id = ? AND text_status IS NULL').run(
      read.text,
      read.status,
      read.truncated ? 1 : 0,
      messageRowid,
      attachmentId,
    ).changes;
    if (changed === 0) {
      const kept = prepared(db, 'SELECT text, text_status, text_truncated FROM attachments WHERE message_rowid = ? AND attachment_id = ?').get(messageRowid, attachmentId) as StoredText | undefined;
      return kept?.text_status ? { status: kept.text_status, text: kept.text, truncated: kept.text_truncated === 1 } : read;
    }
    if (read.text) reindexMessage(db, messageRowid);
    return read;
  }).immediate();
}

/** Indexes a message again from its stored subject, addresses, text and attachment texts (the index keeps no copy to update). */
function reindexMessage(db: Db, rowid: number): void {
  const m = prepared(db, 'SELECT inbox_id, subject, from_address, to_addresses, cc_addresses, text, timestamp FROM messages WHERE id = ?').get(rowid) as
    | { inbox_id: string; subject: string | null; from_address: string | null; to_addresses: string; cc_addresses: string | null; text: string | null; timestamp: string }
    | undefined;
  if (!m) return;
  const list = (json: string | null) => (json ? (JSON.parse(json) as string[]) : []);
  const participants = [m.from_address ?? '', ...list(m.to_addresses), ...list(m.cc_addresses)].join(' ');
  const texts = prepared(db, "SELECT text FROM attachments WHERE message_rowid = ? AND text_status = 'ok' ORDER BY rowid").pluck().all(rowid) as string[];
  unindexMessages(db, [rowid]);
  indexMessage(db, rowid, m.timestamp, searchText(m.inbox_id, m.subject ?? '', participants, searchBodyWith(m.text, texts)));
  bumpSearchGeneration(db);
}
