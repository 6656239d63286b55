/**
 * Drafts (spec §2.5, §4.6; states in docs/drafts.md). List and read exist inbox-scoped
 * (`/inboxes/{inbox_id}/drafts...`) and instance-wide (`/drafts...`); writes are inbox-scoped.
 * Checks everywhere: inbox in scope (404) → permission (403) → draft exists (404) → the rest.
 * Every state change commits with its event; events are published after the commit, and
 * anything that may give the scheduled-drafts loop work wakes it.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { inboxFor } from '../auth/access.js';
import { notFound } from '../core/errors.js';
import {
  createDraftFor,
  deleteDraftFor,
  draftAttachmentDownload,
  draftListPage,
  DraftListQuery,
  publishDraftWrite,
  readDraftFor,
  SendDraftBody,
  sendDraftFor,
  updateDraftFor,
} from '../mail/draft-requests.js';
import { approveScheduled, checkDraftVersion, rejectDraft } from '../mail/drafts/policy.js';
import { draftRow, draftAttachments, readDraft } from '../mail/drafts/repository.js';
import { CreateDraftBody, Draft, DraftItem, draftShape, UpdateDraftBody } from '../mail/drafts/schemas.js';
import { MAX_REJECT_REASON } from '../mail/limits.js';
import { idempotencyKey, recordIdempotent, replayIdempotent, requestHash } from '../mail/idempotency.js';
import { performSend } from '../mail/send-flow.js';
import { AttachmentDownload, ListOf } from '../mail/serialize.js';
import { sendContext } from './send.js';

const InboxParams = Type.Object({ inbox_id: Type.String({ maxLength: 320 }) });
const ListParams = Type.Object({ inbox_id: Type.Optional(Type.String({ maxLength: 320 })) });
const DraftParams = Type.Object({ inbox_id: Type.Optional(Type.String({ maxLength: 320 })), draft_id: Type.String({ maxLength: 64 }) });
const InboxDraftParams = Type.Object({ inbox_id: Type.String({ maxLength: 320 }), draft_id: Type.String({ maxLength: 64 }) });
const AttachmentParams = Type.Object({ ...DraftParams.properties, attachment_id: Type.String({ maxLength: 128 }) });

/**
 * svc extension: `expected_updated_at` is the draft's `updated_at` as the owner read it; when
 * given, an approve of any other version is `409 conflict` (the owner approves what they saw).
 */
const ApproveBody = Type.Object({ expected_updated_at: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) }, { additionalProperties: false });
const RejectBody = Type.Object({ reason: Type.Optional(Type.Union([Type.String({ maxLength: MAX_REJECT_REASON }), Type.Null()])) }, { additionalProperties: false });
const SendResponse = Type.Object({ message_id: Type.String(), thread_id: Type.String() });

type DraftParams = Static<typeof DraftParams>;
type InboxDraftParams = Static<typeof InboxDraftParams>;

function readRoutes(app: FastifyInstance, base: string): void {
  const { db } = app.svc;

  app.get<{ Params: Static<typeof ListParams>; Querystring: DraftListQuery }>(
    base,
    { config: { auth: 'agent' }, schema: { params: ListParams, querystring: DraftListQuery, response: { 200: ListOf('drafts', DraftItem) } } },
    async (request) => draftListPage(db, request.principal!, request.params.inbox_id, request.query),
  );

  app.get<{ Params: DraftParams }>(`${base}/:draft_id`, { config: { auth: 'agent' }, schema: { params: DraftParams, response: { 200: Draft } } }, async (request) =>
    readDraftFor(db, request.principal!, request.params),
  );

  app.get<{ Params: Static<typeof AttachmentParams> }>(
    `${base}/:draft_id/attachments/:attachment_id`,
    { config: { auth: 'agent' }, schema: { params: AttachmentParams, response: { 200: AttachmentDownload } } },
    async (request) => draftAttachmentDownload(db, request.principal!, request.params, request.params.attachment_id, app.svc.origin()),
  );
}

export const draftRoutes: FastifyPluginAsync = async (app) => {
  const { db, bus } = app.svc;
  const base = '/inboxes/:inbox_id/drafts';

  const published = (write: { seqs: number[]; wake?: boolean }) => publishDraftWrite(bus, write);

  readRoutes(app, base);
  readRoutes(app, '/drafts');

  app.post<{ Params: Static<typeof InboxParams>; Body: CreateDraftBody }>(
    base,
    { config: { auth: 'agent' }, schema: { params: InboxParams, body: CreateDraftBody, response: { 200: Draft } } },
    async (request) => createDraftFor(db, bus, request.principal!, request.params.inbox_id, request.body),
  );

  app.patch<{ Params: InboxDraftParams; Body: UpdateDraftBody }>(
    `${base}/:draft_id`,
    { config: { auth: 'agent' }, schema: { params: InboxDraftParams, body: UpdateDraftBody, response: { 200: Draft } } },
    async (request) => updateDraftFor(db, bus, request.principal!, request.params.inbox_id, request.params.draft_id, request.body),
  );

  app.delete<{ Params: InboxDraftParams }>(`${base}/:draft_id`, { config: { auth: 'agent' }, schema: { params: InboxDraftParams } }, async (request, reply) => {
    deleteDraftFor(db, request.principal!, request.params.inbox_id, request.params.draft_id);
    return reply.send();
  });

  app.post<{ Params: InboxDraftParams; Body: SendDraftBody }>(
    `${base}/:draft_id/send`,
    { config: { auth: 'agent' }, schema: { params: InboxDraftParams, body: SendDraftBody, response: { 200: SendResponse } } },
    async (request) => sendDraftFor(app.svc, request.principal!, request.params.inbox_id, request.params.draft_id, request.body, request.headers['idempotency-key']),
  );

  // Owner only. A draft whose send_at is ahead stays scheduled (the draft is returned); any other
  // is sent now through the one send path, which emits draft.approved and draft.sent. What is
  // sent is the version read here: performSend refuses to commit if the draft changed meanwhile.
  app.post<{ Params: InboxDraftParams; Body: Static<typeof ApproveBody> }>(
    `${base}/:draft_id/approve`,
    { config: { auth: 'owner' }, schema: { params: InboxDraftParams, body: ApproveBody } },
    async (request) => {
      const p = request.principal!;
      const inbox = inboxFor(db, p, request.params.inbox_id);
      const draft = draftRow(db, inbox.inbox_id, request.params.draft_id);
      if (!draft) throw notFound('draft');
      const expected = request.body?.expected_updated_at;
      const key = idempotencyKey(request.headers['idempotency-key']);
      const idempotency = key ? { key, hash: requestHash('draft_approve', draft.draft_id, expected === undefined ? {} : { expected_updated_at: expected }) } : null;
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
