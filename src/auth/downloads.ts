/**
 * Download capabilities (spec §4.7): an HMAC-signed token naming the issuer, the resource and the
 * listener origin, valid five minutes. The key is made fresh at every process start, so a restart
 * invalidates every URL. `GET /v0/downloads/{token}` (src/routes/downloads.ts) verifies the token
 * and rechecks the issuer on each fetch.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Principal } from './principal.js';
import { sameSecret } from './secrets.js';

export const DOWNLOAD_TTL_MS = 5 * 60 * 1000;

/** What a URL grants: one attachment, or the original MIME of one message. */
export type DownloadTarget =
  | { kind: 'attachment'; inboxId: string; messageId: string; attachmentId: string }
  | { kind: 'draft_attachment'; inboxId: string; draftId: string; attachmentId: string }
  | { kind: 'raw'; inboxId: string; messageId: string };

export interface DownloadClaims {
  /**
   * Issuer: principal kind and id (e.g. `api_key`, its id); for OAuth the grant and the access
   * token presented, whose expiry or revocation ends the URL.
   */
  issuer: { kind: Principal['kind']; id: string; tokenId?: string };
  /** Audience for OAuth issuers (`/v0` or `/mcp`); null otherwise. */
  audience: string | null;
  origin: string;
  target: DownloadTarget;
  /** Expiry, epoch milliseconds. */
  exp: number;
}

const processKey = randomBytes(32);

function mac(body: string): string {
  return createHmac('sha256', processKey).update(body).digest('base64url');
}

/** An OAuth issuer's URL keeps the issuing token's audience (`/v0` or `/mcp`); other issuers have none. */
export function issueDownloadUrl(principal: Principal, origin: string, target: DownloadTarget): { download_url: string; expires_at: string } {
  const audience = principal.audience ?? null;
  const exp = Date.now() + DOWNLOAD_TTL_MS;
  const issuer = { kind: principal.kind, id: principal.id, ...(principal.tokenId !== undefined ? { tokenId: principal.tokenId } : {}) };
  const claims: DownloadClaims = { issuer, audience, origin, target, exp };
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return { download_url: `${origin}/v0/downloads/${body}.${mac(body)}`, expires_at: new Date(exp).toISOString() };
}

/** The claims of a token whose signature is valid and that has not expired; null otherwise. */
export function readDownloadToken(token: string): DownloadClaims | null {
  const [body, signature, extra] = token.split('.');
  if (!body || !signature || extra !== undefined || !sameSecret(signature, mac(body))) return null;
  try {
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as DownloadClaims;
    return claims.exp > Date.now() ? claims : null;
  } catch {
    return null;
  }
}
