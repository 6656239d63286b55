/**
 * What each agent permission (spec §2.9) lets a client do, in the owner's words: shown next to
 * the name on the consent screen and the API key form. No imports beyond types, so the web app
 * bundles it as is.
 */
import type { Permission } from './permissions.js';

export const PERMISSION_DESCRIPTIONS: Record<Permission, string> = {
  inbox_read: 'See the inboxes it may use and their settings',
  inbox_create: 'Create new inboxes',
  inbox_update: 'Change inbox settings',
  inbox_delete: 'Delete inboxes with all their mail',
  message_read: 'Read mail: messages, threads, attachments and search',
  message_update: 'Change labels on messages and threads',
  message_delete: 'Delete messages and threads',
  message_send: 'Send new mail and forward mail (as the sending policy allows)',
  message_reply: 'Reply to mail (as the sending policy allows)',
  draft_read: 'Read drafts',
  draft_create: 'Write drafts',
  draft_update: 'Edit drafts',
  draft_delete: 'Delete drafts',
  draft_send: 'Send drafts (as the sending policy allows)',
  list_entry_read: 'See the allow and block lists',
  list_entry_create: 'Add addresses to the allow and block lists',
  list_entry_delete: 'Remove addresses from the allow and block lists',
  webhook_read: 'See webhooks',
  webhook_create: 'Create webhooks that receive events',
  webhook_update: 'Change webhooks',
  webhook_delete: 'Delete webhooks',
  label_spam_read: 'See mail marked as spam',
  label_blocked_read: 'See mail from senders not on the allow list',
  label_unauthenticated_read: 'See mail that failed sender authentication',
  label_trash_read: 'See mail in the trash',
};
