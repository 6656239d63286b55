/**
 * The response schema of a list entry (src/mail/lists.ts holds the lists). Apart so that the loops,
 * which ask the lists for verdicts but answer no request, do not load typebox (a few MiB per thread).
 */
import { Type, type Static } from 'typebox';

/** One entry as the API returns it (AgentMail `ListEntry` field names, plus `inbox_id`). */
export const ListEntrySchema = Type.Object({
  entry: Type.String(),
  entry_type: Type.Union([Type.Literal('email'), Type.Literal('domain')]),
  direction: Type.Union([Type.Literal('receive'), Type.Literal('send'), Type.Literal('reply')]),
  list_type: Type.Union([Type.Literal('allow'), Type.Literal('block')]),
  reason: Type.Union([Type.String(), Type.Null()]),
  inbox_id: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  /** Constants the AgentMail SDK's types require (docs/agentmail-compat.md); `pod_id` on inbox lists only. */
  organization_id: Type.String(),
  pod_id: Type.Optional(Type.String()),
});
export type ListEntry = Static<typeof ListEntrySchema>;
