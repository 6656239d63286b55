/**
 * Allow and block lists (spec §4.8): four routes per list, global under `/lists/...` and per
 * inbox under `/inboxes/{inbox_id}/lists/...`. Each direction and type gets its own literal
 * route, so an unknown direction or type is an unknown path (404 before authentication).
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { PageQuery } from '../core/pagination.js';
import { entryNotFound, listEntriesPage, listKeyFor, readListEntry } from '../mail/list-requests.js';
import { DIRECTIONS, LIST_TYPES, REASON_MAX, createListEntry, deleteListEntry, normalizeListEntry, type ListDirection, type ListKey, type ListType } from '../mail/lists.js';
import type { Db } from '../db/open.js';
import type { Permission } from '../auth/permissions.js';

/** Longest raw entry accepted before normalization; addresses are at most 254 octets. */
const ENTRY_INPUT_MAX = 320;

const CreateBody = Type.Object(
  {
    entry: Type.String({ minLength: 1, maxLength: ENTRY_INPUT_MAX }),
    reason: Type.Optional(Type.Union([Type.String({ maxLength: REASON_MAX }), Type.Null()])),
  },
  { additionalProperties: false },
);
const ListQuery = Type.Object(PageQuery);
const InboxId = Type.String({ minLength: 1, maxLength: 320 });
const ListParams = Type.Object({ inbox_id: Type.Optional(InboxId) });
const EntryParams = Type.Object({ inbox_id: Type.Optional(InboxId), entry: Type.String({ minLength: 1, maxLength: ENTRY_INPUT_MAX }) });

type ListRequest = FastifyRequest<{ Params: Static<typeof ListParams> }>;

/** The list the path names, after the access checks (see listKeyFor). */
function listFor(db: Db, request: ListRequest, direction: ListDirection, type: ListType, permission: Permission): ListKey {
  return listKeyFor(db, request.principal!, request.params.inbox_id, direction, type, permission);
}

export const listRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;

  for (const base of ['/lists', '/inboxes/:inbox_id/lists']) {
    for (const direction of DIRECTIONS) {
      for (const type of LIST_TYPES) {
        const path = `${base}/${direction}/${type}`;

        app.get<{ Params: Static<typeof ListParams>; Querystring: Static<typeof ListQuery> }>(
          path,
          { config: { auth: 'agent' }, schema: { params: ListParams, querystring: ListQuery } },
          async (request) => listEntriesPage(db, request.principal!, request.params.inbox_id, direction, type, request.query),
        );

        app.post<{ Params: Static<typeof ListParams>; Body: Static<typeof CreateBody> }>(
          path,
          { config: { auth: 'agent' }, schema: { params: ListParams, body: CreateBody } },
          async (request) => {
            const key = listFor(db, request, direction, type, 'list_entry_create');
            const reason = request.body.reason?.trim() || null;
            return createListEntry(db, key, normalizeListEntry(request.body.entry), reason);
          },
        );

        app.get<{ Params: Static<typeof EntryParams> }>(
          `${path}/:entry`,
          { config: { auth: 'agent' }, schema: { params: EntryParams } },
          async (request) => readListEntry(db, request.principal!, request.params.inbox_id, direction, type, request.params.entry),
        );

        app.delete<{ Params: Static<typeof EntryParams> }>(
          `${path}/:entry`,
          { config: { auth: 'agent' }, schema: { params: EntryParams } },
          async (request, reply: FastifyReply) => {
            const key = listFor(db, request, direction, type, 'list_entry_delete');
            const entry = normalizeListEntry(request.params.entry);
            if (!deleteListEntry(db, key, entry)) throw entryNotFound(entry, key);
            return reply.send();
          },
        );
      }
    }
  }
};

