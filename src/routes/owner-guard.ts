/**
 * The owner's outbound guard settings (issue 20 §4, docs/guarded.md): `GET` and `PATCH
 * /owner/guard`. Which checks hold a guarded credential's sends, the first-contact limits, and
 * the owner's own secrets the guard looks for, shown only by their last four characters.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { GUARD_CHECKS, MAX_NEW_LIMIT, MAX_OWNER_SECRETS, MAX_SECRET_CHARS, type GuardSettingsView } from '../mail/guard.js';
import { readGuardFor, writeGuardFor } from '../requests/guard.js';
import type { SameShape } from '../core/validation.js';

const Limit = Type.Integer({ minimum: 0, maximum: MAX_NEW_LIMIT });
const GuardPatch = Type.Object(
  {
    checks: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.Boolean(), { maxProperties: GUARD_CHECKS.length })),
    new_recipients: Type.Optional(Type.Object({ per_message: Type.Optional(Limit), per_day: Type.Optional(Limit) }, { additionalProperties: false })),
    add_secrets: Type.Optional(Type.Array(Type.String({ maxLength: MAX_SECRET_CHARS }), { maxItems: MAX_OWNER_SECRETS })),
    remove_secrets: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: MAX_OWNER_SECRETS })),
  },
  { additionalProperties: false },
);
const GuardResponse = Type.Object({
  checks: Type.Array(Type.Object({ name: Type.Unsafe<GuardSettingsView['checks'][number]['name']>(Type.String()), enabled: Type.Boolean(), description: Type.String() })),
  new_recipients: Type.Object({ per_message: Type.Integer(), per_day: Type.Integer() }),
  secrets: Type.Array(Type.Object({ secret_id: Type.String(), hint: Type.String(), created_at: Type.String() })),
});
// Compile-time: the schema is exactly the view (src/core/validation.ts SameShape).
const guardShape: SameShape<Static<typeof GuardResponse>, GuardSettingsView> = true;
const response = { 200: GuardResponse };

export const ownerGuardRoutes: FastifyPluginAsync = async (app) => {
  const svc = app.svc;

  app.get('/guard', { config: { auth: 'owner' }, schema: { response } }, async () => readGuardFor(svc));

  app.patch<{ Body: Static<typeof GuardPatch> }>('/guard', { config: { auth: 'owner', sudo: true }, schema: { body: GuardPatch, response } }, async (request) => writeGuardFor(svc, request.body));
};
