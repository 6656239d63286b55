/** The event type names (spec §6.2). No imports: the web app shares this list. */

/** Every event type of spec §6.2. */
export const EVENT_TYPES = [
  'message.received',
  'message.received.spam',
  'message.received.blocked',
  'message.received.unauthenticated',
  'message.sent',
  'message.send_unknown',
  'message.delivered',
  'message.bounced',
  'message.complained',
  'message.rejected',
  'message.failed',
  'draft.created',
  'draft.approval_required',
  'draft.approved',
  'draft.rejected',
  'draft.sent',
  'domain.verified',
  'inbound.quarantined',
  'inbound.released',
  'inbound.deleted',
  'oauth.authorized',
  'oauth.revoked',
  'oauth.tokens_revoked',
] as const;
