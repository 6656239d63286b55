/**
 * What a browser session's secrets are bound to (docs/security.md, "A squatter on svc's port").
 *
 * The stored per-session secret never leaves svc. The browser gets values derived from it:
 * - the CSRF token, HMAC(secret, origin, start epoch). Browsers send cookies for 127.0.0.1 to every
 *   port, and svc's URL is stable, so whatever process holds the port while svc is down receives
 *   what an open tab still sends there (the cookie, and the token as a WebSocket subprotocol) or can
 *   read what the origin's storage holds. The epoch is random per start: a token captured while svc
 *   was down is dead when it is back.
 * - the server key, with which the tab checks that svc (not a squatter) answers before it sends
 *   anything after a disconnect, and the renewal key, with which it gets a token for the new epoch
 *   by answering a fresh challenge. Both live in the tab's memory only, never in storage a page
 *   loaded from the origin later could read.
 */
import { createHmac, randomBytes } from 'node:crypto';

/** base64url of 24 bytes: as long as the secret itself. */
const TOKEN_CHARS = 32;

const derive = (secret: string, label: string) => createHmac('sha256', secret).update(label).digest('base64url');

/** A fresh start epoch: every CSRF token of the previous process start stops working. */
export const newSessionEpoch = () => randomBytes(16).toString('base64url');

export function sessionCsrfToken(secret: string, origin: string, epoch: string): string {
  return derive(secret, `svc session csrf v2\n${origin}\n${epoch}`).slice(0, TOKEN_CHARS);
}

/** The keys a tab keeps in memory (GET /v0/owner/session-keys). */
export function sessionKeys(secret: string): { server_key: string; renewal_key: string } {
  return { server_key: derive(secret, 'svc session server v1'), renewal_key: derive(secret, 'svc session renewal v1') };
}

/** svc's answer to a tab's nonce: HMAC(server key, nonce, challenge), which only svc can compute. */
export function serverProof(secret: string, nonce: string, challenge: string): string {
  return createHmac('sha256', sessionKeys(secret).server_key).update(`svc server proof v1\n${nonce}\n${challenge}`).digest('base64url');
}

/** The tab's answer to svc's challenge: HMAC(renewal key, challenge). */
export function renewalAnswer(secret: string, challenge: string): string {
  return createHmac('sha256', sessionKeys(secret).renewal_key).update(`svc session renewal v1\n${challenge}`).digest('base64url');
}
