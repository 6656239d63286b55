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

export const SEND_POLICIES: [string, string][] = [
  ['approval', 'approval — sends wait for you in Approvals'],
  ['direct', 'direct — sends go out at once'],
  ['guarded', 'guarded — sends go out at once unless the outbound guard holds them for you'],
  ['read_only', 'read only — no sending'],
];

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
