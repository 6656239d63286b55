/**
 * A caller's requests on inboxes (spec §4.3), checked and answered in one place so REST
 * (src/routes/inboxes.ts) and MCP (src/mcp/tools.ts) behave the same. Checks: inbox in scope
 * (404) → permission (403); creation checks the new address's scope before `inbox_create`.
 * Every write is one transaction opened here. A read-modify-write (update) holds the write lock from the scope check to the
 * write, so two metadata merges cannot lose each other's keys. Every successful write wakes the
 * provisioning loop: inbox changes alter what the edge must accept.
 */
import { Type, type Static } from 'typebox';
import type { AppContext } from '../context.js';
import { PageQuery } from '../core/schemas.js';
import type { Db } from '../db/open.js';
import { inboxFor, requirePermission } from '../auth/access.js';
import { inScope, type Principal } from '../auth/principal.js';
import { routeToLocalEdge } from '../mail/inbox-routing.js';
import { DEFAULT_POD_ID, podForWrite } from '../pods/store.js';
import {
  addressOutOfScope,
  createInbox,
  deleteInbox,
  inboxResponse,
  listInboxes,
  planInboxCreate,
  updateInbox,
  type CreateInboxBody,
  type InboxCreate,
  type InboxPageQuery,
  type InboxResponse,
  type UpdateInboxBody,
} from '../mail/inboxes.js';

/** Longest inbox search text: an address or a display-name fragment. */
export const INBOX_SEARCH_MAX = 320;
export const InboxSearchQuery = Type.Object({ ...PageQuery, q: Type.String({ minLength: 1, maxLength: INBOX_SEARCH_MAX }) });
export type InboxSearchQuery = Static<typeof InboxSearchQuery>;

/** What an inbox write needs from the running service. */
export type InboxServices = Pick<AppContext, 'db' | 'bus'>;

/** Push routing now rather than at the provisioning loop's next tick. */
const wakeProvisioning = (svc: InboxServices) => svc.bus.publish({ kind: 'wake', loop: 'provisioning' });

/** One page of the caller's inboxes; the body of `GET /inboxes`. */
export function inboxListPage(db: Db, p: Principal, q: InboxPageQuery) {
  requirePermission(p, 'inbox_read');
  return listInboxes(db, p, q);
}

/** One page of the caller's inboxes whose address or display name contains `q`; `GET /inboxes/search`. */
export function inboxSearchPage(db: Db, p: Principal, q: InboxSearchQuery) {
  requirePermission(p, 'inbox_read');
  const { q: needle, ...page } = q;
  return listInboxes(db, p, page, needle);
}

export function readInbox(db: Db, p: Principal, inboxId: string): InboxResponse {
  return inboxResponse(inboxFor(db, p, inboxId, 'inbox_read'));
}

/**
 * Creates an inbox (or returns the one with the same `client_id`) and waits until the local
 * edge routes it: mail sent right after this answer must find the inbox routed (issue 17 §1).
 * The address must be in the caller's scope (404) before `inbox_create` is checked (403); the
 * address is known only once the body is read, so the scope check follows planInboxCreate.
 */
export async function createInboxFor(svc: InboxServices, p: Principal, body: CreateInboxBody): Promise<InboxResponse> {
  const { db } = svc;
  const plan = planInboxCreate(db, body);
  if (!mayCreateAt(db, p, plan)) throw addressOutOfScope(plan.address);
  requirePermission(p, 'inbox_create');
  // The pod is re-read inside the write: an inbox is never created in a pod deleted meanwhile.
  const podId = p.pod?.podId ?? DEFAULT_POD_ID;
  const created = inboxResponse(plan.earlier ?? db.transaction(() => createInbox(db, plan, body, podForWrite(db, podId).pod_id))());
  await routeToLocalEdge(db);
  wakeProvisioning(svc);
  return created;
}

/**
 * Whether the caller may create at the planned address: an existing inbox (same `client_id`) must
 * be in its scope; a new address must be in the credential's own restriction, on a domain of the
 * home or of the inbox's pod. On a pod, the new inbox joins the pod (docs/pods.md).
 */
function mayCreateAt(db: Db, p: Principal, plan: InboxCreate): boolean {
  if (plan.earlier !== null) return inScope(p, plan.address);
  // A domain a pod owns takes that pod's inboxes only; the home's domains (no pod) take any pod's.
  const domainPod = db.prepare('SELECT pod_id FROM domains WHERE domain = ?').pluck().get(plan.domain) as string | null | undefined;
  if (domainPod != null && domainPod !== (p.pod?.podId ?? DEFAULT_POD_ID)) return false;
  if (p.pod === undefined) return inScope(p, plan.address);
  return p.pod.keyScope === 'all' || p.pod.keyScope.has(plan.address);
}

export function updateInboxFor(svc: InboxServices, p: Principal, inboxId: string, body: UpdateInboxBody): InboxResponse {
  const { db } = svc;
  const updated = db.transaction(() => updateInbox(db, inboxFor(db, p, inboxId, 'inbox_update'), body))();
  wakeProvisioning(svc);
  return inboxResponse(updated);
}

/** Deletes an inbox and everything in it, permanently (deleteInbox). */
export function deleteInboxFor(svc: InboxServices, p: Principal, inboxId: string): void {
  const { db } = svc;
  db.transaction(() => deleteInbox(db, inboxFor(db, p, inboxId, 'inbox_delete').inbox_id))();
  wakeProvisioning(svc);
}
