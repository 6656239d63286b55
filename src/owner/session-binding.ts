/**
 * The CSRF token a browser session holds is bound to the origin it was issued on: the stored
 * per-session secret is never handed out; the browser gets HMAC(secret, origin). svc's loopback
 * port changes on every start, and whoever binds an old port receives what an old tab still sends
 * there (the cookie, and the token as a WebSocket subprotocol); a token for another origin proves
 * nothing here (docs/security.md).
 */
import { createHmac } from 'node:crypto';

/** base64url of 24 bytes: as long as the secret itself. */
const TOKEN_CHARS = 32;

export function sessionCsrfToken(secret: string, origin: string): string {
  return createHmac('sha256', secret).update(`svc session csrf v1\n${origin}`).digest('base64url').slice(0, TOKEN_CHARS);
}
