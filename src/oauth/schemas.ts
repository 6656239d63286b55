/**
 * Response schemas of the OAuth answers (spec §5.3, §4.13; issue 18): discovery metadata,
 * registration and token answers (src/routes/oauth.ts), and the owner's client list and consent
 * API (src/routes/owner-oauth.ts). The serializer sends only the fields declared here. Tokens are
 * declared on the token answer alone, the one place they are ever returned.
 */
import { Type, type Static } from 'typebox';
import { ListOf, NullableString } from '../core/schemas.js';
import { SendPolicySchema } from '../auth/permission-schemas.js';

/** Every known permission name with whether it is granted (src/auth/permissions.ts permissionObject). */
const PermissionFlags = Type.Record(Type.String(), Type.Boolean());
const SendPolicy = SendPolicySchema;

/** RFC 9728 protected resource metadata, for `/mcp` or `/v0`. */
export const ResourceMetadataResponse = Type.Object({
  resource: Type.String(),
  authorization_servers: Type.Array(Type.String()),
  scopes_supported: Type.Array(Type.String()),
  bearer_methods_supported: Type.Array(Type.String()),
});

/** RFC 8414 authorization server metadata. */
export const ServerMetadataResponse = Type.Object({
  issuer: Type.String(),
  authorization_endpoint: Type.String(),
  token_endpoint: Type.String(),
  registration_endpoint: Type.String(),
  revocation_endpoint: Type.String(),
  response_types_supported: Type.Array(Type.String()),
  response_modes_supported: Type.Array(Type.String()),
  grant_types_supported: Type.Array(Type.String()),
  code_challenge_methods_supported: Type.Array(Type.String()),
  token_endpoint_auth_methods_supported: Type.Array(Type.String()),
  revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
  scopes_supported: Type.Array(Type.String()),
});

/** RFC 7591 §3.2.1: the registered client (src/oauth/clients.ts registrationResponse); `client_name` only when one was given. */
export const RegistrationResponse = Type.Object({
  client_id: Type.String(),
  client_name: Type.Optional(Type.String()),
  redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.Literal('none'),
  client_id_issued_at: Type.Integer(),
});

/** RFC 6749 §5.1: the only answer that carries tokens (src/oauth/grants.ts TokenResponse). */
export const TokenResponse = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  refresh_token: Type.String(),
  scope: Type.String(),
});
export type TokenResponse = Static<typeof TokenResponse>;

/** An active grant of a client, as the owner sees it: what it may do, never its tokens. */
export const OAuthGrant = Type.Object({
  grant_id: Type.String(),
  resource: Type.String(),
  origin: Type.String(),
  inbox_ids: Type.Array(Type.String()),
  permissions: PermissionFlags,
  send_policy: Type.String(),
  created_at: Type.String(),
  expires_at: Type.String(),
  last_used_at: NullableString,
});
export type OAuthGrant = Static<typeof OAuthGrant>;

/** A registered client with its active grants (`GET /owner/oauth/clients`). */
export const OAuthClient = Type.Object({
  client_id: Type.String(),
  client_name: NullableString,
  redirect_uris: Type.Array(Type.String()),
  created_at: Type.String(),
  grants: Type.Array(OAuthGrant),
});
export type OAuthClient = Static<typeof OAuthClient>;
export const OAuthClientPage = ListOf('clients', OAuthClient);

export const PurgeClientsResponse = Type.Object({ deleted_clients: Type.Integer() });

/** What the consent screen shows (src/oauth/consent.ts requestView). */
export const ConsentRequestResponse = Type.Object({
  request_id: Type.String(),
  client_id: Type.String(),
  client_name: NullableString,
  redirect_uri: Type.String(),
  redirect_host: Type.String(),
  verified: Type.Boolean(),
  resource: Type.String(),
  defaults: Type.Object({ permissions: PermissionFlags, send_policy: SendPolicy, inbox_ids: Type.Array(Type.String()) }),
  expires_at: Type.String(),
});
export type ConsentRequestResponse = Static<typeof ConsentRequestResponse>;

/** Approve or deny: where the browser goes next (the client's redirect URI with the code or the error). */
export const ConsentDecisionResponse = Type.Object({ redirect_to: Type.String() });
