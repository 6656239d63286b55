/** The extracted text of an attachment as svc stores and answers it (docs/attachments.md). */
import { Type, type Static } from 'typebox';

/**
 * Why there is or is not text: `ok` (read; the text may be empty), `unsupported` (not a kind svc
 * reads), `encrypted` (a password-protected PDF), `too_large` (a size, entry, depth or memory
 * limit was reached), `timeout` (took longer than the limit), `failed` (malformed or not what its
 * type claims).
 */
export const ATTACHMENT_TEXT_STATUSES = ['ok', 'unsupported', 'encrypted', 'too_large', 'timeout', 'failed'] as const;
export const AttachmentTextStatus = Type.Union([
  Type.Literal('ok'),
  Type.Literal('unsupported'),
  Type.Literal('encrypted'),
  Type.Literal('too_large'),
  Type.Literal('timeout'),
  Type.Literal('failed'),
]);
export type AttachmentTextStatus = Static<typeof AttachmentTextStatus>;

/** One attachment's reading: its text (with status `ok` only) and whether the text was cut. */
export const AttachmentText = Type.Object({
  status: AttachmentTextStatus,
  text: Type.Union([Type.String(), Type.Null()]),
  truncated: Type.Boolean(),
});
export type AttachmentText = Static<typeof AttachmentText>;

/** What an extraction worker is given: the file and what its sender says it is. */
export interface AttachmentFile {
  content: Uint8Array;
  contentType: string | null;
  filename: string | null;
  /** The part's declared charset when known apart from `contentType` (received mail, at receive time). */
  charset?: string | null;
  /** Text bytes this attachment may still add to its message's (MAX_MESSAGE_ATTACHMENT_TEXT_BYTES). */
  maxBytes: number;
}

/** The response's extension fields (docs/agentmail-compat.md): the text and how it was read. */
export const AttachmentTextFields = {
  extracted_text: Type.Union([Type.String(), Type.Null()]),
  extraction: Type.Object({
    status: AttachmentTextStatus,
    truncated: Type.Boolean(),
    /** UTF-8 bytes of `extracted_text`. */
    bytes: Type.Integer(),
  }),
};

// The pool task's name lives in limits.ts, which imports nothing: a loop thread names it without loading typebox.
export { EXTRACT_ATTACHMENT_TEXT } from './limits.js';
