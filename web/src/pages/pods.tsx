/**
 * Pods page (docs/pods.md): the home's tenants, each with its inboxes. The owner creates a pod,
 * sees what it holds, and deletes an empty one (svc refuses while it still owns inboxes or
 * domains, and the refusal says so).
 */
import { del, enc, get, post } from '../api';
import { ErrorBox, Loading, Page, confirmed, onSubmitWith, useAction, useLoad, when } from '../ui';
import type { Inbox, Pod } from '../api-types';

/** Pods listed at most on this page: a home has a handful; more are a page of the API away. */
const POD_PAGE = 100;

export function PodsPage() {
  const pods = useLoad(() => get<{ pods: Pod[] }>(`/v0/pods?limit=${POD_PAGE}`), []);
  const inboxes = useLoad(() => get<{ inboxes: Inbox[] }>('/v0/inboxes?limit=100'), []);
  const action = useAction();
  const inboxesOf = (podId: string) => inboxes.data?.inboxes.filter((i) => i.pod_id === podId) ?? [];
  return (
    <Page title="Pods">
      <p class="muted">
        A pod keeps one customer's mail apart from another's: its inboxes, domains, webhooks, lists and API keys. A key made in a pod sees
        only that pod. Keys made on the API keys page belong to the whole home.
      </p>
      <form
        class="row card"
        onSubmit={onSubmitWith(action, async (v, form) => {
          await post('/v0/pods', { ...(v.name ? { name: v.name } : {}), ...(v.client_id ? { client_id: v.client_id } : {}) });
          form.reset();
          pods.reload();
        })}
      >
        <label>
          Name
          <input name="name" placeholder="acme" />
        </label>
        <label>
          Your reference (optional)
          <input name="client_id" placeholder="customer-42" />
        </label>
        <button class="primary">Create pod</button>
      </form>
      <ErrorBox error={action.error ?? pods.error} />
      <Loading loaded={pods} />
      <table class="list" data-testid="pods">
        <thead>
          <tr>
            <th scope="col">Pod</th>
            <th scope="col">Inboxes</th>
            <th scope="col">Created</th>
            <th>
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {pods.data?.pods.map((p) => (
            <tr key={p.pod_id}>
              <td>
                <strong>{p.name}</strong>
                <div class="muted small">
                  <code>{p.pod_id}</code>
                  {p.client_id && <> · {p.client_id}</>}
                </div>
              </td>
              <td>
                {inboxesOf(p.pod_id).length === 0 ? (
                  <span class="muted">none</span>
                ) : (
                  inboxesOf(p.pod_id).map((i) => (
                    <div key={i.inbox_id}>
                      <a href={`/inboxes/${enc(i.inbox_id)}`}>{i.inbox_id}</a>
                    </div>
                  ))
                )}
              </td>
              <td class="small">{when(p.created_at)}</td>
              <td>
                <button
                  class="small danger"
                  aria-label={`Delete pod ${p.name}`}
                  onClick={() =>
                    confirmed(`Delete the pod ${p.name}? Its API keys stop working, and its webhooks and list entries are deleted.`) &&
                    void action.run(async () => {
                      await del(`/v0/pods/${enc(p.pod_id)}`);
                      pods.reload();
                    })
                  }
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Page>
  );
}
