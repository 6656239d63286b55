/**
 * Reading a received message's attachments before its commit (docs/attachments.md): one at a
 * time in the extraction lane, within MESSAGE_TEXT_BUDGET_MS and MAX_MESSAGE_ATTACHMENT_TEXT_BYTES
 * for the message. An attachment not begun within the budget is left unread (null): its text is
 * read on its first read. So is one that timed out here: a home busy at that moment (a burst of
 * mail on a small VPS) must not cost an ordinary PDF its text for good; the first read's timeout
 * is final. Any other failure is a status; the mail commits whatever the files do.
 */
import { attachmentKind } from './kind.js';
import { MAX_MESSAGE_ATTACHMENT_TEXT_BYTES, MESSAGE_TEXT_BUDGET_MS } from './limits.js';
import type { AttachmentFile, AttachmentText } from './schemas.js';

/** A received attachment as the parser gives it. */
interface ReceivedAttachment {
  content: Uint8Array;
  contentType: string | null;
  filename: string | null;
  charset?: string | null;
}

export type ExtractText = (file: AttachmentFile) => Promise<AttachmentText>;

/** Each attachment's reading, in order; null for those left for their first read. */
export async function readReceivedAttachments(attachments: readonly ReceivedAttachment[], extract: ExtractText, now: () => number = Date.now): Promise<(AttachmentText | null)[]> {
  const started = now();
  let left = MAX_MESSAGE_ATTACHMENT_TEXT_BYTES;
  const out: (AttachmentText | null)[] = [];
  for (const a of attachments) {
    // Kinds svc does not read are answered here, without a trip to a worker.
    if (attachmentKind(a.contentType, a.filename) === null) {
      out.push({ status: 'unsupported', text: null, truncated: false });
      continue;
    }
    if (now() - started >= MESSAGE_TEXT_BUDGET_MS) {
      out.push(null);
      continue;
    }
    const read = await extract({ content: a.content, contentType: a.contentType, filename: a.filename, charset: a.charset ?? null, maxBytes: left });
    if (read.text !== null) left -= Buffer.byteLength(read.text);
    out.push(read.status === 'timeout' ? null : read);
  }
  return out;
}

/** An opened message with its attachments' text read (the pipeline's and the quarantine retry's open). */
export async function withAttachmentText<T extends { parsed: { attachments: readonly ReceivedAttachment[] } }>(opened: T, extract: ExtractText): Promise<T & { attachmentText: (AttachmentText | null)[] }> {
  return { ...opened, attachmentText: await readReceivedAttachments(opened.parsed.attachments, extract) };
}
