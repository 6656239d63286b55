/**
 * Request and response schemas of the owner's domain routes (spec §4.12; src/routes/domains.ts).
 * The serializer sends only the fields declared here; the route pins each to its view at compile
 * time (src/core/validation.ts SameShape), and the web app reads its types from them. Apart from
 * the store (./store.ts) so that the loops, which move domains but check no request, do not load
 * typebox (a few MiB per thread).
 */
import { Type, type Static } from 'typebox';
import { NullableString } from '../core/schemas.js';
import { DOMAIN_STATUSES, RECORD_STATES, SDK_DOMAIN_STATUSES, SDK_RECORD_STATUSES } from './states.js';
import { EXTRA_RECORD_TYPES, SDK_RECORD_TYPES } from './record-types.js';

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
/**
 * `status` in the AgentMail SDK's words (its VerificationStatus enum); svc's own lifecycle is
 * `state`, as a draft keeps its full state beside the SDK's `send_status` (docs/domains.md).
 */
const DomainItemFields = {
  domain_id: Type.String(),
  /** The pod that owns the domain (docs/pods.md); absent for a domain of the whole home. */
  pod_id: Type.Optional(Type.String()),
  domain: Type.String(),
  status: Type.Enum(SDK_DOMAIN_STATUSES),
  state: Type.Enum(DOMAIN_STATUSES),
  reason: NullableString,
  feedback_enabled: Type.Boolean(),
  subdomains_enabled: Type.Boolean(),
  tracking_enabled: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
  verified_at: NullableString,
};
export const DomainItem = Type.Object(DomainItemFields);
/** One planned record with its last check: `status` as the SDK names it, `state` as svc does. */
const recordView = <T extends string>(types: readonly [T, ...T[]]) =>
  Type.Object({
    type: Type.Enum(types),
    name: Type.String(),
    value: Type.String(),
    priority: Type.Optional(Type.Integer()),
    status: Type.Enum(SDK_RECORD_STATUSES),
    state: Type.Enum(RECORD_STATES),
    reason: Type.Optional(Type.String()),
    checked_at: Type.Optional(Type.String()),
  });
/**
 * The full domain: its records with their check status, and the self-test's progress. `records`
 * holds only the types the SDK's RecordType enum names (it refuses others when it validates);
 * the edge's address and reverse-DNS records are `extra_records`, checked the same way.
 */
export const Domain = Type.Object({
  ...DomainItemFields,
  records: Type.Array(recordView(SDK_RECORD_TYPES)),
  extra_records: Type.Array(recordView(EXTRA_RECORD_TYPES)),
  checked_at: NullableString,
  selftest: Type.Object({ status: Type.String(), sent_at: NullableString, received_at: NullableString }),
});
/** `GET /domains/{id}/setup-link`, the SDK's GetSetupLinkResponse: the owner's web app page for the domain. */
export const DomainSetupLink = Type.Object({
  supported: Type.Boolean(),
  provider_name: Type.Optional(Type.String()),
  url: Type.String(),
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
export type DomainSetupLink = Static<typeof DomainSetupLink>;
