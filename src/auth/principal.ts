/** Who is calling: the owner (bearer or browser session) or an agent (API key, OAuth token). */
import type { Permission } from './permissions.js';

/**
 * What a credential's sends do (spec §2.9; docs/guarded.md): `direct` queues them, `approval`
 * makes each a draft awaiting the owner, `guarded` queues them unless the outbound guard finds
 * something that must not leave without the owner (src/mail/guard.ts), `read_only` cannot send.
 */
export const SEND_POLICIES = ['direct', 'approval', 'guarded', 'read_only'] as const;
export type SendPolicy = (typeof SEND_POLICIES)[number];

export interface Principal {
  kind: 'owner' | 'session' | 'api_key' | 'oauth';
  id: string;
  /**
   * 'all', or the inbox ids this credential may touch. For a principal narrowed to a pod (`pod`),
   * always a set: the pod's inboxes within the credential's own restriction, so every check that
   * treats 'all' as "the whole home" refuses it.
   */
  inboxScope: 'all' | ReadonlySet<string>;
  /**
   * Set when the principal sees one pod only (docs/pods.md): a key or grant created under a pod,
   * or any credential on a `/v0/pods/{pod_id}/...` route. Absent means every pod.
   */
  pod?: PodScope;
  /** 'all' for the owner. */
  permissions: 'all' | ReadonlySet<Permission>;
  sendPolicy: SendPolicy;
  /** Set for browser sessions: unsafe methods must carry this in X-Svc-CSRF. */
  csrfToken?: string;
  /**
   * OAuth only: `id` is the grant (stable across token rotation, so webhooks a grant created stay
   * its own); `tokenId` is the access token presented, whose revocation or expiry ends download
   * URLs it issued; `audience` is the resource the token was issued for.
   */
  audience?: Audience;
  tokenId?: string;
}

/** One pod, and the credential's own inbox restriction (what a new inbox's address is checked against). */
export interface PodScope {
  podId: string;
  keyScope: 'all' | ReadonlySet<string>;
}

/** The two OAuth resources (spec §5.3): a token for one does not work on the other. */
export type Audience = '/v0' | '/mcp';

/** Where a credential is presented: the listener's origin and the resource being called. */
export interface CredentialContext {
  /** The listener's own origin (loopback or the tunnel's public origin). */
  origin: string;
  audience: Audience;
  /** Which listener took the request; owner credentials work on the loopback listener only. */
  listener: Listener;
}

/** The loopback listener, or the second listener that serves tunnel traffic (ARCHITECTURE §7). */
export type Listener = 'local' | 'tunnel';

export const isOwner = (p: Principal) => p.kind === 'owner' || p.kind === 'session';

export function hasPermission(p: Principal, permission: Permission): boolean {
  return p.permissions === 'all' || p.permissions.has(permission);
}

export function inScope(p: Principal, inboxId: string): boolean {
  return p.inboxScope === 'all' || p.inboxScope.has(inboxId);
}
