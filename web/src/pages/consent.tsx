/**
 * The OAuth consent screen (spec §5.3 step 4). The client's name and redirect host are what it
 * declared at registration, so both are marked unverified. Defaults: full agent permissions, send
 * policy `approval`, no inbox; Approve stays disabled until the owner picks at least one inbox.
 */
import { useState } from 'preact/hooks';
import { enc, get, post } from '../api';
import { ErrorBox, Loading, Page, formValues, useAction, useLoad, when } from '../ui';
import { checkedValues, InboxChecklist, PermissionChecklist, SEND_POLICIES } from '../widgets';
import type { ConsentRequest, Inbox } from '../api-types';

function permissionNames(p: Record<string, boolean> | string[]): Set<string> {
  return new Set(Array.isArray(p) ? p : Object.entries(p).filter(([, on]) => on).map(([name]) => name));
}

export function ConsentPage({ requestId }: { requestId: string }) {
  const req = useLoad(() => get<ConsentRequest>(`/v0/owner/oauth/requests/${enc(requestId)}`), [requestId]);
  const inboxes = useLoad(() => get<{ inboxes: Inbox[] }>('/v0/inboxes?limit=100'), []);
  const [chosen, setChosen] = useState(0);
  const action = useAction();
  const r = req.data;
  const finish = (path: string, body: unknown) =>
    action.run(async () => {
      const answer = await post<{ redirect_to: string }>(path, body);
      window.location.assign(answer.redirect_to);
    });

  return (
    <Page title="Allow access?">
      <Loading loaded={req} />
      {r && (
        <form
          class="card"
          data-testid="consent"
          onSubmit={(e) => {
            e.preventDefault();
            const form = e.currentTarget;
            const v = formValues(form);
            void finish(`/v0/owner/oauth/requests/${enc(r.request_id)}/approve`, {
              inbox_ids: checkedValues(form, 'inbox'),
              permissions: checkedValues(form, 'perm'),
              send_policy: v.send_policy,
            });
          }}
        >
          <p>
            <strong data-testid="client-name">{r.client_name || '(no name)'}</strong> <span class="badge warn">unverified</span> wants to use your mail through{' '}
            <code>{r.resource}</code>.
          </p>
          <p class="small">
            After you answer, your browser goes to <code data-testid="redirect-host">{r.redirect_host}</code> <span class="badge warn">unverified</span>. The
            name and address are what the app says about itself; only continue if you started this from an app you trust.
          </p>
          <p class="small muted">This request expires {when(r.expires_at)}.</p>
          <p class="small">Choose the inboxes it may use (at least one):</p>
          <Loading loaded={inboxes} />
          <InboxChecklist inboxes={inboxes.data?.inboxes ?? []} onChange={() => setChosen(document.querySelectorAll('[data-testid="consent"] input[name="inbox"]:checked').length)} />
          <PermissionChecklist checked={permissionNames(r.defaults.permissions)} />
          <label>
            Send policy
            <select name="send_policy" defaultValue={r.defaults.send_policy}>
              {SEND_POLICIES.map(([value, label]) => (
                <option value={value} key={value}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          <ErrorBox error={action.error} />
          <div class="actions">
            <button class="primary" disabled={chosen === 0 || action.busy}>
              Approve
            </button>
            <button type="button" class="danger" disabled={action.busy} onClick={() => void finish(`/v0/owner/oauth/requests/${enc(r.request_id)}/deny`, {})}>
              Deny
            </button>
          </div>
        </form>
      )}
    </Page>
  );
}
