/**
 * Piscina task file of the extraction lane (src/supervisor/pool.ts): reads one attachment's text.
 * A lane of its own so its workers carry a heap limit and can be ended on timeout without
 * touching the shared pool's MIME and signing work, and so pdf.js loads only here.
 */
import { extractAttachmentText } from '../../src/attachment-text/extract.js';
import type { AttachmentFile, AttachmentText } from '../../src/attachment-text/schemas.js';

export default function run(file: AttachmentFile): Promise<AttachmentText> {
  return extractAttachmentText(file);
}
