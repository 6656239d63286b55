/**
 * Reading one draft (spec §4.6): the scope checks every draft request starts with, and the read a
 * reader thread answers (src/requests/read-ops.ts), apart from the writes in ./drafts.ts, which
 * reader threads never run.
 */
import type { Db } from '../db/open.js';
import { inboxFor, requirePermission } from '../auth/access.js';
import { inboxById } from '../auth/inbox-lookup.js';
import type { Permission } from '../auth/permissions.js';
import { inScope, type Principal } from '../auth/principal.js';
import { notFound } from '../core/errors.js';
import { draftAttachments, draftById, draftRow } from '../mail/drafts/repository.js';
import type { Draft } from '../mail/drafts/schemas.js';
import { draftShape, type DraftRow } from '../mail/drafts/shapes.js';
import { fromHeader } from '../mail/outbound.js';
import { compareParts } from '../mail/part-mismatch.js';

/** Where a draft is looked for: one inbox (the inbox-scoped form) or the caller's whole scope. */
export interface DraftTarget {
  inbox_id?: string;
  draft_id: string;
}

/** The draft after scope (404), permission (403) and existence (404), in that order. */
export function draftScope(db: Db, p: Principal, target: DraftTarget, permission: Permission): DraftRow {
  if (target.inbox_id !== undefined) {
    const inbox = inboxFor(db, p, target.inbox_id, permission);
    const row = draftRow(db, inbox.inbox_id, target.draft_id);
    if (!row) throw notFound('draft');
    return row;
  }
  const row = draftById(db, target.draft_id);
  if (!row || !inScope(p, row.inbox_id)) throw notFound('draft');
  requirePermission(p, permission);
  return row;
}

/**
 * One draft with its attachments, and what its approver must see beyond its fields: the `From:`
 * it goes out with and where its HTML and text parts differ (src/mail/part-mismatch.ts). A reader
 * thread answers it (src/requests/read-ops.ts), so the comparison never runs on the request thread.
 */
export function readDraftFor(db: Db, p: Principal, target: DraftTarget): Draft {
  const row = draftScope(db, p, target, 'draft_read');
  const draft = draftShape(row, draftAttachments(db, row.draft_id));
  const inbox = inboxById(db, row.inbox_id);
  return { ...draft, ...(inbox ? { from: fromHeader(inbox) } : {}), part_mismatch: compareParts({ text: row.text, html: row.html }) };
}
