/**
 * Drafts (spec §2.5, §4.6; states in docs/drafts.md). List and read exist inbox-scoped
 * (`/inboxes/{inbox_id}/drafts...`) and instance-wide (`/drafts...`); writes are inbox-scoped.
 * Checks everywhere: inbox in scope (404) → permission (403) → draft exists (404) → the rest.
 * Every state change commits with its event; events are published after the commit, and
 * anything that may give the scheduled-drafts loop work wakes it.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { inboxFor, requirePermission } from '../http/access.js';
import { issueDownloadUrl } from '../http/downloads.js';
import { notFound } from '../http/errors.js';
import { PageQuery } from '../http/pagination.js';
import { inScope, type Principal } from '../http/principal.js';
import {
  approveScheduled,
  createDraft,
  CreateDraftBody,
  deleteDraft,
  Draft,
  draftAttachment,
  draftById,
  DraftItem,
  draftRow,
  draftShape,
  draftAttachments,
  listDrafts,
  MAX_REJECT_REASON,
  readDraft,
  rejectDraft,
  updateDraft,
  UpdateDraftBody,
  type DraftRow,
  type DraftWrite,
} from '../mail/drafts.js';
import { idempotencyKey, recordIdempotent, replayIdempotent, requestHash } from '../mail/idempotency.js';
import { labelEdit, LabelEditBody, MAX_LABEL_LENGTH, MAX_LABELS_PER_EDIT } from '../mail/labels.js';
import { keysetPage, queryList, TimeQuery, timeBounds } from '../mail/query.js';
import { performSend } from '../mail/send-flow.js';
import { AttachmentDownload, ListOf } from '../mail/serialize.js';
import { sendContext } from './send.js';

const InboxParams = Type.Object({ inbox_id: Type.String({ maxLength: 320 }) });
const ListParams = Type.Object({ inbox_id: Type.Optional(Type.String({ maxLength: 320 })) });
const DraftParams = Type.Object({ inbox_id: Type.Optional(Type.String({ maxLength: 320 })), draft_id: Type.String({ maxLength: 64 }) });
const InboxDraftParams = Type.Object({ inbox_id: Type.String({ maxLength: 320 }), draft_id: Type.String({ maxLength: 64 }) });
const AttachmentParams = Type.Object({ ...DraftParams.properties, attachment_id: Type.String({ maxLength: 128 }) });

const DraftListQuery = Type.Object(
  {
    ...PageQuery,
    ...TimeQuery,
    labels: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: MAX_LABEL_LENGTH * 4 }), { maxItems: MAX_LABELS_PER_EDIT })),
  },
  { additionalProperties: false },
);
const SendDraftBody = Type.Object(
  { add_labels: Type.Optional(Type.Union([LabelEditBody.add_labels, Type.Null()])), remove_labels: Type.Optional(Type.Union([LabelEditBody.remove_labels, Type.Null()])) },
  { additionalProperties: false },
);
const ApproveBody = Type.Object({}, { additionalProperties: false });
const RejectBody = Type.Object({ reason: Type.Optional(Type.Union([Type.String({ maxLength: MAX_REJECT_REASON }), Type.Null()])) }, { additionalProperties: false });
const SendResponse = Type.Object({ message_id: Type.String(), thread_id: Type.String() });

type DraftParams = Static<typeof DraftParams>;
type InboxDraftParams = Static<typeof InboxDraftParams>;

/** The draft after scope (404), permission (403) and existence (404), in that order. */
function draftScope(db: Db, p: Principal, params: DraftParams, permission: string): DraftRow {
  if (params.inbox_id !== undefined) {
    const inbox = inboxFor(db, p, params.inbox_id, permission);
    const row = draftRow(db, inbox.inbox_id, params.draft_id);
    if (!row) throw notFound('draft');
    return row;
  }
  const row = draftById(db, params.draft_id);
  if (!row || !inScope(p, row.inbox_id)) throw notFound('draft');
  requirePermission(p, permission);
  return row;
}

function readRoutes(app: FastifyInstance, base: string): void {
  const { db } = app.svc;
  const form = base.startsWith('/inboxes') ? 'inbox' : 'instance';

  app.get<{ Params: Static<typeof ListParams>; Querystring: Static<typeof DraftListQuery> }>(
    base,
    { config: { auth: 'agent' }, schema: { params: ListParams, querystring: DraftListQuery, response: { 200: ListOf('drafts', DraftItem) } } },
    async (request) => {
      const p = request.principal!;
      const q = request.query;
      let inboxIds: string[] | 'all';
      if (request.params.inbox_id !== undefined) {
        inboxIds = [inboxFor(db, p, request.params.inbox_id, 'draft_read').inbox_id];
      } else {
        requirePermission(p, 'draft_read');
        inboxIds = p.inboxScope === 'all' ? 'all' : [...p.inboxScope].sort();
      }
      const filters = { ...timeBounds(q), labels: queryList(q.labels) };
      const { page, respond } = keysetPage(
        db,
        { route: `drafts.list.${form}`, filters: { inbox: request.params.inbox_id ?? '*', ...filters, ascending: q.ascending === true }, principal: p },
        q,
      );
      const { items, next } = listDrafts(db, inboxIds, filters, page);
      return respond('drafts', items, next);
    },
  );

  app.get<{ Params: DraftParams }>(`${base}/:draft_id`, { config: { auth: 'agent' }, schema: { params: DraftParams, response: { 200: Draft } } }, async (request) => {
    const row = draftScope(db, request.principal!, request.params, 'draft_read');
    return draftShape(row, draftAttachments(db, row.draft_id));
  });

  app.get<{ Params: Static<typeof AttachmentParams> }>(
    `${base}/:draft_id/attachments/:attachment_id`,
    { config: { auth: 'agent' }, schema: { params: AttachmentParams, response: { 200: AttachmentDownload } } },
    async (request) => {
      const p = request.principal!;
      const row = draftScope(db, p, request.params, 'draft_read');
      const attachment = draftAttachment(db, row.draft_id, request.params.attachment_id);
      if (!attachment) throw notFound('attachment');
      const link = issueDownloadUrl(p, app.svc.origin(), { kind: 'draft_attachment', inboxId: row.inbox_id, draftId: row.draft_id, attachmentId: attachment.attachment_id });
      return { ...attachment, ...link };
    },
  );
}

export const draftRoutes: FastifyPluginAsync = async (app) => {
  const { db, bus } = app.svc;
  const base = '/inboxes/:inbox_id/drafts';

  const published = (write: { seqs: number[]; wake?: boolean }) => {
    for (const seq of write.seqs) bus.publish({ kind: 'event', seq });
    if (write.wake) bus.publish({ kind: 'wake', loop: 'scheduled-drafts' });
  };

  readRoutes(app, base);
  readRoutes(app, '/drafts');

  app.post<{ Params: Static<typeof InboxParams>; Body: CreateDraftBody }>(
    base,
    { config: { auth: 'agent' }, schema: { params: InboxParams, body: CreateDraftBody, response: { 200: Draft } } },
    async (request) => {
      const p = request.principal!;
      const inbox = inboxFor(db, p, request.params.inbox_id, 'draft_create');
      const write: DraftWrite = createDraft(db, p, inbox, request.body);
      published(write);
      return write.draft;
    },
  );

  app.patch<{ Params: InboxDraftParams; Body: UpdateDraftBody }>(
    `${base}/:draft_id`,
    { config: { auth: 'agent' }, schema: { params: InboxDraftParams, body: UpdateDraftBody, response: { 200: Draft } } },
    async (request) => {
      const p = request.principal!;
      const inbox = inboxFor(db, p, request.params.inbox_id, 'draft_update');
      const write = updateDraft(db, p, inbox, request.params.draft_id, request.body);
      published(write);
      return write.draft;
    },
  );

  app.delete<{ Params: InboxDraftParams }>(`${base}/:draft_id`, { config: { auth: 'agent' }, schema: { params: InboxDraftParams } }, async (request, reply) => {
    const inbox = inboxFor(db, request.principal!, request.params.inbox_id, 'draft_delete');
    if (!deleteDraft(db, inbox.inbox_id, request.params.draft_id)) throw notFound('draft');
    return reply.send();
  });

  app.post<{ Params: InboxDraftParams; Body: Static<typeof SendDraftBody> }>(
    `${base}/:draft_id/send`,
    { config: { auth: 'agent' }, schema: { params: InboxDraftParams, body: SendDraftBody, response: { 200: SendResponse } } },
    async (request) => {
      const p = request.principal!;
      const inbox = inboxFor(db, p, request.params.inbox_id, 'draft_send');
      const draft = draftRow(db, inbox.inbox_id, request.params.draft_id);
      if (!draft) throw notFound('draft');
      const key = idempotencyKey(request.headers['idempotency-key']);
      const edit = labelEdit(p, request.body.add_labels, request.body.remove_labels);
      const idempotency = key ? { key, hash: requestHash('draft_send', draft.draft_id, request.body) } : null;
      return performSend(sendContext(app, p), { inbox, idempotency, source: { type: 'draft', draft, approve: false, extraLabels: edit.add, removeLabels: edit.remove } });
    },
  );

  // Owner only. A draft whose send_at is ahead stays scheduled (the draft is returned); any other
  // is sent now through the one send path, which emits draft.approved and draft.sent.
  app.post<{ Params: InboxDraftParams; Body: Static<typeof ApproveBody> }>(
    `${base}/:draft_id/approve`,
    { config: { auth: 'owner' }, schema: { params: InboxDraftParams, body: ApproveBody } },
    async (request) => {
      const p = request.principal!;
      const inbox = inboxFor(db, p, request.params.inbox_id);
      const draft = draftRow(db, inbox.inbox_id, request.params.draft_id);
      if (!draft) throw notFound('draft');
      const key = idempotencyKey(request.headers['idempotency-key']);
      const idempotency = key ? { key, hash: requestHash('draft_approve', draft.draft_id, {}) } : null;
      const replay = () => {
        const earlier = idempotency ? replayIdempotent(db, inbox.inbox_id, idempotency.key, idempotency.hash) : null;
        if (!earlier) return null;
        // An approval that scheduled the draft answers with the draft as it stands now.
        return earlier.messageId ? { message_id: earlier.messageId, thread_id: earlier.threadId! } : readDraft(db, inbox.inbox_id, draft.draft_id);
      };
      const earlier = replay();
      if (earlier) return earlier;

      const scheduled = db.transaction(() => {
        const again = replay();
        if (again) return { answer: again, seqs: [] as number[] };
        const approved = approveScheduled(db, inbox.inbox_id, draft.draft_id);
        if (!approved) return null;
        if (idempotency) recordIdempotent(db, inbox.inbox_id, idempotency.key, idempotency.hash, { kind: 'draft_approve', messageId: null, threadId: null, draftId: draft.draft_id });
        return { answer: draftShape(approved.row, draftAttachments(db, draft.draft_id)), seqs: approved.seqs };
      }).immediate();
      if (scheduled) {
        published({ seqs: scheduled.seqs, wake: true });
        return scheduled.answer;
      }
      return performSend(sendContext(app, p), { inbox, idempotency, source: { type: 'draft', draft, approve: true } });
    },
  );

  app.post<{ Params: InboxDraftParams; Body: Static<typeof RejectBody> }>(
    `${base}/:draft_id/reject`,
    { config: { auth: 'owner' }, schema: { params: InboxDraftParams, body: RejectBody, response: { 200: Draft } } },
    async (request) => {
      const inbox = inboxFor(db, request.principal!, request.params.inbox_id);
      const { row, seqs } = rejectDraft(db, inbox.inbox_id, request.params.draft_id, request.body.reason ?? null);
      published({ seqs });
      return draftShape(row, draftAttachments(db, row.draft_id));
    },
  );
};
