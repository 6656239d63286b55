/**
 * Turning a bearer credential into a principal, and re-checking a principal later (WebSocket
 * streams and download URLs recheck the issuer on every use).
 */
import type { Db } from '../db/open.js';
import { sessionExpiry, type OwnerAccount } from '../owner/owner-account.js';
import type { CredentialContext, Principal } from './principal.js';
import { API_KEY_PREFIX, apiKeyCredentialByHash, apiKeyCredentialById, type ApiKeyCredential } from './api-keys.js';
import { sha256Hex } from './secrets.js';
import { grantedPermissions } from './permissions.js';
import { dbStamp } from '../db/stamp.js';
import { ACCESS_TOKEN_PREFIX } from '../oauth/limits.js';
import { accessTokenPrincipal, currentGrantPrincipal } from '../oauth/grants.js';
import { storedPodPrincipal } from '../pods/scope.js';


/** The key's principal; a key created under a pod sees that pod only (docs/pods.md). */
function apiKeyPrincipal(db: Db, row: ApiKeyCredential | undefined): Principal | null {
  if (!row) return null;
  if (row.expires_at && Date.parse(row.expires_at) <= Date.now()) return null;
  const principal: Principal = {
    kind: 'api_key',
    id: row.api_key_id,
    inboxScope: row.inbox_ids === null ? 'all' : new Set(JSON.parse(row.inbox_ids) as string[]),
    permissions: grantedPermissions(row.permissions),
    sendPolicy: row.send_policy,
  };
  return storedPodPrincipal(db, principal, row.pod_id);
}

/**
 * API key rows by secret hash, valid while the database is unchanged (dbStamp): a revocation or
 * permission change is a write, so it takes effect on the very next request.
 */
const keyCache = new WeakMap<Db, { stamp: string; rows: Map<string, ApiKeyCredential | undefined> }>();
const KEY_CACHE_MAX = 10_000;

function apiKeyRow(db: Db, hash: string): ApiKeyCredential | undefined {
  const stamp = dbStamp(db);
  let cache = keyCache.get(db);
  if (!cache || cache.stamp !== stamp) {
    cache = { stamp, rows: new Map() };
    keyCache.set(db, cache);
  }
  if (cache.rows.has(hash)) return cache.rows.get(hash);
  const row = apiKeyCredentialByHash(db, hash);
  if (cache.rows.size >= KEY_CACHE_MAX) cache.rows.clear();
  cache.rows.set(hash, row);
  return row;
}

/**
 * Owner bearer, API key or OAuth access token; null when the token matches nothing active
 * (revoked, expired, unknown) or is not valid where it is presented: the owner bearer only on the
 * loopback listener, an OAuth token only on the origin and audience it was issued for.
 */
export function resolveBearer(db: Db, owner: OwnerAccount, token: string, where: CredentialContext): Principal | null {
  if (owner.isBearer(token)) return where.listener === 'local' ? owner.ownerPrincipal() : null;
  if (token.startsWith(API_KEY_PREFIX)) return apiKeyPrincipal(db, apiKeyRow(db, sha256Hex(token)));
  if (token.startsWith(ACCESS_TOKEN_PREFIX)) return accessTokenPrincipal(db, token, where);
  return null;
}

/**
 * The principal as it stands now: same identity, current permissions and scope; null once
 * revoked or expired. The owner bearer lives as long as the process.
 */
export function refreshPrincipal(db: Db, p: Principal): Principal | null {
  switch (p.kind) {
    case 'owner':
      return p;
    case 'session': {
      const expiresAt = sessionExpiry(db, p.id);
      return expiresAt !== null && Date.parse(expiresAt) > Date.now() ? p : null;
    }
    case 'api_key':
      return apiKeyPrincipal(db, apiKeyCredentialById(db, p.id));
    case 'oauth':
      return currentGrantPrincipal(db, p.id, p.tokenId);
    default:
      return null;
  }
}
