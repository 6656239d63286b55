/** Webhooks page: create (the signing secret is shown once), health per webhook, enable/disable, delete. */
import { useState } from 'preact/hooks';
import { del, enc, get, patch, post } from '../api';
import { ErrorBox, Loading, Page, confirmed, onSubmitWith, useAction, useLoad, when } from '../ui';
import { checkedValues } from '../widgets';
import type { CreateWebhookBody, UpdateWebhookBody, Webhook } from '../api-types';
import { EVENT_TYPES } from '../../../src/events/event-types';

/** The list answer lacks health fields; each webhook's own read has them (spec §2.8). */
async function webhooksWithHealth(): Promise<Webhook[]> {
  const list = await get<{ webhooks: Webhook[] }>('/v0/webhooks?limit=100');
  return Promise.all(list.webhooks.map((w) => get<Webhook>(`/v0/webhooks/${enc(w.webhook_id)}`)));
}

export function WebhooksPage() {
  const hooks = useLoad(webhooksWithHealth, []);
  const [secret, setSecret] = useState<string | null>(null);
  const action = useAction();
  return (
    <Page title="Webhooks">
      {secret && (
        <div class="secret" data-testid="new-secret">
          <strong>Signing secret (shown once):</strong> <code>{secret}</code>{' '}
          <button class="small" onClick={() => setSecret(null)}>
            Done
          </button>
        </div>
      )}
      <details class="card">
        <summary>
          <strong>New webhook</strong>
        </summary>
        <form
          onSubmit={onSubmitWith(action, async (v, form) => {
            const created = await post<{ secret: string }>('/v0/webhooks', { url: v.url, event_types: checkedValues(form, 'event') } satisfies CreateWebhookBody);
            setSecret(created.secret);
            form.reset();
            hooks.reload();
          })}
        >
          <label>
            URL
            <input name="url" type="url" required placeholder="https://example.com/hooks/svc" />
          </label>
          <fieldset>
            <legend>Events</legend>
            <div class="row" style={{ gap: '0 1rem' }}>
              {EVENT_TYPES.map((e) => (
                <label class="check" key={e} style={{ flex: '0 0 auto' }}>
                  <input type="checkbox" name="event" value={e} defaultChecked={e === 'message.received'} /> {e}
                </label>
              ))}
            </div>
          </fieldset>
          <button class="primary">Create webhook</button>
        </form>
      </details>
      <ErrorBox error={action.error} />
      <Loading loaded={hooks} />
      <ul class="items" data-testid="webhooks">
        {hooks.data?.map((w) => {
          const health = !w.enabled ? 'disabled' : (w.failure_count ?? 0) > 0 ? 'failing' : w.last_success_at ? 'healthy' : 'no deliveries yet';
          return (
            <li key={w.webhook_id} data-webhook={w.webhook_id} style={{ padding: '0.6rem 0.8rem' }}>
              <div class="item-line">
                <code>{w.url}</code>
                <span class={`badge ${health === 'healthy' ? 'good' : health === 'failing' ? 'bad' : 'warn'}`}>{health}</span>
              </div>
              <div class="small muted">
                {w.event_types.join(', ')} · {w.inbox_id ?? (w.inbox_ids ? w.inbox_ids.join(', ') : 'all inboxes')}
              </div>
              <div class="small">
                failures {w.failure_count ?? 0} · dropped {w.dropped_count ?? 0} · last success {when(w.last_success_at)}
                {w.last_error_code && ` · last error ${w.last_error_code}`}
                {w.disabled_reason && ` · disabled: ${w.disabled_reason}`}
              </div>
              <div class="actions" style={{ marginTop: '0.4rem' }}>
                <button
                  class="small"
                  onClick={() =>
                    void action.run(async () => {
                      await patch(`/v0/webhooks/${enc(w.webhook_id)}`, { enabled: !w.enabled } satisfies UpdateWebhookBody);
                      hooks.reload();
                    })
                  }
                >
                  {w.enabled ? 'Disable' : 'Enable'}
                </button>
                <button
                  class="small danger"
                  onClick={() =>
                    confirmed('Delete this webhook?') &&
                    void action.run(async () => {
                      await del(`/v0/webhooks/${enc(w.webhook_id)}`);
                      hooks.reload();
                    })
                  }
                >
                  Delete
                </button>
              </div>
            </li>
          );
        })}
      </ul>
    </Page>
  );
}
