/**
 * Drafts (spec §2.5, §4.6; states in ARCHITECTURE §5): `draft` → `pending_approval` →
 * (`scheduled` | `sending`) → `sent`; `rejected` and `failed` are final. Storage, the response
 * shapes, and the draft events (`draft.*`, payload `{inbox_id, draft_id, timestamp, message_id?,
 * thread_id?}`, never content).
 */
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { uuidv7 } from '../db/ids.js';
import { appendEvent } from '../events/log.js';
import type { InboxRow } from '../auth/access.js';
import { requirePermission } from '../auth/access.js';
import { ApiError, notFound } from '../core/errors.js';
import type { Cursor } from '../core/pagination.js';
import { isOwner, type Principal } from '../auth/principal.js';
import {
  Addresses,
  AttachmentInput,
  checkAttachmentCount,
  checkSubject,
  composition,
  decodeAttachment,
  dedupeRecipients,
  MAX_MESSAGE_BYTES,
  MAX_RECIPIENTS,
  outgoingAttachment,
  parseRecipients,
  tooLarge,
  type Composition,
  type OutgoingAttachment,
  type Recipient,
  type StoredAttachmentRow,
} from './compose.js';
import { labelEdit, LabelList, readVisibility } from './labels.js';
import type { PageRequest } from './messages.js';
import { deriveReply, loadOriginal } from './outbound.js';
import { Attachment, attachmentShape } from './serialize.js';
import { previewOf, stableAttachmentId } from './store.js';
import { extractText } from './extract.js';
import { prepared } from '../db/statements.js';

export const DRAFT_STATUSES = ['draft', 'pending_approval', 'scheduled', 'sending', 'sent', 'rejected', 'failed'] as const;
export type DraftStatus = (typeof DRAFT_STATUSES)[number];

/** The AgentMail SDK's draft `send_status` enum; svc's full state goes in the `state` extension field. */
export const SDK_DRAFT_SEND_STATUSES = ['scheduled', 'sending', 'failed'] as const;
export type SdkDraftSendStatus = (typeof SDK_DRAFT_SEND_STATUSES)[number];

/**
 * What an AgentMail client reads as `send_status` for each svc state (docs/drafts.md). `rejected`
 * reads as `failed`: it will never be sent, a final non-delivery. The states the SDK cannot name
 * (`draft`, `pending_approval`, `sent`) leave the field out, as AgentMail does for an unsent draft.
 */
export const SDK_SEND_STATUS_OF: Readonly<Record<DraftStatus, SdkDraftSendStatus | null>> = {
  draft: null,
  pending_approval: null,
  scheduled: 'scheduled',
  sending: 'sending',
  sent: null,
  rejected: 'failed',
  failed: 'failed',
};

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const Strings = Type.Array(Type.String());

const draftItemFields = {
  inbox_id: Type.String(),
  draft_id: Type.String(),
  labels: Strings,
  to: Nullable(Strings),
  cc: Nullable(Strings),
  bcc: Nullable(Strings),
  subject: Nullable(Type.String()),
  preview: Nullable(Type.String()),
  attachments: Type.Array(Attachment),
  in_reply_to: Nullable(Type.String()),
  forward_of: Nullable(Type.String()),
  send_status: Type.Optional(Type.Unsafe<SdkDraftSendStatus>(Type.Union(SDK_DRAFT_SEND_STATUSES.map((s) => Type.Literal(s))))),
  /** svc extension: the full state, including those the SDK's `send_status` cannot name. */
  state: Type.Unsafe<DraftStatus>(Type.Union(DRAFT_STATUSES.map((s) => Type.Literal(s)))),
  send_reason: Nullable(Type.String()),
  send_at: Nullable(Type.String()),
  message_id: Nullable(Type.String()),
  thread_id: Nullable(Type.String()),
  updated_at: Type.String(),
};
export const DraftItem = Type.Object(draftItemFields);
export type DraftItem = Static<typeof DraftItem>;
export const Draft = Type.Object({
  ...draftItemFields,
  client_id: Nullable(Type.String()),
  reply_to: Nullable(Strings),
  text: Nullable(Type.String()),
  html: Nullable(Type.String()),
  reply_all: Type.Boolean(),
  references: Nullable(Strings),
  created_at: Type.String(),
});
export type Draft = Static<typeof Draft>;

export interface DraftRow {
  rowid: number;
  draft_id: string;
  inbox_id: string;
  client_id: string | null;
  to_addresses: string | null;
  cc_addresses: string | null;
  bcc_addresses: string | null;
  reply_to: string | null;
  subject: string | null;
  text: string | null;
  html: string | null;
  headers: string | null;
  labels: string;
  in_reply_to: string | null;
  forward_of: string | null;
  reply_all: number;
  refs: string | null;
  send_at: string | null;
  send_status: DraftStatus;
  send_reason: string | null;
  approved: number;
  created_by: string | null;
  message_id: string | null;
  thread_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface DraftAttachmentRow {
  attachment_id: string;
  filename: string | null;
  content_type: string | null;
  content_disposition: string | null;
  content_id: string | null;
  size: number;
}

const list = (json: string | null): string[] | null => (json ? (JSON.parse(json) as string[]) : null);
const json = (items: readonly string[] | null | undefined): string | null => (items && items.length ? JSON.stringify(items) : null);

export function draftRow(db: Db, inboxId: string, draftId: string): DraftRow | null {
  return (prepared(db, 'SELECT rowid, * FROM drafts WHERE inbox_id = ? AND draft_id = ?').get(inboxId, draftId) as DraftRow | undefined) ?? null;
}

export function draftAttachments(db: Db, draftId: string): DraftAttachmentRow[] {
  return prepared(db, 'SELECT attachment_id, filename, content_type, content_disposition, content_id, size FROM draft_attachments WHERE draft_id = ? ORDER BY position').all(draftId) as DraftAttachmentRow[];
}

export function draftAttachmentContents(db: Db, draftId: string): OutgoingAttachment[] {
  const rows = prepared(db, 'SELECT filename, content_type, content_disposition, content_id, content FROM draft_attachments WHERE draft_id = ? ORDER BY position').all(draftId) as StoredAttachmentRow[];
  return rows.map(outgoingAttachment);
}

export function draftItemShape(row: DraftRow, attachments: DraftAttachmentRow[]): DraftItem {
  const sdkSendStatus = SDK_SEND_STATUS_OF[row.send_status];
  return {
    inbox_id: row.inbox_id,
    draft_id: row.draft_id,
    labels: (JSON.parse(row.labels) as string[]).slice().sort(),
    to: list(row.to_addresses),
    cc: list(row.cc_addresses),
    bcc: list(row.bcc_addresses),
    subject: row.subject,
    preview: previewOf(extractText(row.text)),
    attachments: attachments.map(attachmentShape),
    in_reply_to: row.in_reply_to,
    forward_of: row.forward_of,
    ...(sdkSendStatus === null ? {} : { send_status: sdkSendStatus }),
    state: row.send_status,
    send_reason: row.send_reason,
    send_at: row.send_at,
    message_id: row.message_id,
    thread_id: row.thread_id,
    updated_at: row.updated_at,
  };
}

export function draftShape(row: DraftRow, attachments: DraftAttachmentRow[]): Draft {
  return {
    ...draftItemShape(row, attachments),
    client_id: row.client_id,
    reply_to: list(row.reply_to),
    text: row.text,
    html: row.html,
    reply_all: row.reply_all === 1,
    references: list(row.refs),
    created_at: row.created_at,
  };
}

export function readDraft(db: Db, inboxId: string, draftId: string): Draft | null {
  const row = draftRow(db, inboxId, draftId);
  return row ? draftShape(row, draftAttachments(db, row.draft_id)) : null;
}

export interface NewDraft {
  inboxId: string;
  clientId?: string | null;
  composition: Composition;
  inReplyTo?: string | null;
  forwardOf?: string | null;
  replyAll?: boolean;
  references?: string[];
  sendAt?: string | null;
  status: DraftStatus;
  approved: boolean;
  createdBy: string;
}

/** Inserts a draft and its attachments. Runs inside the caller's transaction. */
export function insertDraft(db: Db, d: NewDraft): DraftRow {
  const draftId = uuidv7();
  const now = new Date().toISOString();
  const c = d.composition;
  prepared(
    db,
    `INSERT INTO drafts (draft_id, inbox_id, client_id, to_addresses, cc_addresses, bcc_addresses, reply_to, subject, text, html, headers, labels,
       in_reply_to, forward_of, reply_all, refs, send_at, send_status, approved, created_by, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    draftId,
    d.inboxId,
    d.clientId ?? null,
    json(c.to.map((r) => r.display)),
    json(c.cc.map((r) => r.display)),
    json(c.bcc.map((r) => r.display)),
    json(c.replyTo.map((r) => r.display)),
    c.subject,
    c.text,
    c.html,
    Object.keys(c.headers).length ? JSON.stringify(c.headers) : null,
    JSON.stringify([...new Set(c.labels)]),
    d.inReplyTo ?? null,
    d.forwardOf ?? null,
    d.replyAll ? 1 : 0,
    json(d.references),
    d.sendAt ?? null,
    d.status,
    d.approved ? 1 : 0,
    d.createdBy,
    now,
    now,
  );
  addDraftAttachments(db, draftId, c.attachments);
  return draftRow(db, d.inboxId, draftId)!;
}

export function addDraftAttachments(db: Db, draftId: string, attachments: readonly OutgoingAttachment[]): void {
  const start = (prepared(db, 'SELECT coalesce(max(position), -1) + 1 AS p FROM draft_attachments WHERE draft_id = ?').get(draftId) as { p: number }).p;
  const insert = prepared(
    db,
    'INSERT INTO draft_attachments (draft_id, attachment_id, position, filename, content_type, content_disposition, content_id, size, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  attachments.forEach((a, i) => insert.run(draftId, stableAttachmentId(`${draftId}/${uuidv7()}`, start + i), start + i, a.filename, a.contentType, a.contentDisposition, a.contentId, a.content.byteLength, a.content));
}

/** Appends a `draft.*` event for the draft as it now stands; returns its seq. */
export function draftEvent(db: Db, eventType: `draft.${'created' | 'approval_required' | 'approved' | 'rejected' | 'sent'}`, row: Pick<DraftRow, 'inbox_id' | 'draft_id' | 'message_id' | 'thread_id'>): number {
  const payload = {
    inbox_id: row.inbox_id,
    draft_id: row.draft_id,
    timestamp: new Date().toISOString(),
    ...(row.message_id ? { message_id: row.message_id, thread_id: row.thread_id } : {}),
  };
  return appendEvent(db, { eventType, inboxId: row.inbox_id, payloadKey: 'draft', payload }).seq;
}

/**
 * `updated_at = <this>` with the current time as its one parameter. `updated_at` is the draft's
 * version (the owner approves the version they read), so every write moves it strictly forward:
 * to now, or 1 ms past the previous value when the clock has not moved on (or went back).
 */
export const NEXT_UPDATED_AT = "max(?, strftime('%Y-%m-%dT%H:%M:%fZ', updated_at, '+0.001 seconds'))";

export function setDraftStatus(db: Db, draftId: string, status: DraftStatus, fields: { reason?: string | null; messageId?: string; threadId?: string; approved?: boolean } = {}): void {
  prepared(
    db,
    `UPDATE drafts SET send_status = ?, send_reason = ?, message_id = coalesce(?, message_id), thread_id = coalesce(?, thread_id),
       approved = coalesce(?, approved), updated_at = ${NEXT_UPDATED_AT} WHERE draft_id = ?`,
  ).run(status, fields.reason ?? null, fields.messageId ?? null, fields.threadId ?? null, fields.approved === undefined ? null : fields.approved ? 1 : 0, new Date().toISOString(), draftId);
}

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

// ---- creating, editing, listing and deleting (the draft routes) ----

/** References a draft may carry, like the threading of a reply. */
export const MAX_DRAFT_REFERENCES = 100;
export const MAX_REJECT_REASON = 1000;
const MAX_MESSAGE_ID = 998;

const invalid = (message: string, fix: string) => new ApiError('validation_error', message, { fix });
const NullableString = (maxLength: number) => Type.Optional(Type.Union([Type.String({ maxLength }), Type.Null()]));
const OptionalAddresses = Type.Optional(Type.Union([Addresses, Type.Null()]));
const Attachments = Type.Optional(Type.Union([Type.Array(AttachmentInput, { maxItems: 1000 }), Type.Null()]));

/** Creation fields (spec §2.5). Recipient fields take a list, or a single string. */
export const CreateDraftBody = Type.Object(
  {
    to: OptionalAddresses,
    cc: OptionalAddresses,
    bcc: OptionalAddresses,
    reply_to: OptionalAddresses,
    subject: NullableString(64 * 1024),
    text: NullableString(6 * 1024 * 1024),
    html: NullableString(6 * 1024 * 1024),
    attachments: Attachments,
    labels: Type.Optional(Type.Union([LabelList, Type.Null()])),
    in_reply_to: NullableString(MAX_MESSAGE_ID + 2),
    forward_of: NullableString(MAX_MESSAGE_ID + 2),
    reply_all: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    references: Type.Optional(Type.Union([Type.Array(Type.String({ maxLength: MAX_MESSAGE_ID + 2 }), { maxItems: MAX_DRAFT_REFERENCES }), Type.Null()])),
    send_at: NullableString(64),
    client_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 128 }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type CreateDraftBody = Static<typeof CreateDraftBody>;

/** Patch fields (spec §2.5): content fields (`null` clears), attachment and label edits, `send_at`. */
export const UpdateDraftBody = Type.Object(
  {
    to: OptionalAddresses,
    cc: OptionalAddresses,
    bcc: OptionalAddresses,
    reply_to: OptionalAddresses,
    subject: NullableString(64 * 1024),
    text: NullableString(6 * 1024 * 1024),
    html: NullableString(6 * 1024 * 1024),
    add_attachments: Attachments,
    remove_attachments: Type.Optional(Type.Union([Type.Array(Type.String({ maxLength: 128 }), { maxItems: 1000 }), Type.Null()])),
    add_labels: Type.Optional(Type.Union([LabelList, Type.Null()])),
    remove_labels: Type.Optional(Type.Union([LabelList, Type.Null()])),
    send_at: NullableString(64),
  },
  { additionalProperties: false },
);
export type UpdateDraftBody = Static<typeof UpdateDraftBody>;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** `send_at` as stored: RFC 3339 in, UTC with milliseconds out. A time in the past is allowed. */
export function parseSendAt(value: string): string {
  const bad = () => invalid(`\`send_at\` is not an RFC 3339 timestamp: ${JSON.stringify(value.slice(0, 64))}.`, 'Use a timestamp with a time zone, e.g. `2030-01-31T09:00:00Z` or `2030-01-31T10:00:00+01:00`.');
  const m = RFC3339.exec(value);
  if (!m) throw bad();
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const offsetHours = m[9] === undefined ? 0 : Number(m[9]);
  const offsetMinutes = m[10] === undefined ? 0 : Number(m[10]);
  const calendarDay = new Date(Date.UTC(year, month - 1, day));
  const dayExists = month >= 1 && month <= 12 && calendarDay.getUTCMonth() === month - 1 && calendarDay.getUTCDate() === day;
  if (!dayExists || hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) throw bad();
  const ms = Date.parse(value.replace(/[t ]/, 'T'));
  if (Number.isNaN(ms)) throw bad();
  return new Date(ms).toISOString();
}

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
 * How a schedule set by this caller starts: the owner and `direct` credentials schedule it
 * approved; under `approval` it waits for the owner; `read_only` cannot schedule at all.
 */
function scheduleBy(p: Principal): { status: 'scheduled' | 'pending_approval'; approved: boolean } {
  if (isOwner(p) || p.sendPolicy === 'direct') return { status: 'scheduled', approved: true };
  if (p.sendPolicy === 'approval') return { status: 'pending_approval', approved: false };
  throw readOnlyScheduling();
}

/** Edits by anyone but the owner or a `direct` credential withdraw the owner's approval. */
const keepsApproval = (p: Principal) => isOwner(p) || p.sendPolicy === 'direct';

export function draftByClientId(db: Db, inboxId: string, clientId: string): DraftRow | null {
  return (prepared(db, 'SELECT rowid, * FROM drafts WHERE inbox_id = ? AND client_id = ?').get(inboxId, clientId) as DraftRow | undefined) ?? null;
}

/** The draft by id alone, for the instance-wide routes; the caller checks its inbox is in scope. */
export function draftById(db: Db, draftId: string): DraftRow | null {
  return (prepared(db, 'SELECT rowid, * FROM drafts WHERE draft_id = ?').get(draftId) as DraftRow | undefined) ?? null;
}

export interface DraftWrite {
  draft: Draft;
  /** Events appended, to publish after the commit. */
  seqs: number[];
  /** The scheduled-drafts loop may have new work. */
  wake: boolean;
}

/**
 * Creates a draft (spec §2.5), or returns the one already created in this inbox with the same
 * `client_id` (no event). The caller has checked scope and `draft_create`. Order: `draft_send`
 * for `send_at` → send policy → `message_read` for a reply or forward → client_id → the payload
 * → the referenced message (404) → limits → one transaction with `draft.created` (and
 * `draft.approval_required` when the schedule waits for the owner).
 */
export function createDraft(db: Db, p: Principal, inbox: Pick<InboxRow, 'inbox_id'>, body: CreateDraftBody): DraftWrite {
  const schedule = body.send_at != null ? (requirePermission(p, 'draft_send'), scheduleBy(p)) : null;
  const inReplyTo = body.in_reply_to ?? null;
  const forwardOf = body.forward_of ?? null;
  if (inReplyTo !== null || forwardOf !== null) requirePermission(p, 'message_read');
  const clientId = body.client_id ?? null;
  const earlier = clientId === null ? null : draftByClientId(db, inbox.inbox_id, clientId);
  if (earlier) return { draft: draftShape(earlier, draftAttachments(db, earlier.draft_id)), seqs: [], wake: false };

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

  const status = schedule?.status ?? 'draft';
  return db.transaction((): DraftWrite => {
    const raced = clientId === null ? null : draftByClientId(db, inbox.inbox_id, clientId);
    if (raced) return { draft: draftShape(raced, draftAttachments(db, raced.draft_id)), seqs: [], wake: false };
    const row = insertDraft(db, {
      inboxId: inbox.inbox_id,
      clientId,
      composition: c,
      inReplyTo: original && inReplyTo !== null ? original.messageId : null,
      forwardOf: original && forwardOf !== null ? original.messageId : null,
      replyAll,
      references,
      sendAt,
      status,
      approved: schedule?.approved ?? false,
      createdBy: isOwner(p) ? 'owner' : p.id,
    });
    const seqs = [draftEvent(db, 'draft.created', row)];
    if (status === 'pending_approval') seqs.push(draftEvent(db, 'draft.approval_required', row));
    return { draft: draftShape(row, draftAttachments(db, row.draft_id)), seqs, wake: status === 'scheduled' };
  }).immediate();
}

const draftConflict = (d: DraftRow) =>
  d.send_status === 'sending'
    ? new ApiError('conflict', 'This draft is being sent right now and cannot change.', { fix: 'Read the draft again in a moment: it will be `sent` or `failed`.' })
    : d.send_status === 'sent'
      ? new ApiError('conflict', 'This draft was already sent and cannot change.', { fix: 'Create a new draft.' })
      : new ApiError('conflict', 'The owner rejected this draft; it is final.', { fix: 'Create a new draft.' });

const FROZEN = new Set<DraftStatus>(['sending', 'sent', 'rejected']);

/**
 * A draft waiting for the owner changes only by the owner or a `direct` credential (which could
 * send it anyway): what the owner approves is what the agent asked to send (issue 16 finding 4).
 */
const awaitingOwner = () =>
  new ApiError('conflict', 'This draft is waiting for the owner’s approval and cannot change until the owner decides.', {
    fix: 'Wait for `draft.approved` or `draft.rejected`, or delete the draft and send a corrected one (which asks the owner again).',
  });
const lockedForApproval = (p: Principal, d: DraftRow) => d.send_status === 'pending_approval' && !keepsApproval(p);

/**
 * Applies a patch (spec §2.5). Content fields replace (null clears); attachments are removed by
 * id (unknown ids are ignored), then added; labels are added and removed; `send_at` schedules
 * (needs `draft_send`) or, with null, cancels the schedule. An edit by a caller other than the
 * owner or a `direct` credential withdraws approval: a scheduled draft then waits for the owner
 * again (`draft.approval_required`). Sending, sent and rejected drafts are `409 conflict`, and so
 * is a draft awaiting approval for any caller but the owner or a `direct` credential.
 */
export function updateDraft(db: Db, p: Principal, inbox: Pick<InboxRow, 'inbox_id'>, draftId: string, body: UpdateDraftBody): DraftWrite {
  const schedule = typeof body.send_at === 'string' ? (requirePermission(p, 'draft_send'), scheduleBy(p)) : null;
  const before = draftRow(db, inbox.inbox_id, draftId);
  if (!before) throw notFound('draft');
  if (FROZEN.has(before.send_status)) throw draftConflict(before);
  if (lockedForApproval(p, before)) throw awaitingOwner();

  const sendAt = typeof body.send_at === 'string' ? parseSendAt(body.send_at) : body.send_at;
  const replyTo = body.reply_to === undefined ? undefined : parseRecipients(body.reply_to, 'reply_to');
  if (replyTo && replyTo.length > 1) throw invalid('`reply_to` takes at most one address.', 'Give a single reply-to address.');
  const fields = { to: body.to === undefined ? undefined : parseRecipients(body.to, 'to'), cc: body.cc === undefined ? undefined : parseRecipients(body.cc, 'cc'), bcc: body.bcc === undefined ? undefined : parseRecipients(body.bcc, 'bcc') };
  const subject = body.subject === undefined ? undefined : checkSubject(body.subject);
  const added = (body.add_attachments ?? []).map(decodeAttachment);
  const labels = labelEdit(p, body.add_labels, body.remove_labels);

  return db.transaction((): DraftWrite => {
    const row = draftRow(db, inbox.inbox_id, draftId);
    if (!row) throw notFound('draft');
    if (FROZEN.has(row.send_status)) throw draftConflict(row);
    if (lockedForApproval(p, row)) throw awaitingOwner();
    const stored = (json: string | null, name: string) => parseRecipients(list(json) ?? [], name);
    const [to, cc, bcc] = dedupeRecipients(fields.to ?? stored(row.to_addresses, 'to'), fields.cc ?? stored(row.cc_addresses, 'cc'), fields.bcc ?? stored(row.bcc_addresses, 'bcc'));
    const text = body.text === undefined ? row.text : body.text;
    const html = body.html === undefined ? row.html : body.html;
    const removed = new Set(body.remove_attachments ?? []);
    const kept = draftAttachments(db, row.draft_id).filter((a) => !removed.has(a.attachment_id));
    checkDraftLimits(to, cc, bcc, kept.length + added.length, estimate([...kept.map((a) => a.size), ...added.map((a) => a.content.byteLength)], text, html));

    const approved = schedule ? schedule.approved : keepsApproval(p) && row.approved === 1;
    const status: DraftStatus =
      sendAt === null
        ? 'draft'
        : schedule || row.send_status === 'scheduled'
          ? approved
            ? 'scheduled'
            : 'pending_approval'
          : row.send_status;
    const currentLabels = JSON.parse(row.labels) as string[];
    const nextLabels = [...new Set([...currentLabels, ...labels.add])].filter((l) => !labels.remove.includes(l));
    prepared(
      db,
      `UPDATE drafts SET to_addresses = ?, cc_addresses = ?, bcc_addresses = ?, reply_to = ?, subject = ?, text = ?, html = ?, labels = ?, send_at = ?,
         send_status = ?, send_reason = ?, approved = ?, updated_at = ${NEXT_UPDATED_AT} WHERE draft_id = ?`,
    ).run(
      json(to.map((r) => r.display)),
      json(cc.map((r) => r.display)),
      json(bcc.map((r) => r.display)),
      replyTo === undefined ? row.reply_to : json(replyTo.map((r) => r.display)),
      subject === undefined ? row.subject : subject,
      text,
      html,
      JSON.stringify(nextLabels),
      sendAt === undefined ? row.send_at : sendAt,
      status,
      status === row.send_status ? row.send_reason : null,
      approved ? 1 : 0,
      new Date().toISOString(),
      row.draft_id,
    );
    if (removed.size > 0) {
      const remove = prepared(db, 'DELETE FROM draft_attachments WHERE draft_id = ? AND attachment_id = ?');
      for (const id of removed) remove.run(row.draft_id, id);
    }
    addDraftAttachments(db, row.draft_id, added);
    const after = draftRow(db, inbox.inbox_id, row.draft_id)!;
    const seqs: number[] = [];
    if (status === 'pending_approval' && row.send_status !== 'pending_approval') seqs.push(draftEvent(db, 'draft.approval_required', after));
    if (status === 'scheduled' && row.send_status === 'pending_approval') seqs.push(draftEvent(db, 'draft.approved', after));
    return { draft: draftShape(after, draftAttachments(db, after.draft_id)), seqs, wake: status === 'scheduled' || row.send_status === 'scheduled' };
  }).immediate();
}

export function deleteDraft(db: Db, inboxId: string, draftId: string): boolean {
  return prepared(db, 'DELETE FROM drafts WHERE inbox_id = ? AND draft_id = ?').run(inboxId, draftId).changes > 0;
}

/**
 * The owner approves a draft whose `send_at` is still ahead: it becomes `scheduled` and approved
 * (`draft.approved`, once). Returns null when the draft should be sent now instead. A stale
 * `expectedUpdatedAt` is `409 conflict` (checkDraftVersion).
 */
export function approveScheduled(db: Db, inboxId: string, draftId: string, expectedUpdatedAt?: string, now = Date.now()): { row: DraftRow; seqs: number[] } | null {
  const row = draftRow(db, inboxId, draftId);
  if (!row) throw notFound('draft');
  if (row.send_status === 'sent' || row.send_status === 'rejected') throw draftConflict(row);
  checkDraftVersion(row, expectedUpdatedAt);
  if (row.send_at === null || Date.parse(row.send_at) <= now) return null;
  const seqs: number[] = [];
  if (!(row.send_status === 'scheduled' && row.approved === 1)) {
    setDraftStatus(db, row.draft_id, 'scheduled', { approved: true });
    seqs.push(draftEvent(db, 'draft.approved', row));
  }
  return { row: draftRow(db, inboxId, draftId)!, seqs };
}

/** The owner rejects a draft: final, with the reason. Rejecting again changes nothing (no event). */
export function rejectDraft(db: Db, inboxId: string, draftId: string, reason: string | null): { row: DraftRow; seqs: number[] } {
  return db.transaction(() => {
    const row = draftRow(db, inboxId, draftId);
    if (!row) throw notFound('draft');
    if (row.send_status === 'rejected') return { row, seqs: [] };
    if (FROZEN.has(row.send_status)) throw draftConflict(row);
    setDraftStatus(db, row.draft_id, 'rejected', { reason, approved: false });
    const after = draftRow(db, inboxId, draftId)!;
    return { row: after, seqs: [draftEvent(db, 'draft.rejected', after)] };
  }).immediate();
}

export interface DraftFilters {
  before?: string;
  after?: string;
  labels?: string[];
  /** Only drafts in one of these states. */
  sendStatus?: DraftStatus[];
}

/** Drafts of the given inboxes ('all': every inbox) by last update, keyset-paged on [updated_at, rowid]. */
export function listDrafts(db: Db, inboxIds: readonly string[] | 'all', filters: DraftFilters, page: PageRequest): { items: DraftItem[]; next: Cursor | null } {
  const where: string[] = [];
  const params: unknown[] = [];
  if (inboxIds !== 'all') {
    where.push('d.inbox_id IN (SELECT value FROM json_each(?))');
    params.push(JSON.stringify(inboxIds));
  }
  if (filters.before) {
    where.push('d.updated_at < ?');
    params.push(filters.before);
  }
  if (filters.after) {
    where.push('d.updated_at > ?');
    params.push(filters.after);
  }
  for (const label of filters.labels ?? []) {
    where.push('EXISTS (SELECT 1 FROM json_each(d.labels) WHERE value = ?)');
    params.push(label);
  }
  if (filters.sendStatus) {
    where.push('d.send_status IN (SELECT value FROM json_each(?))');
    params.push(JSON.stringify(filters.sendStatus));
  }
  const [cmp, dir] = page.ascending ? ['>', 'ASC'] : ['<', 'DESC'];
  if (page.cursor) {
    where.push(`d.updated_at ${cmp}= ? AND (d.updated_at ${cmp} ? OR d.rowid ${cmp} ?)`);
    params.push(page.cursor[0], page.cursor[0], page.cursor[1]);
  }
  const rows = prepared(db, `SELECT d.rowid, d.* FROM drafts d ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY d.updated_at ${dir}, d.rowid ${dir} LIMIT ?`).all(
    ...params,
    page.limit + 1,
  ) as DraftRow[];
  const more = rows.length > page.limit;
  if (more) rows.length = page.limit;
  const byDraft = new Map<string, DraftAttachmentRow[]>();
  const attachmentRows = prepared(
    db,
    'SELECT draft_id, attachment_id, filename, content_type, content_disposition, content_id, size FROM draft_attachments WHERE draft_id IN (SELECT value FROM json_each(?)) ORDER BY draft_id, position',
  ).all(JSON.stringify(rows.map((r) => r.draft_id))) as (DraftAttachmentRow & { draft_id: string })[];
  for (const { draft_id, ...a } of attachmentRows) byDraft.set(draft_id, [...(byDraft.get(draft_id) ?? []), a]);
  const last = rows[rows.length - 1];
  return { items: rows.map((r) => draftItemShape(r, byDraft.get(r.draft_id) ?? [])), next: more ? [last.updated_at, last.rowid] : null };
}

export function draftAttachment(db: Db, draftId: string, attachmentId: string): DraftAttachmentRow | null {
  return (
    (prepared(db, 'SELECT attachment_id, filename, content_type, content_disposition, content_id, size FROM draft_attachments WHERE draft_id = ? AND attachment_id = ?').get(draftId, attachmentId) as
      | DraftAttachmentRow
      | undefined) ?? null
  );
}

/** The bytes of a draft attachment, for a download URL. */
export function draftAttachmentFile(db: Db, inboxId: string, draftId: string, attachmentId: string): { filename: string | null; content_type: string | null; content: Buffer } | null {
  return (
    (prepared(
      db,
      'SELECT a.filename, a.content_type, a.content FROM draft_attachments a JOIN drafts d ON d.draft_id = a.draft_id WHERE d.inbox_id = ? AND d.draft_id = ? AND a.attachment_id = ?',
    ).get(inboxId, draftId, attachmentId) as { filename: string | null; content_type: string | null; content: Buffer } | undefined) ?? null
  );
}
