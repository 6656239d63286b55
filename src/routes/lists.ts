/**
 * Allow and block lists (spec §4.8): four routes per list, global under `/lists/...` and per
 * inbox under `/inboxes/{inbox_id}/lists/...`. Each direction and type gets its own literal
 * route, so an unknown direction or type is an unknown path (404 before authentication).
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { Type, type Static } from 'typebox';
import { InboxId, ListOf, PageOnlyQuery, ScopeParams } from '../core/schemas.js';
import { DIRECTIONS, LIST_TYPES } from '../mail/lists.js';
import { ListEntrySchema } from '../mail/list-schemas.js';
import { addListEntry, CreateListEntryBody, ENTRY_INPUT_MAX, listEntriesPage, readListEntry, removeListEntry } from '../requests/lists.js';

const EntryParams = Type.Object({ inbox_id: Type.Optional(InboxId), entry: Type.String({ minLength: 1, maxLength: ENTRY_INPUT_MAX }) });
/** Response schemas: the serializer sends only these fields. */
const one = { 200: ListEntrySchema };
const page = { 200: ListOf('entries', ListEntrySchema) };

export const listRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;

  for (const base of ['/lists', '/inboxes/:inbox_id/lists']) {
    for (const direction of DIRECTIONS) {
      for (const type of LIST_TYPES) {
        const path = `${base}/${direction}/${type}`;

        app.get<{ Params: ScopeParams; Querystring: PageOnlyQuery }>(
          path,
          { config: { auth: 'agent' }, schema: { params: ScopeParams, querystring: PageOnlyQuery, response: page } },
          async (request) => listEntriesPage(db, request.principal!, request.params.inbox_id, direction, type, request.query),
        );

        app.post<{ Params: ScopeParams; Body: CreateListEntryBody }>(
          path,
          { config: { auth: 'agent' }, schema: { params: ScopeParams, body: CreateListEntryBody, response: one } },
          async (request) => addListEntry(db, request.principal!, request.params.inbox_id, direction, type, request.body),
        );

        app.get<{ Params: Static<typeof EntryParams> }>(
          `${path}/:entry`,
          { config: { auth: 'agent' }, schema: { params: EntryParams, response: one } },
          async (request) => readListEntry(db, request.principal!, request.params.inbox_id, direction, type, request.params.entry),
        );

        app.delete<{ Params: Static<typeof EntryParams> }>(
          `${path}/:entry`,
          { config: { auth: 'agent' }, schema: { params: EntryParams } },
          async (request, reply: FastifyReply) => {
            removeListEntry(db, request.principal!, request.params.inbox_id, direction, type, request.params.entry);
            return reply.send();
          },
        );
      }
    }
  }
};

