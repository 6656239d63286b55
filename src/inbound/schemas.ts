/**
 * Response schemas of the owner's inbound routes (spec §2.7, §2.11, §4.13; src/routes/inbound.ts):
 * the quarantine and the inbound rejections. The serializer sends only the fields declared here;
 * the web app reads its types from them (web/src/api-types.ts).
 */
import { Type, type Static } from 'typebox';
import { ListOf, NullableInteger, NullableString } from '../core/schemas.js';

/** A quarantined item as the owner API shows it (spec §2.11; src/inbound/quarantine.ts quarantineView). */
export const QuarantineItem = Type.Object({
  quarantine_id: Type.String(),
  source_kind: Type.Union([Type.Literal('buffer_object'), Type.Literal('queue_message')]),
  reason_code: Type.String(),
  first_seen: Type.String(),
  size: NullableInteger,
  inbox_id: NullableString,
  attempts: NullableInteger,
  last_attempt_at: NullableString,
  status: Type.Union([Type.Literal('quarantined'), Type.Literal('release_pending'), Type.Literal('delete_pending'), Type.Literal('released'), Type.Literal('deleted')]),
});
/** A page of the quarantine plus `total` (svc extension): every visible item, for the app's badge and `svc status`. */
export const QuarantinePage = Type.Object({ ...ListOf('items', QuarantineItem).properties, total: Type.Integer() });
/** A retry either released the item into its inbox or left it quarantined (with the item as it now stands). */
export const RetryResponse = Type.Union([Type.Object({ status: Type.Literal('released') }), Type.Object({ status: Type.Literal('quarantined'), item: QuarantineItem })]);
/** An inbound rejection (spec §2.7): metadata only. */
export const Rejection = Type.Object({ rejection_id: Type.String(), inbox_id: Type.String(), sender: NullableString, reason: Type.String(), received_at: Type.String(), created_at: Type.String() });
export type QuarantineItem = Static<typeof QuarantineItem>;
export type Rejection = Static<typeof Rejection>;
