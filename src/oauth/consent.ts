/**
 * Authorization requests waiting for the owner's consent (spec §5.3 steps 3–4). `/oauth/authorize`
 * stores a request for ten minutes; the web app's consent page reads it, and the owner approves
 * (choosing inboxes, permissions and send policy) or denies. Either way the answer is the URL to
 * send the browser back to the client. At most MAX_PENDING_REQUESTS wait at once
 * (MAX_PENDING_REQUESTS_PER_CLIENT for one client); a new one beyond that ends the oldest.
 */
import type { Db } from '../db/open.js';
import { uuidv7 } from '../db/ids.js';
import { ApiError } from '../core/errors.js';
import { normalizeInboxId } from '../auth/access.js';
import type { SendPolicy } from '../auth/principal.js';
import { prepared } from '../db/statements.js';
import { inboxExists } from '../auth/inbox-lookup.js';
import { permissionObject, PERMISSIONS, type PermissionsInput } from '../auth/permissions.js';
import { sweepOAuth } from './clients.js';
import { appendOAuthEvent, createGrant } from './grants.js';
import { redirectHost, withResponseParams } from './redirect-uris.js';
import { MAX_PENDING_REQUESTS, MAX_PENDING_REQUESTS_PER_CLIENT, REQUEST_TTL_MS } from './limits.js';
import type { Resource } from './resources.js';

const iso = (ms: number) => new Date(ms).toISOString();

export interface PendingRequest {
  clientId: string;
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  resource: Resource;
}

interface RequestRow {
  request_id: string;
  client_id: string;
  client_name: string | null;
  redirect_uri: string;
  state: string | null;
  code_challenge: string;
  resource: string;
  expires_at: string;
}

/** Stores a request for the owner to answer (making room at the caps); runs inside the caller's transaction. */
export function storeRequest(db: Db, r: PendingRequest, now = Date.now()): string {
  const requestId = uuidv7(now);
  sweepOAuth(db, now);
  // Full: the oldest waiting request (of this client, else of any) makes room. Refusing instead
  // would let anything that can reach /oauth/authorize with the owner's cookie keep every
  // sign-in out; this way a flood only ends its own earlier requests.
  const oldest = () =>
    prepared(db, 'DELETE FROM oauth_requests WHERE request_id = (SELECT request_id FROM oauth_requests WHERE @client IS NULL OR client_id = @client ORDER BY created_at, request_id LIMIT 1)');
  const { total, forClient } = prepared(db, 'SELECT count(*) AS total, count(*) FILTER (WHERE client_id = ?) AS forClient FROM oauth_requests').get(r.clientId) as {
    total: number;
    forClient: number;
  };
  if (forClient >= MAX_PENDING_REQUESTS_PER_CLIENT) oldest().run({ client: r.clientId });
  else if (total >= MAX_PENDING_REQUESTS) oldest().run({ client: null });
  prepared(db, 'INSERT INTO oauth_requests (request_id, client_id, redirect_uri, state, code_challenge, resource, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
    requestId,
    r.clientId,
    r.redirectUri,
    r.state,
    r.codeChallenge,
    r.resource.resource,
    iso(now),
    iso(now + REQUEST_TTL_MS),
  );
  return requestId;
}

const requestGone = () =>
  new ApiError('not_found', 'The authorization request was not found or has expired.', {
    fix: 'Requests last 10 minutes and are answered once; start the sign-in again from the client.',
  });

function pendingRow(db: Db, requestId: string, now: number): RequestRow {
  const row = prepared(db, 'SELECT r.*, c.client_name FROM oauth_requests r JOIN oauth_clients c ON c.client_id = r.client_id WHERE r.request_id = ?').get(requestId) as RequestRow | undefined;
  if (!row || Date.parse(row.expires_at) <= now) throw requestGone();
  return row;
}

/**
 * What the consent screen shows. The client's name and redirect host are its own claims
 * (`verified: false`). Defaults: every permission, send policy `approval`, no inbox selected.
 */
export function requestView(db: Db, requestId: string, now = Date.now()) {
  const row = pendingRow(db, requestId, now);
  return {
    request_id: row.request_id,
    client_id: row.client_id,
    client_name: row.client_name,
    redirect_uri: row.redirect_uri,
    redirect_host: redirectHost(row.redirect_uri),
    verified: false,
    resource: row.resource,
    defaults: { permissions: permissionObject(PERMISSIONS), send_policy: 'approval' as SendPolicy, inbox_ids: [] as string[] },
    expires_at: row.expires_at,
  };
}

export interface Approval {
  inbox_ids: string[];
  permissions: PermissionsInput;
  send_policy: SendPolicy;
}

/** The inbox ids as stored: distinct, normalized, each existing (else `validation_error`). */
function existingInboxes(db: Db, inboxIds: string[]): string[] {
  const ids = [...new Set(inboxIds.map(normalizeInboxId))];
  for (const id of ids) {
    if (!inboxExists(db, id)) throw new ApiError('validation_error', `The inbox \`${id}\` does not exist.`, { fix: 'Choose inboxes from GET /v0/inboxes.' });
  }
  return ids;
}

/**
 * The owner approves: the grant, its code and the `oauth.authorized` event, inside the caller's
 * transaction; the request is answered once. `permissions` is the approval's set in stored form,
 * decided before the transaction (src/requests/oauth.ts).
 */
export function approveRequest(
  db: Db,
  requestId: string,
  approval: Approval,
  permissions: string,
  resourceOf: (resource: string) => Resource | null,
  now = Date.now(),
): { redirectTo: string; seq: number } {
  const row = pendingRow(db, requestId, now);
  const inboxIds = existingInboxes(db, approval.inbox_ids);
  const resource = resourceOf(row.resource);
  if (!resource) {
    throw new ApiError('conflict', 'The resource this request names is no longer served (the remote hostname changed or remote access was turned off).', {
      fix: 'Deny this request and start the sign-in again from the client.',
    });
  }
  prepared(db, 'DELETE FROM oauth_requests WHERE request_id = ?').run(row.request_id);
  const { grantId, code } = createGrant(
    db,
    {
      clientId: row.client_id,
      resource: resource.resource,
      origin: resource.origin,
      audience: resource.audience,
      inboxIds,
      permissions,
      sendPolicy: approval.send_policy,
      redirectUri: row.redirect_uri,
      codeChallenge: row.code_challenge,
    },
    now,
  );
  const seq = appendOAuthEvent(db, 'oauth.authorized', { grant_id: grantId, client_id: row.client_id }, now);
  return { redirectTo: withResponseParams(row.redirect_uri, { code, state: row.state ?? undefined }), seq };
}

/** The owner denies: the request is answered once, with `access_denied` for the client; inside the caller's transaction. */
export function denyRequest(db: Db, requestId: string, now = Date.now()): { redirectTo: string } {
  const row = pendingRow(db, requestId, now);
  prepared(db, 'DELETE FROM oauth_requests WHERE request_id = ?').run(row.request_id);
  return {
    redirectTo: withResponseParams(row.redirect_uri, { error: 'access_denied', error_description: 'The owner denied the request.', state: row.state ?? undefined }),
  };
}
