/**
 * Who is calling and which home it is, in AgentMail's shapes (docs/agentmail-compat.md): the SDK's
 * `auth.me` (`GET /v0/auth/me`, an `Identity`) and `organizations.get` (`GET /v0/organizations`,
 * an `Organization`). svc is one organization called `default`; its pods are docs/pods.md.
 *
 * `auth.me` tells a credential only about itself: its scope in AgentMail's tiers and, for an API
 * key, its id. A key scoped to one inbox learns that inbox (it is the key's whole reach); a key
 * scoped to several learns the pod, the smallest AgentMail tier holding them, and no addresses.
 * `organizations.get` counts the whole home, so it is the owner's (the gate refuses agents).
 */
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import type { Principal } from '../auth/principal.js';
import { SINGLE_ORGANIZATION_ID } from '../mail/inboxes.js';
import { DEFAULT_POD_ID } from '../pods/store.js';
import { inboxById } from '../auth/inbox-lookup.js';

/** The SDK's `ScopeType`: the tier a credential is bound to. */
const ScopeType = Type.Union([Type.Literal('organization'), Type.Literal('pod'), Type.Literal('inbox')]);

/** The SDK's `Identity`. */
export const IdentityResponse = Type.Object({
  scope_type: ScopeType,
  scope_id: Type.String(),
  organization_id: Type.String(),
  pod_id: Type.Optional(Type.String()),
  inbox_id: Type.Optional(Type.String()),
  api_key_id: Type.Optional(Type.String()),
});
export type IdentityResponse = Static<typeof IdentityResponse>;

/** The SDK's `Organization`, without its billing and limit fields: svc has neither. */
export const OrganizationResponse = Type.Object({
  organization_id: Type.String(),
  inbox_count: Type.Integer(),
  domain_count: Type.Integer(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type OrganizationResponse = Static<typeof OrganizationResponse>;

export function identityOf(db: Db, p: Principal): IdentityResponse {
  // AgentMail names the key only for API keys; OAuth tokens are like its JWT credentials.
  const key = p.kind === 'api_key' ? { api_key_id: p.id } : {};
  const organization = { organization_id: SINGLE_ORGANIZATION_ID };
  if (p.inboxScope === 'all') return { scope_type: 'organization', scope_id: SINGLE_ORGANIZATION_ID, ...organization, ...key };
  // A pod-scoped credential names its pod (docs/pods.md); its own inbox restriction, if one inbox, makes it an inbox credential.
  const podId = p.pod?.podId ?? DEFAULT_POD_ID;
  const keyScope = p.pod ? p.pod.keyScope : p.inboxScope;
  if (keyScope !== 'all' && keyScope.size === 1) {
    const [inboxId] = keyScope;
    return { scope_type: 'inbox', scope_id: inboxId, ...organization, pod_id: p.pod ? podId : (inboxById(db, inboxId)?.pod_id ?? DEFAULT_POD_ID), inbox_id: inboxId, ...key };
  }
  if (p.pod) return { scope_type: 'pod', scope_id: podId, ...organization, pod_id: podId, ...key };
  // A home key restricted to several inboxes: the one pod holding them all, else the organization.
  const pods = podsOfInboxes(db, [...keyScope]);
  if (pods.length > 1) return { scope_type: 'organization', scope_id: SINGLE_ORGANIZATION_ID, ...organization, ...key };
  const only = pods[0] ?? DEFAULT_POD_ID;
  return { scope_type: 'pod', scope_id: only, ...organization, pod_id: only, ...key };
}

/** The distinct pods of these inboxes (inboxes that no longer exist are left out). */
function podsOfInboxes(db: Db, inboxIds: string[]): string[] {
  return db.prepare('SELECT DISTINCT pod_id FROM inboxes WHERE inbox_id IN (SELECT value FROM json_each(?))').pluck().all(JSON.stringify(inboxIds)) as string[];
}

const HOME_CREATED_KEY = 'home_created_at';

/**
 * When the home was first asked: made on first use, like the home's other settings. A home
 * older than this answer takes its oldest record (the owner, an inbox, a key or a domain), so the
 * time reads as the home's age rather than the upgrade's. One INSERT OR IGNORE: two first callers
 * agree on one value.
 */
function homeCreatedAt(db: Db): string {
  const read = () => db.prepare('SELECT value FROM settings WHERE key = ?').get(HOME_CREATED_KEY) as { value: string } | undefined;
  const stored = read();
  if (stored) return stored.value;
  const oldest = db
    .prepare(
      `SELECT MIN(t) AS t FROM (
         SELECT MIN(created_at) AS t FROM owner UNION ALL SELECT MIN(created_at) FROM inboxes
         UNION ALL SELECT MIN(created_at) FROM api_keys UNION ALL SELECT MIN(created_at) FROM domains)`,
    )
    .get() as { t: string | null };
  db.prepare('INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)').run(HOME_CREATED_KEY, oldest.t ?? new Date().toISOString());
  return read()!.value;
}

export function homeOrganization(db: Db): OrganizationResponse {
  const counts = db.prepare('SELECT (SELECT COUNT(*) FROM inboxes) AS inboxes, (SELECT COUNT(*) FROM domains) AS domains').get() as { inboxes: number; domains: number };
  const createdAt = homeCreatedAt(db);
  // Nothing about the organization itself ever changes; its counts are live.
  return { organization_id: SINGLE_ORGANIZATION_ID, inbox_count: counts.inboxes, domain_count: counts.domains, created_at: createdAt, updated_at: createdAt };
}
