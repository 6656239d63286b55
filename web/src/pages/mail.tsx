/** Managing inboxes: create, pause, resume, delete. Reading mail is the mail client (mail-client.tsx). */
import { del, enc, get, patch, post } from '../api';
import { ErrorBox, Loading, Page, confirmed, onSubmitWith, useAction, useLoad } from '../ui';
import type { CreateInboxBody, Inbox, UpdateInboxBody } from '../api-types';

export const inboxPath = (inboxId: string) => `/inboxes/${enc(inboxId)}`;

export function InboxesPage() {
  const inboxes = useLoad(() => get<{ inboxes: Inbox[] }>('/v0/inboxes?limit=100'), []);
  const action = useAction();
  const create = useAction();
  return (
    <Page title="Inboxes">
      <form
        class="card row"
        onSubmit={onSubmitWith(create, async (v, form) => {
          await post('/v0/inboxes', { username: v.username || undefined, domain: v.domain, display_name: v.display_name || undefined } satisfies CreateInboxBody);
          form.reset();
          inboxes.reload();
        })}
      >
        <label>
          Username
          <input name="username" placeholder="random when empty" />
        </label>
        <label>
          Domain
          <input name="domain" required placeholder="example.com" />
        </label>
        <label>
          Display name
          <input name="display_name" />
        </label>
        <button class="primary" disabled={create.busy}>
          Create inbox
        </button>
      </form>
      <ErrorBox error={create.error ?? action.error} />
      <Loading loaded={inboxes} />
      {inboxes.data && inboxes.data.inboxes.length === 0 && <p class="muted">No inboxes yet. Create one above.</p>}
      <ul class="items" data-testid="inboxes">
        {inboxes.data?.inboxes.map((i) => (
          <li key={i.inbox_id} data-inbox={i.inbox_id}>
            <div class="item-line" style={{ padding: '0.6rem 0.8rem', alignItems: 'center' }}>
              <a href={inboxPath(i.inbox_id)} class="who">
                {i.display_name ? `${i.display_name} <${i.inbox_id}>` : i.inbox_id}
              </a>
              <span class="actions">
                {i.status === 'paused' && <span class="badge warn">paused</span>}
                <button
                  class="small"
                  onClick={() =>
                    void action.run(async () => {
                      await patch(`/v0/inboxes/${enc(i.inbox_id)}`, { status: i.status === 'active' ? 'paused' : 'active' } satisfies UpdateInboxBody);
                      inboxes.reload();
                    })
                  }
                >
                  {i.status === 'active' ? 'Pause' : 'Resume'}
                </button>
                <button
                  class="small danger"
                  onClick={() =>
                    confirmed(`Delete ${i.inbox_id} and all its mail? This cannot be undone.`) &&
                    void action.run(async () => {
                      await del(`/v0/inboxes/${enc(i.inbox_id)}`);
                      inboxes.reload();
                    })
                  }
                >
                  Delete
                </button>
              </span>
            </div>
          </li>
        ))}
      </ul>
    </Page>
  );
}
