/**
 * The webhook store (spec §2.8, §4.9): create with a secret shown once, read with health fields,
 * patch, delete, and write-only custom headers. A webhook remembers who created it — the owner,
 * or the API key / OAuth grant of an agent — because delivery filters every event by that
 * creator's current scope and permissions (workers/loops/webhooks.ts), and agents see only the
 * webhooks their own credential created. The rules live here; every statement is in
 * src/webhooks/repository.ts. Scope, permission and the transaction belong to the caller
 * (src/requests/webhooks.ts): the write functions here run inside its transaction, and what a
 * stranger sends (URL, headers, event types) is checked before it.
 */
import { inboxExists } from '../auth/inbox-lookup.js';
import { randomBytes } from 'node:crypto';
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { uuidv7 } from '../db/ids.js';
import { podForWrite, visiblePod } from '../pods/store.js';
import { ApiError, notFound } from '../core/errors.js';
import { isOwner, type Principal } from '../auth/principal.js';
import { normalizeInboxId } from '../auth/access.js';
import { DEFAULT_LIMIT, pageFromRows, readCursor, type PageBinding } from '../core/pagination.js';
import { latestSeq } from '../events/log.js';
import { audienceOf, EVENT_TYPES } from '../events/visibility.js';
import { internalTargetProblem, parseTarget, URL_MAX } from './target.js';
import {
  deleteWebhookRow,
  disableWebhookManually,
  enableWebhook,
  insertWebhook,
  removeWebhookHeader,
  setWebhookHeader,
  touchWebhook,
  updateWebhookFilters,
  visibleWebhook,
  webhookByClientId,
  webhookHeaders,
  webhookPage,
  type WebhookCreator,
  type WebhookRow,
  type WebhookViewer,
} from './repository.js';
import { requestHash } from '../mail/idempotency.js';
import { CLIENT_ID_MAX } from '../mail/inboxes.js';

export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** Random bytes behind a secret (Standard Webhooks asks for 24 to 64). */
const SECRET_BYTES = 32;
export const WEBHOOK_INBOX_IDS_MAX = 1000;
export const WEBHOOK_POD_IDS_MAX = 1000;
/** Custom header limits: the caller-header limits of spec §8, applied per webhook. */
export const HEADER_NAME_MAX_BYTES = 100;
export const HEADER_VALUE_MAX_BYTES = 2048;
export const HEADERS_TOTAL_MAX_BYTES = 16 * 1024;
export const HEADERS_MAX_COUNT = 20;
/** Names svc sets itself, or that would change how the request is framed or routed. */
const RESERVED_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive', 'host', 'te', 'trailer', 'upgrade', 'expect', 'user-agent']);
const RESERVED_PREFIXES = ['webhook-', 'svix-', 'proxy-'];
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Visible ASCII, space and tab: no CR, LF or other control characters. */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

const Address = Type.String({ minLength: 3, maxLength: 320 });
const EventTypes = Type.Array(Type.String({ maxLength: 100 }), { maxItems: EVENT_TYPES.length * 2 });
const Headers = Type.Record(Type.String(), Type.String());
const InboxIds = Type.Array(Address, { maxItems: WEBHOOK_INBOX_IDS_MAX });
const PodIds = Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: WEBHOOK_POD_IDS_MAX });
/** The AgentMail SDK's `clientId`: a repeated create with the same body returns the same webhook. */
const ClientId = Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: CLIENT_ID_MAX }), Type.Null()]));

export const CreateInboxWebhookBody = Type.Object(
  { url: Type.String({ minLength: 1, maxLength: URL_MAX }), event_types: EventTypes, headers: Type.Optional(Headers), client_id: ClientId },
  { additionalProperties: false },
);
export type CreateInboxWebhookBody = Static<typeof CreateInboxWebhookBody>;

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: URL_MAX }),
    event_types: EventTypes,
    headers: Type.Optional(Headers),
    inbox_ids: Type.Optional(Type.Union([InboxIds, Type.Null()])),
    pod_ids: Type.Optional(Type.Union([PodIds, Type.Null()])),
    client_id: ClientId,
  },
  { additionalProperties: false },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const UpdateInboxWebhookBody = Type.Object({ event_types: Type.Optional(EventTypes), enabled: Type.Optional(Type.Boolean()) }, { additionalProperties: false });
export type UpdateInboxWebhookBody = Static<typeof UpdateInboxWebhookBody>;

export const UpdateWebhookBody = Type.Object(
  {
    event_types: Type.Optional(EventTypes),
    enabled: Type.Optional(Type.Boolean()),
    add_inbox_ids: Type.Optional(InboxIds),
    remove_inbox_ids: Type.Optional(InboxIds),
    add_pod_ids: Type.Optional(PodIds),
    remove_pod_ids: Type.Optional(PodIds),
  },
  { additionalProperties: false },
);
export type UpdateWebhookBody = Static<typeof UpdateWebhookBody>;

export const UpdateHeadersBody = Type.Object(
  { headers: Type.Optional(Headers), remove_headers: Type.Optional(Type.Array(Type.String({ maxLength: HEADER_NAME_MAX_BYTES * 4 }), { maxItems: 100 })) },
  { additionalProperties: false },
);
export type UpdateHeadersBody = Static<typeof UpdateHeadersBody>;

export const WebhookResponse = Type.Object({
  webhook_id: Type.String(),
  url: Type.String(),
  event_types: Type.Array(Type.String()),
  /** The inbox of an inbox webhook; null for instance-wide ones. */
  inbox_id: Type.Union([Type.String(), Type.Null()]),
  /** Instance-wide filter; null = every inbox the creator can see. */
  inbox_ids: Type.Union([Type.Array(Type.String()), Type.Null()]),
  /** The pods whose events it hears (docs/pods.md): its pod filter, or the pod that owns it; absent when it hears every pod. */
  pod_ids: Type.Optional(Type.Array(Type.String())),
  enabled: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
  failure_count: Type.Optional(Type.Integer()),
  dropped_count: Type.Optional(Type.Integer()),
  disabled_reason: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  last_error_code: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  last_success_at: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  client_id: Type.Union([Type.String(), Type.Null()]),
  /**
   * The signing secret on create (and on an idempotent repeat of that create by its creator);
   * an empty string on every read, because spec §2.8 returns the secret once and the AgentMail
   * SDK's type requires the field (docs/agentmail-compat.md).
   */
  secret: Type.String(),
});
export type WebhookResponse = Static<typeof WebhookResponse>;
/**
 * The response schema of every webhook read (get, list, update): `secret` is declared as the
 * empty string, so the serializer writes `""` whatever the view holds and a secret can reach the
 * wire only through a create's answer (WebhookResponse).
 */
export const WebhookReadResponse = Type.Object({ ...WebhookResponse.properties, secret: Type.Literal('') });
/** `GET .../headers`: the names of the custom headers; their values are write-only. */
export const WebhookHeaderNamesResponse = Type.Object({ header_names: Type.Array(Type.String()) });

function webhookResponse(row: WebhookRow, health: boolean): WebhookResponse {
  const base: WebhookResponse = {
    webhook_id: row.webhook_id,
    url: row.url,
    event_types: JSON.parse(row.event_types) as string[],
    inbox_id: row.inbox_scope,
    inbox_ids: row.inbox_ids === null ? null : (JSON.parse(row.inbox_ids) as string[]),
    ...podIdsView(row),
    enabled: row.enabled === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    client_id: row.client_id,
    secret: '',
  };
  if (!health) return base;
  return {
    ...base,
    failure_count: row.failure_count,
    dropped_count: row.dropped_count,
    disabled_reason: row.disabled_reason,
    last_error_code: row.last_error_code,
    last_success_at: row.last_success_at,
  };
}

/** AgentMail's `pod_ids` of a webhook: its stored filter, else its own pod, else none (every pod). */
function podIdsView(row: WebhookRow): { pod_ids?: string[] } {
  if (row.pod_ids !== null) return { pod_ids: JSON.parse(row.pod_ids) as string[] };
  return row.pod_id === null ? {} : { pod_ids: [row.pod_id] };
}

const invalid = (message: string, fix: string) => new ApiError('validation_error', message, { fix });

/** Who a new webhook belongs to. Browser sessions are the owner too. */
function creatorOf(p: Principal): WebhookCreator {
  if (isOwner(p)) return { kind: 'owner', id: null };
  return { kind: p.kind === 'oauth' ? 'oauth' : 'api_key', id: p.id };
}

/**
 * The webhooks a caller may see: all for the owner, else its own; an inbox-restricted caller's
 * inbox webhooks only while their inbox is still in its scope.
 */
function viewerOf(p: Principal): WebhookViewer {
  const pod = p.pod === undefined ? {} : { pod: p.pod.podId };
  if (isOwner(p)) return { all: true, ...pod };
  return { all: false, creator: creatorOf(p), inboxes: p.inboxScope === 'all' ? null : [...p.inboxScope], ...pod };
}

/** Known, deduplicated event types; agents may not ask for owner-only ones they could never get. */
function checkEventTypes(p: Principal, types: string[]): string[] {
  if (types.length === 0) throw invalid('`event_types` must name at least one event type.', `Use event types from: ${EVENT_TYPES.join(', ')}.`);
  const known: ReadonlySet<string> = new Set(EVENT_TYPES);
  const unknown = types.filter((t) => !known.has(t));
  if (unknown.length > 0) throw invalid(`Unknown event type \`${unknown[0]}\`.`, `Use event types from: ${EVENT_TYPES.join(', ')}.`);
  if (!isOwner(p)) {
    const ownerOnly = types.find((t) => audienceOf(t) === 'owner');
    if (ownerOnly) throw invalid(`\`${ownerOnly}\` events are delivered to the owner only.`, 'Remove owner-only event types (domain.*, inbound.*, oauth.*), or ask the owner to create this webhook.');
  }
  return [...new Set(types)];
}

/** Existing inboxes, deduplicated and normalized; an agent's out-of-scope inbox is not found. */
function checkInboxIds(db: Db, p: Principal, ids: string[]): string[] {
  const out = [...new Set(ids.map(normalizeInboxId))];
  for (const id of out) {
    if (p.inboxScope !== 'all' && !p.inboxScope.has(id)) throw notFound('inbox');
    if (!inboxExists(db, id)) throw invalid(`The inbox \`${id}\` does not exist.`, `Create \`${id}\` first, or remove it from \`inbox_ids\`.`);
  }
  return out;
}

/**
 * Pods the caller can see, deduplicated: a pod it cannot see (another tenant's, for a pod key) is
 * not found, as on the pod routes, so a filter never reveals which pods exist.
 */
function checkPodIds(db: Db, p: Principal, ids: string[]): string[] {
  const out = [...new Set(ids)];
  for (const id of out) visiblePod(db, p, id);
  return out;
}

async function checkUrl(p: Principal, raw: string): Promise<string> {
  const parsed = parseTarget(raw);
  if (!(parsed instanceof URL)) throw invalid(parsed.message, parsed.fix);
  if (!isOwner(p)) {
    const problem = await internalTargetProblem(parsed);
    if (problem) throw invalid(problem.message, problem.fix);
  }
  return parsed.toString();
}

export interface HeaderChange {
  set: [name: string, value: string][];
  remove: string[];
}

/** One header's rules (names: RFC 9110 tokens; values: no CR/LF or controls; reserved names refused). */
function checkHeader(name: string, value: string | null): void {
  if (!TOKEN.test(name) || Buffer.byteLength(name) > HEADER_NAME_MAX_BYTES) {
    throw invalid(`\`${name.slice(0, 100)}\` is not a valid header name.`, `Header names are 1 to ${HEADER_NAME_MAX_BYTES} token characters (letters, digits and !#$%&'*+.^_\`|~-).`);
  }
  const key = name.toLowerCase();
  if (RESERVED_HEADERS.has(key) || RESERVED_PREFIXES.some((prefix) => key.startsWith(prefix))) {
    throw invalid(`The header \`${name}\` is set by svc and cannot be customized.`, 'Choose another name; Content-Type, Host, Content-Length, webhook-*, svix-* and connection headers are reserved.');
  }
  if (value === null) return;
  if (!HEADER_VALUE.test(value)) throw invalid(`The value of \`${name}\` contains a line break or control character.`, 'Send a single-line value of printable ASCII characters.');
  if (Buffer.byteLength(value) > HEADER_VALUE_MAX_BYTES) throw invalid(`The value of \`${name}\` is longer than ${HEADER_VALUE_MAX_BYTES} bytes.`, 'Shorten the value.');
}

function headerChange(headers: Record<string, string> | undefined, remove: string[] | undefined): HeaderChange {
  const set = Object.entries(headers ?? {});
  for (const [name, value] of set) checkHeader(name, value);
  for (const name of remove ?? []) checkHeader(name, null);
  const keys = set.map(([n]) => n.toLowerCase());
  if (new Set(keys).size !== keys.length) throw invalid('The same header is named twice (header names are case-insensitive).', 'Send each header once.');
  const removed = (remove ?? []).map((n) => n.toLowerCase());
  const both = removed.find((n) => keys.includes(n));
  if (both) throw invalid(`The header \`${both}\` is both set and removed.`, 'Either set it in `headers` or remove it in `remove_headers`.');
  return { set, remove: removed };
}

/** Applies a header change and enforces the per-webhook totals; runs inside the caller's transaction. */
function applyHeaders(db: Db, webhookId: string, change: HeaderChange): void {
  for (const key of change.remove) removeWebhookHeader(db, webhookId, key);
  for (const [name, value] of change.set) setWebhookHeader(db, webhookId, name, value);
  const rows = webhookHeaders(db, webhookId);
  if (rows.length > HEADERS_MAX_COUNT) throw invalid(`A webhook has at most ${HEADERS_MAX_COUNT} custom headers.`, 'Remove some headers with `remove_headers`.');
  const total = rows.reduce((sum, r) => sum + Buffer.byteLength(r.name) + Buffer.byteLength(r.value), 0);
  if (total > HEADERS_TOTAL_MAX_BYTES) throw invalid(`A webhook's custom headers total at most ${HEADERS_TOTAL_MAX_BYTES} bytes.`, 'Shorten or remove headers.');
}

/** The webhook if the caller may see it; `inbox` set on the inbox routes limits it to that inbox. */
function webhookRow(db: Db, p: Principal, webhookId: string, inbox: string | null): WebhookRow {
  const row = visibleWebhook(db, viewerOf(p), webhookId, inbox);
  // An instance-wide route sees an inbox webhook only when the caller could use its inbox route.
  if (!row || (row.inbox_scope !== null && p.inboxScope !== 'all' && !p.inboxScope.has(row.inbox_scope))) throw notFound('webhook');
  return row;
}

const newWebhookSecret = () => WEBHOOK_SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');

/** A checked create: what the transaction writes, decided before it from the caller's input. */
export interface WebhookCreate {
  creator: WebhookCreator;
  inbox: string | null;
  inboxIds: string[] | null;
  podIds: string[] | null;
  url: string;
  eventTypes: string[];
  headers: HeaderChange;
  clientId: string | null;
  /** Hash of the create's meaning, set when a `client_id` makes the create idempotent. */
  bodyHash: string | null;
}

/**
 * Checks a create before any transaction (the URL check may resolve DNS, which never runs under
 * the write lock). `inbox` is the path's inbox on the inbox route (already checked for scope),
 * null on the instance-wide route, where every listed inbox must be in the caller's scope (404).
 */
export async function checkWebhookCreate(db: Db, p: Principal, body: CreateWebhookBody | CreateInboxWebhookBody, inbox: string | null): Promise<WebhookCreate> {
  const eventTypes = checkEventTypes(p, body.event_types);
  const inboxIds = inbox === null && 'inbox_ids' in body && body.inbox_ids != null ? checkInboxIds(db, p, body.inbox_ids) : null;
  const podIds = inbox === null && 'pod_ids' in body && body.pod_ids != null ? checkPodIds(db, p, body.pod_ids) : null;
  const headers = headerChange(body.headers, undefined);
  const url = await checkUrl(p, body.url);
  const clientId = body.client_id ?? null;
  const bodyHash = clientId === null ? null : requestHash('webhooks.create', inbox, { url, event_types: [...eventTypes].sort(), inbox_ids: inboxIds === null ? null : [...inboxIds].sort(),
    ...(podIds === null ? {} : { pod_ids: [...podIds].sort() }),
    headers: body.headers ?? {},
  });
  return { creator: creatorOf(p), inbox, inboxIds, podIds, url, eventTypes, headers, clientId, bodyHash };
}

/**
 * Writes a checked create; runs inside the caller's transaction. Delivery starts with events
 * after this moment. A `client_id` the same creator used before returns that webhook (with its
 * secret, which this creator was already given) when the body is the same, and `409
 * already_exists` when it is not; client ids of other creators are invisible.
 */
export function createWebhook(db: Db, p: Principal, create: WebhookCreate): WebhookResponse {
  const { creator, clientId } = create;
  const earlier = clientId === null ? undefined : webhookByClientId(db, creator, clientId);
  let row: WebhookRow;
  if (earlier) {
    if (earlier.client_request_hash !== create.bodyHash) {
      throw new ApiError('already_exists', `The client_id \`${clientId}\` was already used to create the webhook ${earlier.webhook_id} with a different body.`, {
        fix: 'Repeat the create with exactly the same body to get that webhook back, or use a new client_id for a new webhook.',
      });
    }
    row = earlier;
  } else {
    const id = uuidv7();
    insertWebhook(db, {
      webhookId: id,
      creator,
      inboxScope: create.inbox,
      inboxIds: create.inboxIds === null ? null : JSON.stringify(create.inboxIds),
      podIds: create.podIds === null ? null : JSON.stringify(create.podIds),
      url: create.url,
      eventTypes: JSON.stringify(create.eventTypes),
      secret: newWebhookSecret(),
      cursorSeq: latestSeq(db),
      now: new Date().toISOString(),
      clientId,
      clientRequestHash: create.bodyHash,
      // A pod's webhook is made only while the pod exists: re-read inside this write.
      podId: p.pod === undefined ? null : podForWrite(db, p.pod.podId).pod_id,
    });
    applyHeaders(db, id, create.headers);
    row = webhookRow(db, p, id, null);
  }
  return { ...webhookResponse(row, true), secret: row.secret };
}

export function getWebhook(db: Db, p: Principal, webhookId: string, inbox: string | null): WebhookResponse {
  return webhookResponse(webhookRow(db, p, webhookId, inbox), true);
}

/**
 * Patches event types, `enabled` and (instance-wide) the inbox filter; runs inside the caller's
 * transaction, so the read and the write see the same row. Disabling records `disabled_reason` =
 * `manual`; re-enabling clears the failure state and starts delivery with events after that
 * moment (docs/webhooks.md).
 */
export function updateWebhook(db: Db, p: Principal, webhookId: string, inbox: string | null, patch: UpdateWebhookBody): WebhookResponse {
  const row = webhookRow(db, p, webhookId, inbox);
  const eventTypes = patch.event_types === undefined ? row.event_types : JSON.stringify(checkEventTypes(p, patch.event_types));
  let inboxIds = row.inbox_ids;
  if (patch.add_inbox_ids !== undefined || patch.remove_inbox_ids !== undefined) {
    if (row.inbox_scope !== null) throw invalid('An inbox webhook has no `inbox_ids` filter.', `It receives events of ${row.inbox_scope} only; create an instance-wide webhook to filter by several inboxes.`);
    const current = new Set(row.inbox_ids === null ? [] : (JSON.parse(row.inbox_ids) as string[]));
    for (const id of checkInboxIds(db, p, patch.add_inbox_ids ?? [])) current.add(id);
    for (const id of (patch.remove_inbox_ids ?? []).map(normalizeInboxId)) current.delete(id);
    inboxIds = row.inbox_ids === null && patch.add_inbox_ids === undefined ? null : JSON.stringify([...current]);
  }
  let podIds = row.pod_ids;
  if (patch.add_pod_ids !== undefined || patch.remove_pod_ids !== undefined) {
    if (row.inbox_scope !== null) throw invalid('An inbox webhook has no `pod_ids` filter.', `It receives events of ${row.inbox_scope} only; create an instance-wide webhook to filter by pods.`);
    const current = new Set(row.pod_ids === null ? [] : (JSON.parse(row.pod_ids) as string[]));
    for (const id of checkPodIds(db, p, patch.add_pod_ids ?? [])) current.add(id);
    for (const id of patch.remove_pod_ids ?? []) current.delete(id);
    podIds = row.pod_ids === null && patch.add_pod_ids === undefined ? null : JSON.stringify([...current]);
  }
  const now = new Date().toISOString();
  updateWebhookFilters(db, row.webhook_id, eventTypes, inboxIds, podIds, now);
  if (patch.enabled === false && row.enabled === 1) disableWebhookManually(db, row.webhook_id);
  else if (patch.enabled === true && row.enabled === 0) enableWebhook(db, row.webhook_id, latestSeq(db));
  return webhookResponse(webhookRow(db, p, row.webhook_id, null), true);
}

/** Deletes a webhook the caller may see; runs inside the caller's transaction. */
export function deleteWebhook(db: Db, p: Principal, webhookId: string, inbox: string | null): void {
  const row = webhookRow(db, p, webhookId, inbox);
  deleteWebhookRow(db, row.webhook_id);
}

/** Header names only: values are write-only. */
export function webhookHeaderNames(db: Db, p: Principal, webhookId: string, inbox: string | null): { header_names: string[] } {
  const row = webhookRow(db, p, webhookId, inbox);
  return { header_names: webhookHeaders(db, row.webhook_id).map((h) => h.name) };
}

/** Checks a header edit on its own, before any transaction or lookup (a bad header is 400 whatever the webhook). */
export const checkHeaderUpdate = (body: UpdateHeadersBody): HeaderChange => headerChange(body.headers, body.remove_headers);

/** Applies a checked header edit to a webhook the caller may see; runs inside the caller's transaction. */
export function updateWebhookHeaders(db: Db, p: Principal, webhookId: string, inbox: string | null, change: HeaderChange): void {
  const row = webhookRow(db, p, webhookId, inbox);
  applyHeaders(db, row.webhook_id, change);
  touchWebhook(db, row.webhook_id, new Date().toISOString());
}

export interface WebhookPageQuery {
  limit?: number;
  page_token?: string;
  ascending?: boolean;
}

/** One page of the caller's webhooks, newest first unless `ascending`; on the inbox route, that inbox's only. */
export function listWebhooks(db: Db, p: Principal, query: WebhookPageQuery, inbox: string | null): Record<string, unknown> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const ascending = query.ascending ?? false;
  const binding: PageBinding = { route: 'webhooks.list', filters: { ascending, inbox_id: inbox }, principal: p };
  const after = query.page_token === undefined ? null : readCursor(db, query.page_token, binding, 2);
  const rows = webhookPage(db, viewerOf(p), { inbox, after, ascending, limit: limit + 1 });
  return pageFromRows(db, binding, 'webhooks', rows, limit, (r) => [r.created_at, r.webhook_id], (r) => webhookResponse(r, false));
}
