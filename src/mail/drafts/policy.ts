/**
 * What a caller may do to a draft (spec §2.5, §4.6; docs/drafts.md): create, patch, approve a
 * schedule, reject; who keeps or withdraws the owner's approval, which states are frozen, and
 * the payload limits a draft shares with a message. Storage is drafts/repository.ts. Each write
 * is a check (before any transaction: the caller's input, parsed and decoded) and a write that
 * runs inside the transaction src/requests/drafts.ts opens, deciding on the row as it is then.
 */
import type { Db } from '../../db/open.js';
import { type InboxRow, requirePermission } from '../../auth/access.js';
import { ApiError, notFound } from '../../core/errors.js';
import { isOwner, type Principal } from '../../auth/principal.js';
import { checkAttachmentCount, checkSubject, composition, decodeAttachment, dedupeRecipients, parseRecipients, tooLarge, type Composition, type Recipient } from '../compose.js';
import { labelEdit, readVisibility } from '../labels.js';
import { deriveForward, deriveReply, loadOriginal, originalAttachments, type OriginalMessage } from '../outbound.js';
import { guardFindings, type GuardFinding, type GuardOptions } from '../guard.js';
import { MAX_MESSAGE_BYTES, MAX_MESSAGE_ID, MAX_RECIPIENTS } from '../limits.js';
import { draftTransition, nextApproved, nextDraftStatus, type DraftActor, type DraftFacts, type DraftTransition } from './states.js';
import type { CreateDraftBody, Draft, UpdateDraftBody } from './schemas.js';
import { draftShape, list, type DraftRow } from './shapes.js';
import { parseSendAt } from './send-at.js';
import { addDraftAttachments, draftAttachmentContents, draftAttachments, draftByClientId, draftEvent, draftRow, insertDraft, removeDraftAttachments, rewriteDraft, setDraftStatus, setGuardFindings, type NewDraft } from './repository.js';

/**
 * The approve call's `expected_updated_at`, when given, must be the draft's current version:
 * the owner approves exactly what they read, never an edit made after it.
 */
export function checkDraftVersion(row: Pick<DraftRow, 'updated_at'>, expectedUpdatedAt: string | undefined): void {
  if (expectedUpdatedAt === undefined || expectedUpdatedAt === row.updated_at) return;
  throw new ApiError('conflict', 'The draft changed after you read it, so it was not approved.', {
    fix: 'Read the draft again, check what it says now, and approve with its current `updated_at`.',
    extra: { updated_at: row.updated_at },
  });
}

const invalid = (message: string, fix: string) => new ApiError('validation_error', message, { fix });

/** A referenced Message-ID, with angle brackets. */
function messageIdRef(value: string, field: string): string {
  const id = value.trim().startsWith('<') ? value.trim() : `<${value.trim()}>`;
  if (!/^<[^\s<>]+>$/.test(id) || id.length > MAX_MESSAGE_ID) throw invalid(`\`${field}\` holds something that is not a Message-ID: ${JSON.stringify(value.slice(0, 100))}.`, 'Give Message-IDs like `<id@example.com>`.');
  return id;
}

/** Draft limits: a draft may have no recipient yet, but never more than a message may. */
function checkDraftLimits(to: Recipient[], cc: Recipient[], bcc: Recipient[], attachmentCount: number, bytes: number): void {
  const total = to.length + cc.length + bcc.length;
  if (total > MAX_RECIPIENTS) throw invalid(`A draft has at most ${MAX_RECIPIENTS} recipients in total; this one would have ${total}.`, 'Split the message, or put the recipients on a mailing list.');
  checkAttachmentCount(attachmentCount);
  if (bytes >= MAX_MESSAGE_BYTES) throw tooLarge(bytes);
}

/** What a message built from these parts would at least weigh: base64 attachments plus the bodies. */
const estimate = (attachmentBytes: number[], text: string | null, html: string | null) =>
  attachmentBytes.reduce((n, b) => n + Math.ceil(b / 3) * 4, 0) + Buffer.byteLength(text ?? '') + Buffer.byteLength(html ?? '');

const readOnlyScheduling = () =>
  new ApiError('missing_permission', 'This credential has the `read_only` send policy, so it cannot schedule a draft to be sent.', {
    fix: 'Leave out `send_at` (the owner can send or schedule the draft), or ask for the `direct` or `approval` send policy.',
  });

/**
 * The caller as the draft table sees it: the owner and `direct` credentials keep approval, others
 * withdraw it. A `guarded` credential acts as `direct` until the outbound guard holds what it
 * sends or schedules (`held`), and then as `approval` (src/mail/guard.ts, docs/guarded.md).
 */
export const draftActor = (p: Principal, held = false): DraftActor =>
  isOwner(p) || p.sendPolicy === 'direct' || (p.sendPolicy === 'guarded' && !held) ? 'owner_or_direct' : p.sendPolicy === 'guarded' ? 'approval' : p.sendPolicy;

/** The guarded policy's findings for what a draft would send (a forward with its original), read before any transaction. */
function guardedDraft(db: Db, inboxId: string, c: Composition, original: OriginalMessage | null, draftId: string | null, threading: GuardOptions['threading']): GuardFinding[] {
  const sent = original === null ? c : deriveForward(original, c, originalAttachments(db, original.rowid)).composition;
  return guardFindings(db, inboxId, sent, { draftId, threading });
}

const draftConflict = (state: 'sent' | 'rejected' | 'sending') =>
  state === 'sending'
    ? new ApiError('conflict', 'This draft is being sent right now and cannot change.', { fix: 'Read the draft again in a moment: it will be `sent` or `failed`.' })
    : state === 'sent'
      ? new ApiError('conflict', 'This draft was already sent and cannot change.', { fix: 'Create a new draft.' })
      : new ApiError('conflict', 'The owner rejected this draft; it is final.', { fix: 'Create a new draft.' });

/**
 * A draft waiting for the owner changes only by the owner or a `direct` credential (which could
 * send it anyway): what the owner approves is what the agent asked to send (issue 16 finding 4).
 */
const awaitingOwner = () =>
  new ApiError('conflict', 'This draft is waiting for the owner’s approval and cannot change until the owner decides.', {
    fix: 'Wait for `draft.approved` or `draft.rejected`, or delete the draft and send a corrected one (which asks the owner again).',
  });

/** The table's row, or its refusal thrown as the documented error of the draft routes. */
function allowed(step: DraftTransition): DraftTransition {
  if (typeof step.to !== 'object') return step;
  const refusal = step.to.refused;
  if (refusal === 'awaiting_owner') throw awaitingOwner();
  if (refusal === 'read_only_schedule' || refusal === 'read_only_send') throw readOnlyScheduling();
  throw draftConflict(refusal);
}

/**
 * How a schedule set by this caller starts, at create and at patch alike (the table's create
 * rows): approved for the owner and `direct` credentials, waiting for the owner under
 * `approval`; `read_only` cannot schedule at all (403, before the draft is even looked up).
 */
const scheduleStart = (actor: DraftActor) => allowed(draftTransition('new', 'create', { sendAt: 'set', actor }));

export interface DraftWrite {
  draft: Draft;
  /** Events appended, to publish after the commit. */
  seqs: number[];
  /** The scheduled-drafts loop may have new work. */
  wake: boolean;
}

/** A checked draft create: the new draft and the events its commit appends. */
export interface NewDraftCreate {
  earlier: null;
  draft: NewDraft;
  events: DraftTransition['events'];
  /** Why the guarded policy holds the schedule for the owner; null when it did not look. */
  guard: GuardFinding[] | null;
}
/** What checkDraftCreate found: the draft of an earlier create with the same `client_id`, or a new one. */
export type DraftCreate = { earlier: DraftWrite } | NewDraftCreate;

/** A checked draft patch: the caller's parsed fields, applied by updateDraft to the row it reads. */
export interface DraftUpdate {
  inboxId: string;
  draftId: string;
  body: UpdateDraftBody;
  facts: (row: DraftRow) => DraftFacts;
  sendAt: string | null | undefined;
  replyTo: Recipient[] | undefined;
  fields: { to: Recipient[] | undefined; cc: Recipient[] | undefined; bcc: Recipient[] | undefined };
  subject: string | null | undefined;
  added: ReturnType<typeof decodeAttachment>[];
  labels: ReturnType<typeof labelEdit>;
  actor: DraftActor;
  /** The guarded policy looked at the draft as the patch leaves it (a schedule): its findings, and the version it read. */
  guard: { findings: GuardFinding[]; updatedAt: string } | null;
}

/**
 * Checks a draft create (spec §2.5) before any transaction: the draft already created in this
 * inbox with the same `client_id` (answered as it is, no event), or the new draft to insert. The
 * caller has checked scope and `draft_create`. Order: `draft_send` for `send_at` → send policy →
 * `message_read` for a reply or forward → client_id → the payload → the referenced message (404)
 * → limits. createDraft then writes it in the caller's transaction.
 */
export function checkDraftCreate(db: Db, p: Principal, inbox: Pick<InboxRow, 'inbox_id'>, body: CreateDraftBody): DraftCreate {
  let actor = draftActor(p);
  let step = body.send_at != null ? (requirePermission(p, 'draft_send'), scheduleStart(actor)) : allowed(draftTransition('new', 'create', { sendAt: 'unchanged', actor }));
  const inReplyTo = body.in_reply_to ?? null;
  const forwardOf = body.forward_of ?? null;
  if (inReplyTo !== null || forwardOf !== null) requirePermission(p, 'message_read');
  const clientId = body.client_id ?? null;
  const earlier = clientId === null ? null : draftByClientId(db, inbox.inbox_id, clientId);
  if (earlier) return { earlier: { draft: draftShape(earlier, draftAttachments(db, earlier.draft_id)), seqs: [], wake: false } };

  if (inReplyTo !== null && forwardOf !== null) throw invalid('`in_reply_to` and `forward_of` cannot both be set.', 'A draft either replies to a message or forwards one.');
  const replyAll = body.reply_all === true;
  if (replyAll && inReplyTo === null) throw invalid('`reply_all` needs `in_reply_to`.', 'Set `in_reply_to` to the message the draft replies to.');
  if (replyAll && (body.to != null || body.cc != null || body.bcc != null)) {
    throw invalid('A reply-all draft takes its recipients from the original message: leave out `to`, `cc` and `bcc`.', 'Drop `reply_all` to choose the recipients yourself.');
  }
  const sendAt = body.send_at != null ? parseSendAt(body.send_at) : null;
  let c = composition(p, { to: body.to, cc: body.cc, bcc: body.bcc, reply_to: body.reply_to, subject: body.subject, text: body.text, html: body.html, attachments: body.attachments, labels: body.labels });
  let references = (body.references ?? []).map((r) => messageIdRef(r, 'references'));

  const referenced = inReplyTo ?? forwardOf;
  const original = referenced === null ? null : loadOriginal(db, inbox.inbox_id, messageIdRef(referenced, inReplyTo !== null ? 'in_reply_to' : 'forward_of'), readVisibility(p));
  if (referenced !== null && !original) throw notFound('message');
  if (inReplyTo !== null) {
    const derived = deriveReply(inbox.inbox_id, original!, c, replyAll);
    // The derived subject (`Re: …`) is the default; a subject the caller gave is kept.
    c = { ...derived.composition, subject: c.subject ?? derived.composition.subject };
    if (references.length === 0) references = derived.threading.references;
  }
  checkDraftLimits(c.to, c.cc, c.bcc, c.attachments.length, estimate(c.attachments.map((a) => a.content.byteLength), c.text, c.html));

  // A guarded schedule starts approved only if the guard finds nothing in what it will send.
  const guard = p.sendPolicy === 'guarded' && sendAt !== null ? guardedDraft(db, inbox.inbox_id, c, forwardOf !== null ? original : null, null, { inReplyTo: original && inReplyTo !== null ? original.messageId : null, references }) : null;
  if (guard && guard.length > 0) {
    actor = draftActor(p, true);
    step = scheduleStart(actor);
  }
  const status = nextDraftStatus(step, 'new')!;
  const draft: NewDraft = {
    inboxId: inbox.inbox_id,
    clientId,
    composition: c,
    inReplyTo: original && inReplyTo !== null ? original.messageId : null,
    forwardOf: original && forwardOf !== null ? original.messageId : null,
    replyAll,
    references,
    sendAt,
    status,
    approved: nextApproved(step, false, actor),
    createdBy: isOwner(p) ? 'owner' : p.id,
  };
  return { earlier: null, draft, events: step.events, guard };
}

/**
 * Writes a checked create; runs inside the caller's transaction, with `draft.created` (and
 * `draft.approval_required` when the schedule waits for the owner). A create with the same
 * `client_id` that committed since the check is answered as it is, without an event.
 */
export function createDraft(db: Db, create: NewDraftCreate): DraftWrite {
  const { draft, events } = create;
  const raced = draft.clientId == null ? null : draftByClientId(db, draft.inboxId, draft.clientId);
  if (raced) return { draft: draftShape(raced, draftAttachments(db, raced.draft_id)), seqs: [], wake: false };
  let row = insertDraft(db, draft);
  if (create.guard && create.guard.length > 0) {
    setGuardFindings(db, row.draft_id, create.guard);
    row = draftRow(db, draft.inboxId, row.draft_id)!;
  }
  const seqs = events.map((e) => draftEvent(db, e, row));
  return { draft: draftShape(row, draftAttachments(db, row.draft_id)), seqs, wake: draft.status === 'scheduled' };
}

/**
 * Applies a patch (spec §2.5). Content fields replace (null clears); attachments are removed by
 * id (unknown ids are ignored), then added; labels are added and removed; `send_at` schedules
 * (needs `draft_send`) or, with null, cancels the schedule. An edit by a caller other than the
 * owner or a `direct` credential withdraws approval: a scheduled draft then waits for the owner
 * again (`draft.approval_required`). Sending, sent and rejected drafts are `409 conflict`, and so
 * is a draft awaiting approval for any caller but the owner or a `direct` credential.
 * checkDraftUpdate reads and checks the caller's input before any transaction; updateDraft
 * applies it inside the caller's transaction, deciding on the row as it is then.
 */
export function checkDraftUpdate(db: Db, p: Principal, inbox: Pick<InboxRow, 'inbox_id'>, draftId: string, body: UpdateDraftBody): DraftUpdate {
  let actor = draftActor(p);
  if (typeof body.send_at === 'string') {
    requirePermission(p, 'draft_send');
    scheduleStart(actor);
  }
  const facts = (row: DraftRow): DraftFacts => ({ actor, sendAt: body.send_at === undefined ? 'unchanged' : body.send_at === null ? 'cleared' : 'set', approved: row.approved === 1 });
  const before = draftRow(db, inbox.inbox_id, draftId);
  if (!before) throw notFound('draft');
  // A draft waiting for the owner stays the owner's to decide, whatever a guarded credential changes.
  if (p.sendPolicy === 'guarded' && before.send_status === 'pending_approval') actor = draftActor(p, true);
  allowed(draftTransition(before.send_status, 'patch', facts(before)));

  const sendAt = typeof body.send_at === 'string' ? parseSendAt(body.send_at) : body.send_at;
  const replyTo = body.reply_to === undefined ? undefined : parseRecipients(body.reply_to, 'reply_to');
  if (replyTo && replyTo.length > 1) throw invalid('`reply_to` takes at most one address.', 'Give a single reply-to address.');
  const fields = { to: body.to === undefined ? undefined : parseRecipients(body.to, 'to'), cc: body.cc === undefined ? undefined : parseRecipients(body.cc, 'cc'), bcc: body.bcc === undefined ? undefined : parseRecipients(body.bcc, 'bcc') };
  const subject = body.subject === undefined ? undefined : checkSubject(body.subject);
  const added = (body.add_attachments ?? []).map(decodeAttachment);
  const labels = labelEdit(p, body.add_labels, body.remove_labels);
  // A guarded schedule stays (or becomes) approved only if the guard finds nothing in the draft as the patch leaves it.
  const schedules = typeof body.send_at === 'string' || (before.send_status === 'scheduled' && body.send_at !== null);
  let guard: DraftUpdate['guard'] = null;
  if (p.sendPolicy === 'guarded' && before.send_status !== 'pending_approval' && schedules) {
    const stored = (json: string | null, name: string) => parseRecipients(list(json) ?? [], name);
    const after: Composition = {
      to: fields.to ?? stored(before.to_addresses, 'to'),
      cc: fields.cc ?? stored(before.cc_addresses, 'cc'),
      bcc: fields.bcc ?? stored(before.bcc_addresses, 'bcc'),
      // What the schedule will send: the reply-to and headers it keeps count as much as what the patch changes.
      replyTo: replyTo ?? stored(before.reply_to, 'reply_to'),
      subject: subject === undefined ? before.subject : subject,
      text: body.text === undefined ? before.text : body.text,
      html: body.html === undefined ? before.html : body.html,
      attachments: [...draftAttachmentContents(db, before.draft_id, new Set(body.remove_attachments ?? [])), ...added],
      headers: before.headers ? (JSON.parse(before.headers) as Record<string, string>) : {},
      labels: [],
    };
    const original = before.forward_of ? loadOriginal(db, inbox.inbox_id, before.forward_of, { excluded: [] }) : null;
    const threading = { inReplyTo: before.in_reply_to, references: before.refs ? (JSON.parse(before.refs) as string[]) : [] };
    guard = { findings: guardedDraft(db, inbox.inbox_id, after, original, before.draft_id, threading), updatedAt: before.updated_at };
    if (guard.findings.length > 0) actor = draftActor(p, true);
  }
  return { inboxId: inbox.inbox_id, draftId, body, facts, sendAt, replyTo, fields, subject, added, labels, actor, guard };
}

/** Applies a checked patch (see checkDraftUpdate); runs inside the caller's transaction. */
export function updateDraft(db: Db, update: DraftUpdate): DraftWrite {
  const { body, facts, sendAt, replyTo, fields, subject, added, labels, actor } = update;
  const row = draftRow(db, update.inboxId, update.draftId);
  if (!row) throw notFound('draft');
  if (update.guard && row.updated_at !== update.guard.updatedAt) {
    throw new ApiError('conflict', 'The draft changed while this edit was being checked; nothing was changed.', { fix: 'Read the draft again and repeat the edit.' });
  }
  const step = allowed(draftTransition(row.send_status, 'patch', facts(row)));
  const stored = (json: string | null, name: string) => parseRecipients(list(json) ?? [], name);
  const [to, cc, bcc] = dedupeRecipients(fields.to ?? stored(row.to_addresses, 'to'), fields.cc ?? stored(row.cc_addresses, 'cc'), fields.bcc ?? stored(row.bcc_addresses, 'bcc'));
  const text = body.text === undefined ? row.text : body.text;
  const html = body.html === undefined ? row.html : body.html;
  const removed = new Set(body.remove_attachments ?? []);
  const kept = draftAttachments(db, row.draft_id).filter((a) => !removed.has(a.attachment_id));
  checkDraftLimits(to, cc, bcc, kept.length + added.length, estimate([...kept.map((a) => a.size), ...added.map((a) => a.content.byteLength)], text, html));

  const status = nextDraftStatus(step, row.send_status)!;
  const currentLabels = JSON.parse(row.labels) as string[];
  rewriteDraft(db, row.draft_id, {
    to: to.map((r) => r.display),
    cc: cc.map((r) => r.display),
    bcc: bcc.map((r) => r.display),
    replyTo: replyTo === undefined ? list(row.reply_to) : replyTo.map((r) => r.display),
    subject: subject === undefined ? row.subject : subject,
    text,
    html,
    labels: [...new Set([...currentLabels, ...labels.add])].filter((l) => !labels.remove.includes(l)),
    sendAt: sendAt === undefined ? row.send_at : sendAt,
    status,
    // A new state starts without the old one's reason (a rescheduled `failed` draft drops its error).
    reason: status === row.send_status ? row.send_reason : null,
    approved: nextApproved(step, row.approved === 1, actor),
  });
  removeDraftAttachments(db, row.draft_id, removed);
  addDraftAttachments(db, row.draft_id, added);
  if (update.guard) setGuardFindings(db, row.draft_id, update.guard.findings);
  const after = draftRow(db, update.inboxId, row.draft_id)!;
  const seqs = step.events.map((e) => draftEvent(db, e, after));
  return { draft: draftShape(after, draftAttachments(db, after.draft_id)), seqs, wake: status === 'scheduled' || row.send_status === 'scheduled' };
}

/**
 * The owner approves a draft whose `send_at` is still ahead: it becomes `scheduled` and approved
 * (`draft.approved`, once). Returns null when the draft should be sent now instead. A stale
 * `expectedUpdatedAt` is `409 conflict` (checkDraftVersion).
 */
export function approveScheduled(db: Db, inboxId: string, draftId: string, expectedUpdatedAt?: string, now = Date.now()): { row: DraftRow; seqs: number[] } | null {
  const row = draftRow(db, inboxId, draftId);
  if (!row) throw notFound('draft');
  const step = allowed(draftTransition(row.send_status, 'approve', { sendAtAhead: row.send_at !== null && Date.parse(row.send_at) > now, approved: row.approved === 1 }));
  checkDraftVersion(row, expectedUpdatedAt);
  const status = nextDraftStatus(step, row.send_status)!;
  if (status === 'sent') return null;
  if (status !== row.send_status || step.events.length > 0) setDraftStatus(db, row.draft_id, status, { approved: nextApproved(step, row.approved === 1, 'owner_or_direct') });
  const seqs = step.events.map((e) => draftEvent(db, e, row));
  return { row: draftRow(db, inboxId, draftId)!, seqs };
}

/**
 * The owner rejects a draft: final, with the reason. Rejecting again changes nothing (no event).
 * Runs inside the caller's transaction.
 */
export function rejectDraft(db: Db, inboxId: string, draftId: string, reason: string | null): { row: DraftRow; seqs: number[] } {
  const row = draftRow(db, inboxId, draftId);
  if (!row) throw notFound('draft');
  const step = allowed(draftTransition(row.send_status, 'reject'));
  const status = nextDraftStatus(step, row.send_status)!;
  if (status === row.send_status) return { row, seqs: [] };
  setDraftStatus(db, row.draft_id, status, { reason, approved: nextApproved(step, row.approved === 1, 'owner_or_direct') });
  const after = draftRow(db, inboxId, draftId)!;
  return { row: after, seqs: step.events.map((e) => draftEvent(db, e, after)) };
}
