/**
 * Piscina task file of the extraction lane (src/supervisor/pool.ts): reads one attachment's text.
 * A lane of its own so its workers carry a heap limit and can be ended on timeout without
 * touching the shared pool's MIME and signing work, and so pdf.js loads only here.
 */
import { extractAttachmentText } from '../../src/attachment-text/extract.js';
import type { AttachmentFile, AttachmentText } from '../../src/attachment-text/schemas.js';
import { loadPdfjs } from '../../src/attachment-text/pdf.js';

/** Asked of a new worker before its first file, so loading pdf.js never counts against a file's time. */
export const WARM_UP = 'warm-up';

export default async function run(file: AttachmentFile | typeof WARM_UP): Promise<AttachmentText | null> {
  if (file === WARM_UP) {
    await loadPdfjs();
    return null;
  }
  return extractAttachmentText(file);
}
