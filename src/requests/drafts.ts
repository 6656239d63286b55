/**
 * A caller's requests on drafts (spec §2.5, §4.6), checked and answered in one place so REST
 * (src/routes/drafts.ts) and MCP behave the same. Checks everywhere: inbox in scope (404) →
 * permission (403) → draft exists (404) → the rest. Each write is one transaction opened here
 * (the caller's input is checked before it, the state decided inside it); writes publish their
 * events after the commit and wake the scheduled-drafts loop when it may have work.
 */
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { inboxFor, requirePermission } from '../auth/access.js';
import type { Permission } from '../auth/permissions.js';
import { issueDownloadUrl } from '../auth/downloads.js';
import { notFound } from '../core/errors.js';
import { PageQuery } from '../core/schemas.js';
import { inScope, type Principal } from '../auth/principal.js';
import type { Bus } from '../supervisor/bus.js';
import { approveScheduled, checkDraftCreate, checkDraftUpdate, checkDraftVersion, createDraft, rejectDraft, updateDraft } from '../mail/drafts/policy.js';
import { deleteDraft, draftAttachment, draftAttachments, draftById, draftRow, listDrafts, readDraft } from '../mail/drafts/repository.js';
import type { CreateDraftBody, Draft, UpdateDraftBody } from '../mail/drafts/schemas.js';
import { draftShape, type DraftRow } from '../mail/drafts/shapes.js';
import { DRAFT_STATUSES } from '../mail/drafts/states.js';
import { MAX_REJECT_REASON } from '../mail/limits.js';
import { idempotencyKey, recordIdempotent, replayIdempotent, requestHash } from '../mail/idempotency.js';
import { labelEdit, MAX_LABEL_LENGTH, MAX_LABELS_PER_EDIT } from '../mail/labels.js';
import { keysetPage, queryList, TimeQuery, timeBounds } from '../mail/query.js';
import { performSend, type SendResult } from '../mail/send-flow.js';
import { draftScope, type DraftTarget } from './draft-read.js';
import { LabelEditRequest } from './labels.js';
import { sendContext, type SendServices } from './send.js';

const DraftSendStatus = Type.Union(DRAFT_STATUSES.map((s) => Type.Literal(s)));

export const DraftListQuery = Type.Object(
  {
    ...PageQuery,
    ...TimeQuery,
    labels: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: MAX_LABEL_LENGTH * 4 }), { maxItems: MAX_LABELS_PER_EDIT })),
    /** svc extension: only drafts in these states (e.g. `pending_approval` for the approval queue). */
    send_status: Type.Optional(Type.Array(DraftSendStatus, { minItems: 1, maxItems: DRAFT_STATUSES.length })),
  },
  { additionalProperties: false },
);
export type DraftListQuery = Static<typeof DraftListQuery>;

/** A draft send may edit the sent message's labels, as a label edit does. */
export const SendDraftBody = LabelEditRequest;
export type SendDraftBody = LabelEditRequest;

/**
 * svc extension: `expected_updated_at` is the draft's `updated_at` as the owner read it; when
 * given, an approve of any other version is `409 conflict` (the owner approves what they saw).
 */
export const ApproveBody = Type.Object({ expected_updated_at: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) }, { additionalProperties: false });
export type ApproveBody = Static<typeof ApproveBody>;

export const RejectBody = Type.Object({ reason: Type.Optional(Type.Union([Type.String({ maxLength: MAX_REJECT_REASON }), Type.Null()])) }, { additionalProperties: false });
export type RejectBody = Static<typeof RejectBody>;

/** Publishes a draft write's events and wakes the scheduled-drafts loop when asked. */
export function publishDraftWrite(bus: Bus, write: { seqs: number[]; wake?: boolean }): void {
  for (const seq of write.seqs) bus.publish({ kind: 'event', seq });
  if (write.wake) bus.publish({ kind: 'wake', loop: 'scheduled-drafts' });
}

/** One page of drafts in one inbox or across the caller's scope; the body of `GET .../drafts`. */
export function draftListPage(db: Db, p: Principal, inboxId: string | undefined, q: DraftListQuery) {
  let inboxIds: string[] | 'all';
  if (inboxId !== undefined) {
    inboxIds = [inboxFor(db, p, inboxId, 'draft_read').inbox_id];
  } else {
    requirePermission(p, 'draft_read');
    inboxIds = p.inboxScope === 'all' ? 'all' : [...p.inboxScope].sort();
  }
  const filters = { ...timeBounds(q), labels: queryList(q.labels), sendStatus: q.send_status ? [...new Set(q.send_status)].sort() : undefined };
  const form = inboxId === undefined ? 'instance' : 'inbox';
  const { page, respond } = keysetPage(db, { route: `drafts.list.${form}`, filters: { inbox: inboxId ?? '*', ...filters, ascending: q.ascending === true }, principal: p }, q);
  const { items, next } = listDrafts(db, inboxIds, filters, page);
  return respond('drafts', items, next);
}

/** A draft's attachment with a signed download URL on `origin` (see messageAttachmentDownload). */
export function draftAttachmentDownload(db: Db, p: Principal, target: DraftTarget, attachmentId: string, origin: string) {
  const row = draftScope(db, p, target, 'draft_read');
  const attachment = draftAttachment(db, row.draft_id, attachmentId);
  if (!attachment) throw notFound('attachment');
  const link = issueDownloadUrl(p, origin, { kind: 'draft_attachment', inboxId: row.inbox_id, draftId: row.draft_id, attachmentId: attachment.attachment_id });
  return { ...attachment, ...link };
}

/** Creates a draft (or answers the one with the same `client_id`): checked first, then one transaction with its events. */
export function createDraftFor(db: Db, bus: Bus, p: Principal, inboxId: string, body: CreateDraftBody): Draft {
  const inbox = inboxFor(db, p, inboxId, 'draft_create');
  const create = checkDraftCreate(db, p, inbox, body);
  const write = create.earlier ?? db.transaction(() => createDraft(db, create))();
  publishDraftWrite(bus, write);
  return write.draft;
}

/** Patches a draft: the input checked first, then one transaction that decides on the draft as it is then. */
export function updateDraftFor(db: Db, bus: Bus, p: Principal, inboxId: string, draftId: string, body: UpdateDraftBody): Draft {
  const inbox = inboxFor(db, p, inboxId, 'draft_update');
  const update = checkDraftUpdate(db, p, inbox, draftId, body);
  const write = db.transaction(() => updateDraft(db, update))();
  publishDraftWrite(bus, write);
  return write.draft;
}

export function deleteDraftFor(db: Db, p: Principal, inboxId: string, draftId: string): void {
  const inbox = inboxFor(db, p, inboxId, 'draft_delete');
  if (!deleteDraft(db, inbox.inbox_id, draftId)) throw notFound('draft');
}

/**
 * Sends a draft now (overriding `send_at`) through the one send path, with optional label
 * edits; idempotent on the key (the `Idempotency-Key` header or MCP `idempotencyKey`).
 */
export async function sendDraftFor(
  svc: SendServices,
  p: Principal,
  inboxId: string,
  draftId: string,
  body: SendDraftBody,
  key: string | string[] | undefined,
): Promise<SendResult> {
  const inbox = inboxFor(svc.db, p, inboxId, 'draft_send');
  const draft = draftRow(svc.db, inbox.inbox_id, draftId);
  if (!draft) throw notFound('draft');
  const checkedKey = idempotencyKey(key);
  const edit = labelEdit(p, body.add_labels, body.remove_labels);
  const idempotency = checkedKey ? { key: checkedKey, hash: requestHash('draft_send', draft.draft_id, body) } : null;
  return performSend(sendContext(svc, p), { inbox, idempotency, source: { type: 'draft', draft, approve: false, extraLabels: edit.add, removeLabels: edit.remove } });
}

/**
 * The owner's approval of a draft, idempotent on the key. A draft whose send_at is ahead stays
 * scheduled (the draft is returned); any other is sent now through the one send path, which
 * emits draft.approved and draft.sent. What is sent is the version read here: performSend
 * refuses to commit if the draft changed meanwhile.
 */
export async function approveDraftFor(
  svc: SendServices,
  p: Principal,
  inboxId: string,
  draftId: string,
  body: ApproveBody | undefined,
  key: string | string[] | undefined,
): Promise<SendResult | Draft> {
  const { db } = svc;
  const inbox = inboxFor(db, p, inboxId);
  const draft = draftRow(db, inbox.inbox_id, draftId);
  if (!draft) throw notFound('draft');
  const expected = body?.expected_updated_at;
  const checkedKey = idempotencyKey(key);
  const idempotency = checkedKey
    ? { key: checkedKey, hash: requestHash('draft_approve', draft.draft_id, expected === undefined ? {} : { expected_updated_at: expected }) }
    : null;
  const replay = () => {
    const earlier = idempotency ? replayIdempotent(db, inbox.inbox_id, idempotency.key, idempotency.hash) : null;
    if (!earlier) return null;
    // An approval that scheduled the draft answers with the draft as it stands now.
    return earlier.messageId ? { message_id: earlier.messageId, thread_id: earlier.threadId! } : readDraft(db, inbox.inbox_id, draft.draft_id);
  };
  const earlier = replay();
  if (earlier) return earlier;
  checkDraftVersion(draft, expected);

  const scheduled = db.transaction(() => {
    const again = replay();
    if (again) return { answer: again, seqs: [] as number[] };
    const approved = approveScheduled(db, inbox.inbox_id, draft.draft_id, expected ?? draft.updated_at);
    if (!approved) return null;
    if (idempotency) recordIdempotent(db, inbox.inbox_id, idempotency.key, idempotency.hash, { kind: 'draft_approve', messageId: null, threadId: null, draftId: draft.draft_id });
    return { answer: draftShape(approved.row, draftAttachments(db, draft.draft_id)), seqs: approved.seqs };
  }).immediate();
  if (scheduled) {
    publishDraftWrite(svc.bus, { seqs: scheduled.seqs, wake: true });
    return scheduled.answer;
  }
  return performSend(sendContext(svc, p), { inbox, idempotency, source: { type: 'draft', draft, approve: true } });
}

/** The owner's rejection of a draft awaiting approval, with an optional reason for the agent. */
export function rejectDraftFor(db: Db, bus: Bus, p: Principal, inboxId: string, draftId: string, body: RejectBody): Draft {
  const inbox = inboxFor(db, p, inboxId);
  const { row, seqs } = db.transaction(() => rejectDraft(db, inbox.inbox_id, draftId, body.reason ?? null))();
  publishDraftWrite(bus, { seqs });
  return draftShape(row, draftAttachments(db, row.draft_id));
}
