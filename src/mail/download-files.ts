/**
 * The stored files a signed download URL can name (spec §4.7): a received or sent message's raw
 * MIME (read by src/mail/raw-mime.ts) and its attachments, found by inbox and message id. Lookups
 * only; who may fetch them is decided by `verifyDownload` (src/routes/downloads.ts) before any
 * content is read.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';

export interface DownloadMessage {
  /** messages.id, the key of its labels, raw MIME and attachments. */
  id: number;
  message_id: string;
}

export function downloadMessage(db: Db, inboxId: string, messageId: string): DownloadMessage | undefined {
  return prepared(db, 'SELECT id, message_id FROM messages WHERE inbox_id = ? AND message_id = ?').get(inboxId, messageId) as DownloadMessage | undefined;
}

/** Every label on the message, hidden ones included: the caller checks them against the issuer. */
export function messageLabelNames(db: Db, messageRowid: number): string[] {
  return (prepared(db, 'SELECT label FROM message_labels WHERE message_rowid = ?').all(messageRowid) as { label: string }[]).map((l) => l.label);
}


export function attachmentFile(db: Db, messageRowid: number, attachmentId: string): { filename: string | null; content_type: string | null; content: Buffer } | undefined {
  return prepared(db, 'SELECT filename, content_type, content FROM attachments WHERE message_rowid = ? AND attachment_id = ?').get(messageRowid, attachmentId) as
    | { filename: string | null; content_type: string | null; content: Buffer }
    | undefined;
}
