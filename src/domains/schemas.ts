/**
 * Request and response schemas of the owner's domain routes (spec §4.12; src/routes/domains.ts).
 * The serializer sends only the fields declared here; the route pins each to its view at compile
 * time (src/core/validation.ts SameShape), and the web app reads its types from them. Apart from
 * the store (./store.ts) so that the loops, which move domains but check no request, do not load
 * typebox (a few MiB per thread).
 */
import { Type, type Static } from 'typebox';
import { NullableString } from '../core/schemas.js';

const Flags = {
  feedback_enabled: Type.Optional(Type.Boolean()),
  subdomains_enabled: Type.Optional(Type.Boolean()),
  tracking_enabled: Type.Optional(Type.Boolean()),
};
export const CreateDomainBody = Type.Object({ domain: Type.String({ minLength: 1, maxLength: 300 }), ...Flags }, { additionalProperties: false });
export type CreateDomainBody = Static<typeof CreateDomainBody>;
export const UpdateDomainBody = Type.Object(Flags, { additionalProperties: false });
export type UpdateDomainBody = Static<typeof UpdateDomainBody>;

const RecordTypeField = Type.Union([Type.Literal('MX'), Type.Literal('TXT'), Type.Literal('A'), Type.Literal('AAAA'), Type.Literal('PTR')]);
/** What a list shows of a domain. */
const DomainItemFields = {
  domain_id: Type.String(),
  domain: Type.String(),
  status: Type.Union([
    Type.Literal('pending'),
    Type.Literal('provisioning'),
    Type.Literal('verifying'),
    Type.Literal('verified'),
    Type.Literal('failed'),
    Type.Literal('tearing_down'),
    Type.Literal('torn_down'),
  ]),
  reason: NullableString,
  feedback_enabled: Type.Boolean(),
  subdomains_enabled: Type.Boolean(),
  tracking_enabled: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
  verified_at: NullableString,
};
export const DomainItem = Type.Object(DomainItemFields);
/** The full domain: its records with their check status, and the self-test's progress. */
export const Domain = Type.Object({
  ...DomainItemFields,
  records: Type.Array(
    Type.Object({
      type: Type.String(),
      name: Type.String(),
      value: Type.String(),
      priority: Type.Optional(Type.Integer()),
      status: Type.Union([Type.Literal('pending'), Type.Literal('valid'), Type.Literal('invalid')]),
      reason: Type.Optional(Type.String()),
      checked_at: Type.Optional(Type.String()),
    }),
  ),
  checked_at: NullableString,
  selftest: Type.Object({ status: Type.String(), sent_at: NullableString, received_at: NullableString }),
});
export const DomainPlanResponse = Type.Object({
  domain: Type.String(),
  steps: Type.Array(Type.String()),
  records: Type.Array(Type.Object({ type: RecordTypeField, name: Type.String(), value: Type.String(), priority: Type.Optional(Type.Integer()) })),
  warnings: Type.Array(Type.String()),
});
export type DomainItem = Static<typeof DomainItem>;
export type Domain = Static<typeof Domain>;
export type DomainPlanResponse = Static<typeof DomainPlanResponse>;
