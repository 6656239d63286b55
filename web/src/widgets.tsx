/** Form widgets shared by the API-key page and the OAuth consent screen: permission and inbox checklists, send policies. */
import type { Inbox } from './api-types';
import { PERMISSION_DESCRIPTIONS } from '../../src/auth/permission-descriptions';
import type { Permission } from '../../src/auth/permissions';

/** Agent permission names (spec §2.9), grouped for the checklist. */
export const PERMISSION_GROUPS: [string, string[]][] = [
  ['Inboxes', ['inbox_read', 'inbox_create', 'inbox_update', 'inbox_delete']],
  ['Messages', ['message_read', 'message_update', 'message_delete', 'message_send', 'message_reply']],
  ['Drafts', ['draft_read', 'draft_create', 'draft_update', 'draft_delete', 'draft_send']],
  ['Lists', ['list_entry_read', 'list_entry_create', 'list_entry_delete']],
  ['Webhooks', ['webhook_read', 'webhook_create', 'webhook_update', 'webhook_delete']],
  ['Hidden mail', ['label_spam_read', 'label_blocked_read', 'label_unauthenticated_read', 'label_trash_read']],
];

/** Each send policy with its short name (a table cell) and what it means (a form). */
export const SEND_POLICIES: [string, string][] = [
  ['approval', 'Ask me first — sends wait for you in Needs you'],
  ['direct', 'Send at once — sends go out without asking'],
  ['guarded', 'Guarded — sends go out at once unless the outbound guard holds them for you'],
  ['read_only', 'Cannot send'],
];
export const POLICY_NAMES: Record<string, string> = { approval: 'Ask me first', direct: 'Send at once', guarded: 'Guarded', read_only: 'Cannot send' };

const ALL_PERMISSIONS = PERMISSION_GROUPS.flatMap(([, perms]) => perms);
const READ = ['inbox_read', 'message_read', 'draft_read'];

/**
 * Permission presets for the common kinds of agent. "Reply only" answers mail and starts nothing:
 * no `message_send` (new mail, forwards) and no `draft_send` (a draft may go to anyone). A reply
 * may still name extra recipients, which the send policy governs like any send.
 */
export const PERMISSION_PRESETS: { id: string; name: string; what: string; permissions: string[]; policy?: string }[] = [
  { id: 'read', name: 'Read only', what: 'reads inboxes, mail and drafts; cannot send or change anything', permissions: READ, policy: 'read_only' },
  { id: 'reply', name: 'Reply only', what: 'reads mail, labels it and replies to it; cannot write new mail or forward', permissions: [...READ, 'message_update', 'message_reply'] },
  { id: 'full', name: 'Full access', what: 'everything an agent can do', permissions: ALL_PERMISSIONS },
];

/** The preset a permission set is, or null when it is a custom one. */
export function presetOf(granted: string[]): (typeof PERMISSION_PRESETS)[number] | null {
  const set = new Set(granted);
  return PERMISSION_PRESETS.find((p) => p.permissions.length === set.size && p.permissions.every((x) => set.has(x))) ?? null;
}

/** Permission checkboxes; `checked` is the initial set. */
export function PermissionChecklist({ checked, name = 'perm' }: { checked: Set<string>; name?: string }) {
  return (
    <fieldset>
      <legend>Permissions</legend>
      {PERMISSION_GROUPS.map(([group, perms]) => (
        <div key={group}>
          <div class="small muted">{group}</div>
          <div>
            {perms.map((p) => (
              <label class="check" key={p} title={p}>
                <input type="checkbox" name={name} value={p} defaultChecked={checked.has(p)} /> {PERMISSION_DESCRIPTIONS[p as Permission] ?? p}{' '}
                <code class="small muted">{p}</code>
              </label>
            ))}
          </div>
        </div>
      ))}
    </fieldset>
  );
}

export function checkedValues(form: HTMLFormElement, name: string): string[] {
  return Array.from(form.querySelectorAll<HTMLInputElement>(`input[name="${name}"]:checked`)).map((i) => i.value);
}

export function InboxChecklist({ inboxes, name = 'inbox', onChange }: { inboxes: Inbox[]; name?: string; onChange?: () => void }) {
  if (inboxes.length === 0) return <p class="muted">There are no inboxes yet.</p>;
  return (
    <fieldset onChange={onChange}>
      <legend>Inboxes</legend>
      {inboxes.map((i) => (
        <label class="check" key={i.inbox_id}>
          <input type="checkbox" name={name} value={i.inbox_id} /> {i.inbox_id}
        </label>
      ))}
    </fieldset>
  );
}

/** A key's or grant's permissions as a person reads them: the preset's name, or the custom list on demand. */
export function PermissionSummary({ permissions }: { permissions: Record<string, boolean | null | undefined> }) {
  const granted = Object.entries(permissions)
    .filter(([, on]) => on)
    .map(([p]) => p);
  const preset = presetOf(granted);
  if (preset) return <span title={granted.join(', ')}>{preset.name}</span>;
  if (granted.length === 0) return <span>nothing</span>;
  return (
    <details>
      <summary>Custom: {granted.length} permissions</summary>
      <span class="muted">{granted.join(', ')}</span>
    </details>
  );
}
