/**
 * The text of one attachment, for agents and search (docs/attachments.md): PDF, DOCX, XLSX, CSV,
 * HTML and plain text. Runs in an extraction worker (workers/pool/attachment-text.ts), never on
 * the main thread or inside a write transaction; that worker's heap limit and the pool's timeout
 * bound what the limits here cannot (a PDF's own structures).
 *
 * The kind comes from the declared type, then the file name's extension; the bytes must then be
 * what that kind starts with (`%PDF-`, a zip), else the reading `failed` (an executable sent as
 * `application/pdf`). Text types are decoded in their declared charset.
 */
import { htmlText } from '../mail/html-text.js';
import { charsetOf, decodeCharset } from '../mail/shown-attachment.js';
import { MAX_ATTACHMENT_INPUT_BYTES, MAX_ATTACHMENT_TEXT_BYTES, MAX_HTML_INPUT_BYTES, MAX_TEXT_INPUT_BYTES } from './limits.js';
import { docxText, xlsxText } from './office.js';
import { pdfText } from './pdf.js';
import type { AttachmentFile, AttachmentText } from './schemas.js';
import { ExtractionStop } from './stop.js';
import { TextSink } from './text-sink.js';
import { attachmentKind, type AttachmentKind } from './kind.js';

/** Reads one attachment; never throws (a failure is a status). */
export async function extractAttachmentText(file: AttachmentFile): Promise<AttachmentText> {
  const kind = attachmentKind(file.contentType, file.filename);
  if (kind === null) return { status: 'unsupported', text: null, truncated: false };
  if (file.content.byteLength > MAX_ATTACHMENT_INPUT_BYTES) return { status: 'too_large', text: null, truncated: false };
  const sink = new TextSink(Math.max(0, Math.min(MAX_ATTACHMENT_TEXT_BYTES, file.maxBytes)));
  try {
    await readInto(kind, file, sink);
  } catch (err) {
    if (err instanceof ExtractionStop) return { status: err.status, text: null, truncated: false };
    return { status: 'failed', text: null, truncated: false };
  }
  return { status: 'ok', text: sink.text(), truncated: sink.truncated };
}

/** The synchronous readers, for the linearity checks; PDF is the one asynchronous kind. */
export function readSync(kind: Exclude<AttachmentKind, 'pdf'>, file: Pick<AttachmentFile, 'content' | 'contentType' | 'charset'>, sink: TextSink): void {
  const bytes = file.content;
  const charset = file.charset ?? charsetOf(file.contentType);
  switch (kind) {
    case 'docx':
      return docxText(bytes, sink);
    case 'xlsx':
      return xlsxText(bytes, sink);
    case 'html': {
      const cut = bytes.byteLength > MAX_HTML_INPUT_BYTES;
      sink.write(htmlText(decodeText(cut ? bytes.subarray(0, MAX_HTML_INPUT_BYTES) : bytes, charset)));
      if (cut) sink.cut();
      return;
    }
    case 'csv':
    case 'text': {
      const cut = bytes.byteLength > MAX_TEXT_INPUT_BYTES;
      sink.write(decodeText(cut ? bytes.subarray(0, MAX_TEXT_INPUT_BYTES) : bytes, charset));
      if (cut) sink.cut();
      return;
    }
  }
}

/**
 * Text in its declared charset; without one, UTF-8, and bytes that are not UTF-8 are read as
 * windows-1252 (what a spreadsheet program writes a CSV in), rather than shown as U+FFFD.
 */
function decodeText(bytes: Uint8Array, charset: string | null): string {
  const text = decodeCharset(bytes, charset);
  if (charset !== null || !text.includes('\ufffd')) return text;
  return decodeCharset(bytes, 'windows-1252');
}

async function readInto(kind: AttachmentKind, file: AttachmentFile, sink: TextSink): Promise<void> {
  if (kind === 'pdf') return pdfText(file.content, sink);
  readSync(kind, file, sink);
}
