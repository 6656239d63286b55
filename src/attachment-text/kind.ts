/**
 * What svc reads an attachment as (docs/attachments.md): the declared type, then, for a type that
 * says nothing (`application/octet-stream`), the file name's extension. Whether the bytes are what
 * the kind claims is checked by the reader.
 */

export type AttachmentKind = 'pdf' | 'docx' | 'xlsx' | 'csv' | 'html' | 'text';

const BY_TYPE: Record<string, AttachmentKind> = {
  'application/pdf': 'pdf',
  'application/x-pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'text/csv': 'csv',
  'text/tab-separated-values': 'csv',
  'application/csv': 'csv',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/plain': 'text',
  'text/markdown': 'text',
};

const BY_EXTENSION: Record<string, AttachmentKind> = {
  pdf: 'pdf',
  docx: 'docx',
  xlsx: 'xlsx',
  csv: 'csv',
  tsv: 'csv',
  html: 'html',
  htm: 'html',
  txt: 'text',
  md: 'text',
  text: 'text',
  log: 'text',
};

/** Types that say nothing about the file: the name's extension decides. */
const GENERIC_TYPES = new Set(['', 'application/octet-stream', 'application/zip', 'application/x-zip-compressed', 'binary/octet-stream']);

const MAX_TYPE_CHARS = 256;

/** The bare media type, lower-cased (`text/plain; charset=…` → `text/plain`). */
const mediaType = (type: string | null) => (type ?? '').slice(0, MAX_TYPE_CHARS).split(';')[0].trim().toLowerCase();

/** What svc reads this attachment as, or null when it does not read its kind. */
export function attachmentKind(contentType: string | null, filename: string | null): AttachmentKind | null {
  const type = mediaType(contentType);
  const byType = BY_TYPE[type];
  if (byType) return byType;
  if (!GENERIC_TYPES.has(type)) return null;
  const ext = /\.([A-Za-z0-9]{1,8})$/.exec((filename ?? '').slice(-16))?.[1].toLowerCase();
  return ext === undefined ? null : (BY_EXTENSION[ext] ?? null);
}
