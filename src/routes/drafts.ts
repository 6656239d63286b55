/**
 * Drafts (spec §2.5, §4.6; states in docs/drafts.md). List and read exist inbox-scoped
 * (`/inboxes/{inbox_id}/drafts...`) and instance-wide (`/drafts...`); writes are inbox-scoped.
 * Checks everywhere: inbox in scope (404) → permission (403) → draft exists (404) → the rest.
 * Every state change commits with its event; events are published after the commit, and
 * anything that may give the scheduled-drafts loop work wakes it.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import {
  approveDraftFor,
  ApproveBody,
  createDraftFor,
  deleteDraftFor,
  draftAttachmentDownload,
  draftListPage,
  DraftListQuery,
  RejectBody,
  rejectDraftFor,
  SendDraftBody,
  sendDraftFor,
  updateDraftFor,
} from '../requests/drafts.js';
import { DraftAttachmentParams, DraftParams, InboxDraftParams, InboxParams, ListOf, ScopeParams, SendResponse } from '../core/schemas.js';
import { CreateDraftBody, Draft, DraftItem, UpdateDraftBody } from '../mail/drafts/schemas.js';
import { AttachmentDownload } from '../mail/serialize-schemas.js';

/**
 * An approval answers the draft when it stays scheduled, else the send's ids. The serializer
 * picks the first branch the value matches: the draft comes first because it requires
 * `draft_id`, which a send answer lacks, so a draft is never cut down to the send's two fields.
 */
const ApprovalResponse = Type.Union([Draft, SendResponse]);


function readRoutes(app: FastifyInstance, base: string): void {
  const { db } = app.svc;

  app.get<{ Params: ScopeParams; Querystring: DraftListQuery }>(
    base,
    { config: { auth: 'agent' }, schema: { params: ScopeParams, querystring: DraftListQuery, response: { 200: ListOf('drafts', DraftItem) } } },
    async (request) => draftListPage(db, request.principal!, request.params.inbox_id, request.query),
  );

  app.get<{ Params: DraftParams }>(`${base}/:draft_id`, { config: { auth: 'agent' }, schema: { params: DraftParams, response: { 200: Draft } } }, async (request) =>
    app.svc.reads.run('readDraftFor', request.principal!, request.params),
  );

  app.get<{ Params: DraftAttachmentParams }>(
    `${base}/:draft_id/attachments/:attachment_id`,
    { config: { auth: 'agent' }, schema: { params: DraftAttachmentParams, response: { 200: AttachmentDownload } } },
    async (request) => draftAttachmentDownload(db, request.principal!, request.params, request.params.attachment_id, app.svc.origin()),
  );
}

export const draftRoutes: FastifyPluginAsync = async (app) => {
  const { db, bus } = app.svc;
  const base = '/inboxes/:inbox_id/drafts';

  readRoutes(app, base);
  readRoutes(app, '/drafts');

  app.post<{ Params: InboxParams; Body: CreateDraftBody }>(
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

  // Owner only: approval and rejection of drafts (approveDraftFor, rejectDraftFor).
  app.post<{ Params: InboxDraftParams; Body: ApproveBody }>(
    `${base}/:draft_id/approve`,
    { config: { auth: 'owner' }, schema: { params: InboxDraftParams, body: ApproveBody, response: { 200: ApprovalResponse } } },
    async (request) => approveDraftFor(app.svc, request.principal!, request.params.inbox_id, request.params.draft_id, request.body, request.headers['idempotency-key']),
  );

  app.post<{ Params: InboxDraftParams; Body: RejectBody }>(
    `${base}/:draft_id/reject`,
    { config: { auth: 'owner' }, schema: { params: InboxDraftParams, body: RejectBody, response: { 200: Draft } } },
    async (request) => rejectDraftFor(db, bus, request.principal!, request.params.inbox_id, request.params.draft_id, request.body),
  );
};
