/**
 * The callers an attack on the HTTP trust boundary impersonates (test/security/), seeded on a
 * running service through its own API with the owner bearer: the owner's browser session, an
 * agent key with every permission scoped to one inbox, and a key scoped to another inbox. Each
 * credential kind maps to the headers a request carries.
 */
import { PERMISSIONS } from '../../src/auth/permissions.js';
import { createApiKey, createInbox } from './seed.js';
import { setupOwner, type RunningSvc } from './svc.js';

/**
 * - `none`: no credential at all.
 * - `bad_bearer`: a well-formed bearer svc never issued.
 * - `key_in_scope`: an API key with every permission, scoped to `inbox`.
 * - `key_other_inbox`: an API key with every permission, scoped to `otherInbox`.
 * - `owner_bearer`: the owner token from connection.json.
 * - `cookie_only`: the owner's session cookie without X-Svc-CSRF, as another local port replays it.
 * - `session`: the session cookie with its X-Svc-CSRF token, as the web app sends it.
 */
export const CREDENTIAL_KINDS = ['none', 'bad_bearer', 'key_in_scope', 'key_other_inbox', 'owner_bearer', 'cookie_only', 'session'] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

export const CSRF_HEADER = 'X-Svc-CSRF';
/** Shaped like an API key so it is judged as one, never issued. */
const NEVER_ISSUED_KEY = 'svc_key_' + 'A'.repeat(43);

export interface Principals {
  session: { cookie: string; csrf: string };
  /** The inbox `key_in_scope` may use; the attacks aim at its resources. */
  inbox: string;
  otherInbox: string;
  keyInScope: string;
  keyOtherInbox: string;
  /** The request headers for a credential kind. */
  headers(kind: CredentialKind): Record<string, string>;
}

export async function seedPrincipals(svc: RunningSvc, domain = 'sec.test'): Promise<Principals> {
  const session = await setupOwner(svc);
  const inbox = await createInbox(svc, `agent@${domain}`);
  const otherInbox = await createInbox(svc, `other@${domain}`);
  const keyInScope = await allPermissionsKey(svc, inbox);
  const keyOtherInbox = await allPermissionsKey(svc, otherInbox);
  const headers = (kind: CredentialKind): Record<string, string> => {
    switch (kind) {
      case 'none':
        return {};
      case 'bad_bearer':
        return { Authorization: `Bearer ${NEVER_ISSUED_KEY}` };
      case 'key_in_scope':
        return { Authorization: `Bearer ${keyInScope}` };
      case 'key_other_inbox':
        return { Authorization: `Bearer ${keyOtherInbox}` };
      case 'owner_bearer':
        return { Authorization: `Bearer ${svc.ownerToken}` };
      case 'cookie_only':
        return { Cookie: session.cookie };
      case 'session':
        return { Cookie: session.cookie, [CSRF_HEADER]: session.csrf };
    }
  };
  return { session, inbox, otherInbox, keyInScope, keyOtherInbox, headers };
}

async function allPermissionsKey(svc: RunningSvc, inboxId: string): Promise<string> {
  return (await createApiKey(svc, { name: `all permissions on ${inboxId}`, permissions: [...PERMISSIONS], sendPolicy: 'approval', inboxIds: [inboxId] })).secret;
}
