/**
 * Allow and block lists (spec §4.8): four routes per list, global under `/lists/...` and per
 * inbox under `/inboxes/{inbox_id}/lists/...`. Each direction and type gets its own literal
 * route, so an unknown direction or type is an unknown path (404 before authentication).
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { inboxFor, requirePermission, requireUnrestricted } from '../http/access.js';
import { ApiError } from '../http/errors.js';
import { DEFAULT_LIMIT, PageQuery, pageFromRows, readCursor } from '../http/pagination.js';
import {
  DIRECTIONS,
  LIST_TYPES,
  REASON_MAX,
  createListEntry,
  deleteListEntry,
  getListEntry,
  listListEntries,
  normalizeListEntry,
  type ListDirection,
  type ListKey,
  type ListType,
} from '../mail/lists.js';
import type { Db } from '../db/open.js';

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

/**
 * The list the path names, after the access checks in house order: a global list needs a key
 * without an inbox restriction; an inbox list needs the inbox in scope (404) before the
 * permission (403).
 */
function listFor(db: Db, request: ListRequest, direction: ListDirection, type: ListType, permission: string): ListKey {
  const p = request.principal!;
  const inboxId = request.params.inbox_id;
  if (inboxId === undefined) {
    requireUnrestricted(p);
    requirePermission(p, permission);
    return { inboxId: null, direction, type };
  }
  return { inboxId: inboxFor(db, p, inboxId, permission).inbox_id, direction, type };
}

const entryNotFound = (entry: string, key: ListKey) =>
  new ApiError('not_found', `${entry} is not on this ${key.direction} ${key.type} list.`, { fix: 'List the entries with GET on the list itself.' });

export const listRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;

  for (const base of ['/lists', '/inboxes/:inbox_id/lists']) {
    for (const direction of DIRECTIONS) {
      for (const type of LIST_TYPES) {
        const path = `${base}/${direction}/${type}`;

        app.get<{ Params: Static<typeof ListParams>; Querystring: Static<typeof ListQuery> }>(
          path,
          { config: { auth: 'agent' }, schema: { params: ListParams, querystring: ListQuery } },
          async (request) => {
            // The lists have one order (spec §4.1): asking for the other is an error, not ignored.
            if (request.query.ascending === false) {
              throw new ApiError('validation_error', 'Allow and block lists are sorted by entry, ascending only.', { fix: 'Omit `ascending` or pass `ascending=true`.' });
            }
            const key = listFor(db, request, direction, type, 'list_entry_read');
            const limit = request.query.limit ?? DEFAULT_LIMIT;
            const binding = { route: 'lists', filters: { inbox_id: key.inboxId, direction, type }, principal: request.principal! };
            const after = request.query.page_token ? String(readCursor(db, request.query.page_token, binding, 1)[0]) : null;
            const rows = listListEntries(db, key, after, limit + 1);
            return pageFromRows(db, binding, 'entries', rows, limit, (r) => [r.entry]);
          },
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
          async (request) => {
            const key = listFor(db, request, direction, type, 'list_entry_read');
            const entry = normalizeListEntry(request.params.entry);
            const found = getListEntry(db, key, entry);
            if (!found) throw entryNotFound(entry, key);
            return found;
          },
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

