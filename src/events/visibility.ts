/**
 * Who may see an event (spec §6.2 "Visible to", §5.2): the owner sees everything; an agent sees
 * an event only when its inbox is in the credential's scope and the credential holds the
 * permissions the event type needs. Webhooks and the WebSocket both ask here, at delivery time.
 */
import { hasPermission, inScope, isOwner, type Principal } from '../auth/principal.js';
import type { Permission } from '../auth/permissions.js';

export { EVENT_TYPES } from './event-types.js';
import { EVENT_TYPES } from './event-types.js';

export type EventType = (typeof EVENT_TYPES)[number];

/** Mail with a hidden label also needs the matching `label_*_read` beside `message_read`. */
const HIDDEN_VARIANT_PERMISSION: Readonly<Record<string, Permission>> = {
  'message.received.spam': 'label_spam_read',
  'message.received.blocked': 'label_blocked_read',
  'message.received.unauthenticated': 'label_unauthenticated_read',
};

/** The permissions that let a credential open the event stream (spec §6.4). */
export const STREAM_READ_PERMISSIONS = ['message_read', 'draft_read'] as const;

/** What an agent needs to see an event of this type, or 'owner' when agents never see it. */
export function audienceOf(eventType: string): 'owner' | readonly Permission[] {
  const hidden = HIDDEN_VARIANT_PERMISSION[eventType];
  if (hidden) return ['message_read', hidden];
  if (eventType.startsWith('message.')) return ['message_read'];
  if (eventType.startsWith('draft.')) return ['draft_read'];
  // domain.*, inbound.*, oauth.*, and any type this table does not know: owner only, so a new
  // event type can never leak to agents before someone decides who should see it.
  return 'owner';
}

/** The stored columns of an event that decide who sees it. */
export interface EventAddress {
  event_type: string;
  /** null for events that belong to no inbox; those are the owner's alone. */
  inbox_id: string | null;
}

/** Scope first, then the type's permissions (spec §5.2: out-of-scope is checked before permissions). */
export function isEventVisible(p: Principal, event: EventAddress): boolean {
  if (isOwner(p)) return true;
  if (event.inbox_id === null || !inScope(p, event.inbox_id)) return false;
  const needed = audienceOf(event.event_type);
  return needed !== 'owner' && needed.every((permission) => hasPermission(p, permission));
}

/** The WebSocket needs `message_read` or `draft_read`; webhook permissions alone are not enough. */
export function canReadEventStream(p: Principal): boolean {
  return STREAM_READ_PERMISSIONS.some((permission) => hasPermission(p, permission));
}
