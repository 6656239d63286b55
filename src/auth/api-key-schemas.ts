/**
 * The request and response schemas of the API key routes (src/auth/api-keys.ts holds the store).
 * Apart so that threads that only authenticate (the webhooks loop re-checks its owners' keys) do
 * not load typebox, a few MiB per thread.
 */
import { Type, type Static } from 'typebox';
import { PermissionsInput, SendPolicySchema } from './permission-schemas.js';

export const NAME_MAX = 128;
export const SCOPE_MAX_INBOXES = 1000;

const SendPolicyField = SendPolicySchema;
const Name = Type.Union([Type.String({ maxLength: NAME_MAX }), Type.Null()]);
const Address = Type.String({ minLength: 3, maxLength: 320 });

/** Create under `/inboxes/{inbox_id}/api-keys`: the path is the scope, so the body carries none. */
/** What every new key may say about itself; the instance-wide form adds its inbox scope. */
const NewKeyFields = {
  permissions: Type.Optional(PermissionsInput),
  send_policy: Type.Optional(SendPolicyField),
  name: Type.Optional(Name),
  expires_at: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
};

export const CreateInboxApiKeyBody = Type.Object(NewKeyFields, { additionalProperties: false });
export type CreateInboxApiKeyBody = Static<typeof CreateInboxApiKeyBody>;

export const CreateApiKeyBody = Type.Object(
  {
    ...NewKeyFields,
    inbox_id: Type.Optional(Type.Union([Address, Type.Null()])),
    inbox_ids: Type.Optional(Type.Union([Type.Array(Address, { minItems: 1, maxItems: SCOPE_MAX_INBOXES }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>;

export const UpdateApiKeyBody = Type.Object(
  {
    name: Type.Optional(Name),
    permissions: Type.Optional(PermissionsInput),
    send_policy: Type.Optional(SendPolicyField),
  },
  { additionalProperties: false },
);
export type UpdateApiKeyBody = Static<typeof UpdateApiKeyBody>;

const ApiKeyFields = {
  /** AgentMail's credential kind; svc only has bearer keys. */
  type: Type.Literal('bearer'),
  api_key_id: Type.String(),
  /** The key's pod (docs/pods.md); absent for a key of the whole home. */
  pod_id: Type.Optional(Type.String()),
  name: Type.Union([Type.String(), Type.Null()]),
  prefix: Type.String(),
  /** Every known permission name with whether it is granted. */
  permissions: Type.Record(Type.String(), Type.Boolean()),
  send_policy: SendPolicyField,
  /** The scope's inbox when it is exactly one, else null. */
  inbox_id: Type.Union([Type.String(), Type.Null()]),
  /** null: every inbox. */
  inbox_ids: Type.Union([Type.Array(Type.String()), Type.Null()]),
  expires_at: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  updated_at: Type.String(),
  used_at: Type.Union([Type.String(), Type.Null()]),
};
/** A key as every read returns it: the secret and its hash are not fields, so they cannot leak. */
export const ApiKeyResponse = Type.Object(ApiKeyFields);
export type ApiKeyResponse = Static<typeof ApiKeyResponse>;
/** The answer to a create: the key and, this once, its secret. */
export const CreatedApiKeyResponse = Type.Object({ ...ApiKeyFields, api_key: Type.String() });
export type CreatedApiKeyResponse = Static<typeof CreatedApiKeyResponse>;
