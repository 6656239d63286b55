/**
 * Response schemas of the owner account routes (spec §4.13, §5.1; src/routes/owner.ts): status,
 * session answers, login links and the session list. Never a session token or a password hash:
 * the session itself is the cookie. The web app reads its types from these.
 */
import { Type, type Static } from 'typebox';

export const StatusResponse = Type.Object({ setup_required: Type.Boolean(), authenticated: Type.Boolean(), locked: Type.Boolean() });
/** Setup, login and redeem: the token the page sends in X-Svc-CSRF; the session itself is the cookie. */
export const SessionResponse = Type.Object({ csrf_token: Type.String(), expires_at: Type.String() });
/** What a signed-in tab keeps in memory only (src/owner/session-binding.ts). */
export const SessionKeysResponse = Type.Object({ server_key: Type.String(), renewal_key: Type.String() });
/** The reconnect handshake: svc's proof on the tab's nonce, and a challenge for the renewal. */
export const SessionProofResponse = Type.Object({ proof: Type.String(), challenge: Type.String() });
export const SudoResponse = Type.Object({ sudo_until: Type.String() });
export const LoginLinkResponse = Type.Object({ url: Type.String(), expires_at: Type.String() });
export const Session = Type.Object({
  session_id: Type.String(),
  /** A hash of the browser's User-Agent, to tell sessions apart without storing the header. */
  user_agent: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  last_seen_at: Type.String(),
  expires_at: Type.String(),
  current: Type.Boolean(),
});
export const SessionList = Type.Object({ count: Type.Integer(), limit: Type.Integer(), sessions: Type.Array(Session) });
export type StatusResponse = Static<typeof StatusResponse>;
export type SessionResponse = Static<typeof SessionResponse>;
export type Session = Static<typeof Session>;
