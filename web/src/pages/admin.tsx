/** Administration: API keys (secret shown once), webhooks with health, allow/block lists and rejections, domains. */
import { useState } from 'preact/hooks';
import { del, enc, get, getText, patch, post } from '../api';
import { ErrorBox, Loading, Page, confirmed, downloadText, formValues, onSubmitWith, useAction, useLoad, when } from '../ui';
import type { Inbox } from './mail';
import { EVENT_TYPES } from '../../../src/events/event-types';
import { PERMISSION_DESCRIPTIONS } from '../../../src/auth/permission-descriptions';
import type { Permission } from '../../../src/auth/permissions';

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

interface ApiKey {
  api_key_id: string;
  name: string | null;
  prefix: string;
  permissions: Record<string, boolean>;
  send_policy: string;
  inbox_ids: string[] | null;
  created_at: string;
  used_at: string | null;
  expires_at: string | null;
}

export function ApiKeysPage() {
  const keys = useLoad(() => get<{ api_keys: ApiKey[] }>('/v0/api-keys?limit=100'), []);
  const inboxes = useLoad(() => get<{ inboxes: Inbox[] }>('/v0/inboxes?limit=100'), []);
  const [secret, setSecret] = useState<string | null>(null);
  const action = useAction();
  return (
    <Page title="API keys">
      {secret && (
        <div class="secret" data-testid="new-secret">
          <strong>Copy the key now; it is not shown again.</strong>
          <div>
            <code>{secret}</code>
          </div>
          <div class="actions" style={{ marginTop: '0.4rem' }}>
            <button class="small" onClick={() => void navigator.clipboard?.writeText(secret)}>
              Copy
            </button>
            <button class="small" onClick={() => setSecret(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <details class="card">
        <summary>
          <strong>New API key</strong>
        </summary>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const form = e.currentTarget;
            const v = formValues(form);
            const scope = checkedValues(form, 'inbox');
            void action.run(async () => {
              const created = await post<{ api_key: string }>('/v0/api-keys', {
                name: v.name || undefined,
                permissions: checkedValues(form, 'perm'),
                send_policy: v.send_policy,
                ...(scope.length ? { inbox_ids: scope } : {}),
              });
              setSecret(created.api_key);
              form.reset();
              keys.reload();
            });
          }}
        >
          <label>
            Name
            <input name="name" placeholder="e.g. support agent" />
          </label>
          <p class="small muted">Inbox scope: tick none for every inbox.</p>
          <InboxChecklist inboxes={inboxes.data?.inboxes ?? []} />
          <PermissionChecklist checked={new Set(['inbox_read', 'message_read', 'draft_read', 'draft_create'])} />
          <label>
            Send policy
            <select name="send_policy" defaultValue="approval">
              {SEND_POLICIES.map(([v, label]) => (
                <option value={v} key={v}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          <button class="primary" disabled={action.busy}>
            Create key
          </button>
        </form>
      </details>
      <ErrorBox error={action.error} />
      <Loading loaded={keys} />
      <div class="table-wrap">
        <table class="list" data-testid="api-keys">
          <thead>
            <tr>
              <th>Name</th>
              <th>Scope</th>
              <th>Policy</th>
              <th class="wide">Permissions</th>
              <th class="wide">Last used</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {keys.data?.api_keys.map((k) => (
              <tr key={k.api_key_id} data-key={k.api_key_id}>
                <td>
                  {k.name ?? '—'}
                  <div class="small muted">
                    <code>{k.prefix}…</code>
                  </div>
                </td>
                <td>{k.inbox_ids ? k.inbox_ids.join(', ') : 'all inboxes'}</td>
                <td>
                  <select
                    aria-label="Send policy"
                    value={k.send_policy}
                    onChange={(e) => {
                      const send_policy = e.currentTarget.value;
                      void action.run(async () => {
                        await patch(`/v0/api-keys/${enc(k.api_key_id)}`, { send_policy });
                        keys.reload();
                      });
                    }}
                  >
                    {SEND_POLICIES.map(([v]) => (
                      <option key={v}>{v}</option>
                    ))}
                  </select>
                </td>
                <td class="wide small">
                  {Object.entries(k.permissions)
                    .filter(([, on]) => on)
                    .map(([p]) => p)
                    .join(', ')}
                </td>
                <td class="wide">{when(k.used_at)}</td>
                <td>
                  <button
                    class="small danger"
                    onClick={() =>
                      confirmed(`Revoke ${k.name ?? k.prefix}? Agents using it stop working at once.`) &&
                      void action.run(async () => {
                        await del(`/v0/api-keys/${enc(k.api_key_id)}`);
                        keys.reload();
                      })
                    }
                  >
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Page>
  );
}

interface Webhook {
  webhook_id: string;
  url: string;
  event_types: string[];
  inbox_id: string | null;
  inbox_ids: string[] | null;
  enabled: boolean;
  failure_count?: number;
  dropped_count?: number;
  disabled_reason?: string | null;
  last_error_code?: string | null;
  last_success_at?: string | null;
}



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
            const created = await post<{ secret: string }>('/v0/webhooks', { url: v.url, event_types: checkedValues(form, 'event') });
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
                      await patch(`/v0/webhooks/${enc(w.webhook_id)}`, { enabled: !w.enabled });
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

interface Entry {
  entry: string;
  reason?: string | null;
  created_at?: string;
}
interface Rejection {
  rejection_id: string;
  inbox_id: string | null;
  [field: string]: unknown;
}

export function ListsPage() {
  const [direction, setDirection] = useState('receive');
  const [type, setType] = useState('block');
  const [inbox, setInbox] = useState('');
  const inboxes = useLoad(() => get<{ inboxes: Inbox[] }>('/v0/inboxes?limit=100'), []);
  const base = `${inbox ? `/v0/inboxes/${enc(inbox)}` : '/v0'}/lists/${direction}/${type}`;
  const entries = useLoad(() => get<{ entries: Entry[] }>(`${base}?limit=100`), [base]);
  const rejections = useLoad(() => get<{ rejections: Rejection[] }>(`/v0/owner/lists/rejections?limit=50${inbox ? `&inbox_id=${enc(inbox)}` : ''}`), [inbox]);
  const action = useAction();
  return (
    <Page title="Allow and block lists">
      <div class="card row">
        <label>
          List of
          <select value={inbox} onChange={(e) => setInbox(e.currentTarget.value)}>
            <option value="">all inboxes (global)</option>
            {inboxes.data?.inboxes.map((i) => (
              <option key={i.inbox_id}>{i.inbox_id}</option>
            ))}
          </select>
        </label>
        <label>
          Direction
          <select value={direction} onChange={(e) => setDirection(e.currentTarget.value)}>
            <option>receive</option>
            <option>send</option>
            <option>reply</option>
          </select>
        </label>
        <label>
          Type
          <select value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option>block</option>
            <option>allow</option>
          </select>
        </label>
      </div>
      <form
        class="row"
        onSubmit={onSubmitWith(action, async (v, form) => {
          await post(base, { entry: v.entry, ...(v.reason ? { reason: v.reason } : {}) });
          form.reset();
          entries.reload();
        })}
      >
        <input name="entry" required aria-label="Address or domain" placeholder="address or domain" />
        <input name="reason" aria-label="Reason" placeholder="reason (optional)" />
        <button class="primary">Add</button>
      </form>
      <ErrorBox error={action.error ?? entries.error} />
      <ul class="items" data-testid="entries" style={{ marginTop: '0.6rem' }}>
        {entries.data?.entries.map((x) => (
          <li key={x.entry} class="item-line" style={{ padding: '0.5rem 0.8rem' }}>
            <span>
              <code>{x.entry}</code> {x.reason && <span class="muted small">— {x.reason}</span>}
            </span>
            <button
              class="small danger"
              onClick={() =>
                void action.run(async () => {
                  await del(`${base}/${enc(x.entry)}`);
                  entries.reload();
                })
              }
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      {entries.data?.entries.length === 0 && <p class="muted">This list is empty.</p>}
      <h2>Rejected inbound mail</h2>
      <p class="muted small">Mail refused by a receive block list: metadata only, the mail itself was not kept.</p>
      <Loading loaded={rejections} />
      <ul class="items" data-testid="rejections">
        {rejections.data?.rejections.map((r) => (
          <li key={r.rejection_id} class="item-line" style={{ padding: '0.5rem 0.8rem' }}>
            <span class="small">
              {Object.entries(r)
                .filter(([k, v]) => k !== 'rejection_id' && v !== null && typeof v !== 'object')
                .map(([k, v]) => `${k}: ${String(v)}`)
                .join(' · ')}
            </span>
            <button
              class="small danger"
              onClick={() =>
                void action.run(async () => {
                  await del(`/v0/owner/lists/rejections/${enc(r.rejection_id)}`);
                  rejections.reload();
                })
              }
            >
              Delete
            </button>
          </li>
        ))}
      </ul>
      {rejections.data?.rejections.length === 0 && <p class="muted">No rejections.</p>}
    </Page>
  );
}

interface DomainItem {
  domain_id: string;
  domain: string;
  status: string;
  reason: string | null;
}
interface DomainRecord {
  type: string;
  name: string;
  value: string;
  status: string;
  [k: string]: unknown;
}
interface DomainFull extends DomainItem {
  records: DomainRecord[];
  selftest?: { status: string };
}
interface Plan {
  domain: string;
  steps: unknown[];
  records: DomainRecord[];
  warnings: unknown[];
}

function DomainDetail({ id, onChanged }: { id: string; onChanged: () => void }) {
  const d = useLoad(() => get<DomainFull>(`/v0/domains/${enc(id)}`), [id]);
  const [plan, setPlan] = useState<Plan | null>(null);
  const action = useAction();
  const base = `/v0/domains/${enc(id)}`;
  const step = (what: string) =>
    action.run(async () => {
      await post(`${base}/${what}`);
      d.reload();
      onChanged();
    });
  return (
    <div>
      <Loading loaded={d} />
      <ErrorBox error={action.error} />
      <div class="actions">
        <button class="small" onClick={() => void action.run(async () => setPlan(await get<Plan>(`${base}/plan`)))}>
          Show plan
        </button>
        <button
          class="small"
          onClick={() =>
            void action.run(async () => {
              downloadText(`${d.data?.domain ?? 'domain'}.zone`, await getText(`${base}/zone-file`));
            })
          }
        >
          Download zone file
        </button>
        <button class="small primary" onClick={() => void step('apply')}>
          Apply
        </button>
        <button class="small" onClick={() => void step('verify')}>
          Verify
        </button>
        <button class="small danger" onClick={() => confirmed('Tear down everything provisioned for this domain?') && void step('teardown')}>
          Teardown
        </button>
        <button
          class="small danger"
          onClick={() =>
            confirmed('Delete this domain? Only possible after teardown.') &&
            void action.run(async () => {
              await del(base);
              onChanged();
            })
          }
        >
          Delete
        </button>
      </div>
      {d.data && (
        <div class="table-wrap" style={{ marginTop: '0.5rem' }}>
          <table class="list">
            <thead>
              <tr>
                <th>Type</th>
                <th>Name</th>
                <th>Value</th>
                <th>Status</th>
              </tr>
            </thead>
            <tbody>
              {d.data.records.map((r, i) => (
                <tr key={i}>
                  <td>{r.type}</td>
                  <td>
                    <code>{r.name}</code>
                  </td>
                  <td>
                    <code>{r.value}</code>
                  </td>
                  <td>
                    <span class={`badge ${r.status === 'valid' ? 'good' : r.status === 'invalid' ? 'bad' : 'warn'}`}>{r.status}</span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {plan && (
        <div class="card small" data-testid="plan">
          <strong>Plan</strong>
          <ol>
            {plan.steps.map((s, i) => (
              <li key={i}>{typeof s === 'string' ? s : JSON.stringify(s)}</li>
            ))}
          </ol>
          {plan.warnings.length > 0 && (
            <div class="error">
              {plan.warnings.map((w, i) => (
                <div key={i}>{typeof w === 'string' ? w : JSON.stringify(w)}</div>
              ))}
            </div>
          )}
        </div>
      )}
    </div>
  );
}

export function DomainsPage() {
  const domains = useLoad(() => get<{ domains: DomainItem[] }>('/v0/domains?limit=100'), []);
  const [open, setOpen] = useState<string | null>(null);
  const action = useAction();
  return (
    <Page title="Domains">
      <form
        class="card row"
        onSubmit={onSubmitWith(action, async (v, form) => {
          const created = await post<DomainItem>('/v0/domains', { domain: v.domain });
          form.reset();
          domains.reload();
          setOpen(created.domain_id);
        })}
      >
        <label>
          Domain
          <input name="domain" required placeholder="mail.example.com" />
        </label>
        <button class="primary">Register domain</button>
      </form>
      <ErrorBox error={action.error} />
      <Loading loaded={domains} />
      <ul class="items" data-testid="domains">
        {domains.data?.domains.map((d) => (
          <li key={d.domain_id} data-domain={d.domain} style={{ padding: '0.6rem 0.8rem' }}>
            <div class="item-line">
              <button class="small" onClick={() => setOpen(open === d.domain_id ? null : d.domain_id)} aria-expanded={open === d.domain_id}>
                {d.domain}
              </button>
              <span class={`badge ${d.status === 'verified' ? 'good' : d.status === 'failed' ? 'bad' : 'warn'}`}>{d.status}</span>
            </div>
            {d.reason && <div class="small muted">{d.reason}</div>}
            {open === d.domain_id && <DomainDetail id={d.domain_id} onChanged={domains.reload} />}
          </li>
        ))}
      </ul>
    </Page>
  );
}
