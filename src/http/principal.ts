/** Who is calling: the owner (bearer or browser session) or an agent (API key, OAuth token). */

export type SendPolicy = 'direct' | 'approval' | 'read_only';

export interface Principal {
  kind: 'owner' | 'session' | 'api_key' | 'oauth';
  id: string;
  /** 'all', or the inbox ids this credential may touch. */
  inboxScope: 'all' | ReadonlySet<string>;
  /** 'all' for the owner. */
  permissions: 'all' | ReadonlySet<string>;
  sendPolicy: SendPolicy;
  /** Set for browser sessions: unsafe methods must carry this in X-Svc-CSRF. */
  csrfToken?: string;
}

export const isOwner = (p: Principal) => p.kind === 'owner' || p.kind === 'session';

export function hasPermission(p: Principal, permission: string): boolean {
  return p.permissions === 'all' || p.permissions.has(permission);
}

export function inScope(p: Principal, inboxId: string): boolean {
  return p.inboxScope === 'all' || p.inboxScope.has(inboxId);
}

/** Route access levels, set in each route's `config.auth`. */
export type Access = 'public' | 'owner' | 'owner_bearer' | 'agent';
