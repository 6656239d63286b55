/** Ends a reading early with the status that says why (too_large, encrypted, failed). */
import type { AttachmentTextStatus } from './schemas.js';

export class ExtractionStop extends Error {
  constructor(readonly status: Exclude<AttachmentTextStatus, 'ok'>) {
    super(status);
  }
}
