/**
 * The owner's requests on domains (spec §4.12, docs/domains.md), one function per route of
 * src/routes/domains.ts. The routes' access is `owner`, so there is no scope or permission to
 * check; each function owns the rest: what needs no lookup is checked first (a new domain's name
 * and flags), then every write is ONE transaction opened here around the domain write
 * (src/domains/store.ts opens none), and only after it commits is the provisioning loop woken
 * and the view built (a view plans the domain's records, which may create its DKIM key, so it
 * never runs under the write lock). Errors, statuses and answers are exactly the store's.
 *
 * On `/pods/{pod_id}/domains...` (docs/pods.md) the caller is narrowed to a pod: each function
 * taking a domain id first finds it in that pod (another pod's domain is 404, like none), and a
 * new domain belongs to the pod.
 */
import type { Static } from 'typebox';
import type { AppContext } from '../context.js';
import type { Principal } from '../auth/principal.js';
import {
  applyDomain,
  checkDomainCreate,
  deleteDomain,
  domainRow,
  domainView,
  insertDomain,
  listDomains,
  requestVerification,
  teardownDomain,
  updateDomain,
  type CreateDomainBody,
  type DomainRow,
  type UpdateDomainBody,
} from '../domains/store.js';
import { domainPlan, zoneFile } from '../domains/plan.js';
import type { DomainPlanResponse, DomainSetupLink } from '../domains/schemas.js';
import { readDnsProvider, type StoredDnsProvider } from '../domains/providers/config.js';
import { notFound } from '../core/errors.js';
import { podForWrite } from '../pods/store.js';

/** What the domain requests need from the running service. */
export type DomainServices = Pick<AppContext, 'db' | 'bus' | 'origin'>;

export type DomainView = Awaited<ReturnType<typeof domainView>>;

/** Every trigger of the state machine wakes the loop that does its work. */
const wakeProvisioning = (svc: DomainServices) => svc.bus.publish({ kind: 'wake', loop: 'provisioning' });

export function domainListPage(svc: DomainServices, p: Principal, query: { limit?: number; page_token?: string; ascending?: boolean }): Record<string, unknown> {
  return listDomains(svc.db, p, query);
}

/** Registers a domain as `pending`; the view creates its DKIM key, so the plan is ready at once. */
export async function createDomainFor(svc: DomainServices, p: Principal, body: CreateDomainBody): Promise<DomainView> {
  const { db } = svc;
  const create = checkDomainCreate(body);
  const podId = p.pod?.podId ?? null;
  // The pod is re-read inside the write: never a domain in a pod deleted meanwhile.
  const id = db.transaction(() => insertDomain(db, create, podId === null ? null : podForWrite(db, podId).pod_id))();
  return domainView(db, domainRow(db, id));
}

/** The domain, if the caller's pod (when narrowed to one) owns it: another pod's is 404 like one that does not exist. Pods never change. */
function reachableDomain(svc: DomainServices, p: Principal, domainId: string): DomainRow {
  const row = domainRow(svc.db, domainId);
  if (p.pod !== undefined && row.pod_id !== p.pod.podId) throw notFound('domain');
  return row;
}

export async function readDomain(svc: DomainServices, p: Principal, domainId: string): Promise<DomainView> {
  return domainView(svc.db, reachableDomain(svc, p, domainId));
}

export async function updateDomainFor(svc: DomainServices, p: Principal, domainId: string, patch: UpdateDomainBody): Promise<DomainView> {
  const { db } = svc;
  const id = reachableDomain(svc, p, domainId).domain_id;
  const row = db.transaction(() => updateDomain(db, id, patch))();
  return domainView(db, row);
}

export function deleteDomainFor(svc: DomainServices, p: Principal, domainId: string): void {
  const id = reachableDomain(svc, p, domainId).domain_id;
  svc.db.transaction(() => deleteDomain(svc.db, id))();
}

/** The DNS records to create, in the order to create them. */
export async function readDomainPlan(svc: DomainServices, p: Principal, domainId: string): Promise<Static<typeof DomainPlanResponse>> {
  const row = reachableDomain(svc, p, domainId);
  const plan = await domainPlan(svc.db, row.domain, { domainId: row.domain_id, feedbackEnabled: row.feedback_enabled === 1 });
  return {
    domain: plan.domain,
    steps: plan.steps,
    records: plan.records.map(({ type, name, value, priority }) => ({ type, name, value, ...(priority !== undefined ? { priority } : {}) })),
    warnings: plan.warnings,
  };
}

/** The plan as a BIND zone file, with the name it is downloaded under. */
export async function readZoneFile(svc: DomainServices, p: Principal, domainId: string): Promise<{ domain: string; text: string }> {
  const row = reachableDomain(svc, p, domainId);
  const plan = await domainPlan(svc.db, row.domain, { domainId: row.domain_id, feedbackEnabled: row.feedback_enabled === 1 });
  return { domain: row.domain, text: zoneFile(plan) };
}

/** One owner trigger (apply, verify, teardown): the move in its transaction, then the wake and the view. */
async function trigger(svc: DomainServices, move: () => DomainRow): Promise<DomainView> {
  const row = svc.db.transaction(move)();
  wakeProvisioning(svc);
  return domainView(svc.db, row);
}

export const applyDomainFor = (svc: DomainServices, p: Principal, domainId: string) => trigger(svc, () => applyDomain(svc.db, reachableDomain(svc, p, domainId).domain_id));
export const verifyDomainFor = (svc: DomainServices, p: Principal, domainId: string) => trigger(svc, () => requestVerification(svc.db, reachableDomain(svc, p, domainId).domain_id));
export const teardownDomainFor = (svc: DomainServices, p: Principal, domainId: string) => trigger(svc, () => teardownDomain(svc.db, reachableDomain(svc, p, domainId).domain_id));

/** How the setup page names the provider its Apply publishes through (the SDK's `provider_name`). */
const PROVIDER_NAMES = { rfc2136: 'RFC 2136 (TSIG)', powerdns: 'PowerDNS', cloudflare: 'Cloudflare' } as const satisfies Record<StoredDnsProvider['kind'], string>;

/**
 * The AgentMail SDK's `getSetupLink`: the domain's page in the owner's web app, on the home's own
 * origin. The page needs the owner's sign-in, so the link carries no secret. `supported` says
 * whether Apply there publishes the records in one click (a DNS provider is configured); either
 * way the page lists the records and offers the zone file.
 */
export function domainSetupLink(svc: DomainServices, p: Principal, domainId: string): DomainSetupLink {
  const row = reachableDomain(svc, p, domainId);
  const provider = readDnsProvider(svc.db);
  return {
    supported: provider !== null,
    ...(provider ? { provider_name: PROVIDER_NAMES[provider.kind] } : {}),
    url: `${svc.origin()}/domains/${encodeURIComponent(row.domain_id)}`,
  };
}
