/**
 * The request schema for permissions (API keys, OAuth consent); src/auth/permissions.ts holds the
 * names and their checks. Apart so that threads that only read grants do not load typebox.
 */
import { Type, type Static } from 'typebox';

/**
 * Loose on purpose: names are checked in `permissionSet`, which can say which name is unknown;
 * a JSON-schema union would only answer "must match a schema in anyOf".
 */
export const PermissionsInput = Type.Union([
  Type.Record(Type.String(), Type.Union([Type.Boolean(), Type.Null()]), { maxProperties: 200 }),
  Type.Array(Type.String(), { maxItems: 200 }),
]);
export type PermissionsInput = Static<typeof PermissionsInput>;

/** A credential's send policy (src/auth/principal.ts SEND_POLICIES). */
export const SendPolicySchema = Type.Union([Type.Literal('direct'), Type.Literal('approval'), Type.Literal('guarded'), Type.Literal('read_only')]);
