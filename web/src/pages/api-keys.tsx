/**
 * API keys page: create with a permission preset or a custom set (the secret is shown once),
 * change send policy, revoke; and the Outbound guard page of the `guarded` policy.
 */
import { useState } from 'preact/hooks';
import { del, enc, get, patch, post } from '../api';
import { CopyButton, ErrorBox, Loading, Page, confirmed, formValues, useAction, useLoad, when } from '../ui';
import { checkedValues, InboxChecklist, PERMISSION_PRESETS, PermissionChecklist, PermissionSummary, POLICY_NAMES, presetOf, SEND_POLICIES } from '../widgets';
import type { ApiKey, CreateApiKeyBody, Inbox, UpdateApiKeyBody } from '../api-types';
import type { GuardSettingsView } from '../../../src/mail/guard';

const DEFAULT_PRESET = 'reply';

/** Ticks the preset's permissions (and its send policy, if it has one) in the new-key form. */
function applyPreset(form: HTMLFormElement, id: string): void {
  const preset = PERMISSION_PRESETS.find((p) => p.id === id);
  if (!preset) return;
  const wanted = new Set(preset.permissions);
  form.querySelectorAll<HTMLInputElement>('input[name="perm"]').forEach((box) => (box.checked = wanted.has(box.value)));
  if (preset.policy) form.querySelector<HTMLSelectElement>('select[name="send_policy"]')!.value = preset.policy;
}

/** After a permission is ticked by hand: the preset it now matches, or Custom. */
function followPermissions(form: HTMLFormElement): void {
  const id = presetOf(checkedValues(form, 'perm'))?.id ?? 'custom';
  const radio = form.querySelector<HTMLInputElement>(`input[name="preset"][value="${id}"]`);
  if (radio) radio.checked = true;
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
            <CopyButton text={secret} />
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
                // The select offers only SEND_POLICIES; the service validates it anyway.
                send_policy: v.send_policy as CreateApiKeyBody['send_policy'],
                ...(scope.length ? { inbox_ids: scope } : {}),
              } satisfies CreateApiKeyBody);
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
          <fieldset data-testid="presets">
            <legend>What the agent may do</legend>
            {PERMISSION_PRESETS.map((p) => (
              <label class="check" key={p.id}>
                <input type="radio" name="preset" value={p.id} defaultChecked={p.id === DEFAULT_PRESET} onChange={(e) => applyPreset(e.currentTarget.form!, p.id)} />
                <span>
                  <strong>{p.name}</strong> <span class="muted small">— {p.what}</span>
                </span>
              </label>
            ))}
            <label class="check">
              <input type="radio" name="preset" value="custom" onChange={(e) => ((e.currentTarget.form!.querySelector('details.perms') as HTMLDetailsElement).open = true)} />
              <span>
                <strong>Custom</strong> <span class="muted small">— pick permissions one by one</span>
              </span>
            </label>
          </fieldset>
          <details class="perms" onChange={(e) => followPermissions((e.currentTarget as HTMLElement).closest('form')!)}>
            <summary class="small">Permissions one by one</summary>
            <PermissionChecklist checked={new Set(PERMISSION_PRESETS.find((p) => p.id === DEFAULT_PRESET)!.permissions)} />
          </details>
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
              <th>
                <span class="visually-hidden">Actions</span>
              </th>
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
                    class="policy"
                    aria-label="Send policy"
                    value={k.send_policy}
                    onChange={(e) => {
                      const send_policy = e.currentTarget.value as UpdateApiKeyBody['send_policy'];
                      void action.run(async () => {
                        await patch(`/v0/api-keys/${enc(k.api_key_id)}`, { send_policy } satisfies UpdateApiKeyBody);
                        keys.reload();
                      });
                    }}
                  >
                    {SEND_POLICIES.map(([v]) => (
                      <option key={v} value={v}>
                        {POLICY_NAMES[v]}
                      </option>
                    ))}
                  </select>
                </td>
                <td class="wide small" data-testid="key-permissions">
                  <PermissionSummary permissions={k.permissions} />
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
      <p class="small muted">
        Keys with the Guarded policy are checked by the <a href="/guard">outbound guard</a>.
      </p>
    </Page>
  );
}

/**
 * The outbound guard of the `guarded` send policy (docs/guarded.md): which checks hold a send for
 * the owner, the first-contact limits, and the owner's own secrets, shown by their last 4 characters.
 */
export function GuardPage() {
  return (
    <Page title="Outbound guard">
      <GuardSettings />
    </Page>
  );
}

function GuardSettings() {
  const guard = useLoad(() => get<GuardSettingsView>('/v0/owner/guard'), []);
  const action = useAction();
  const change = (body: unknown) =>
    action.run(async () => {
      guard.set(await patch<GuardSettingsView>('/v0/owner/guard', body));
    });
  const g = guard.data;
  return (
    <section data-testid="guard-settings">
      <p class="muted">
        Keys and apps with the Guarded send policy send at once, unless one of these checks finds something in the message; then it waits for you in <a href="/needs-you#held">Needs you</a> with the reasons.
      </p>
      <ErrorBox error={action.error} />
      <Loading loaded={guard} />
      {g && (
        <div class="card">
          <fieldset>
            <legend>Checks</legend>
            {g.checks.map((c) => (
              <label class="check" key={c.name}>
                <input type="checkbox" name={`guard-${c.name}`} checked={c.enabled} disabled={action.busy} onChange={(e) => void change({ checks: { [c.name]: e.currentTarget.checked } })} /> {c.description}{' '}
                <code class="small muted">{c.name}</code>
              </label>
            ))}
          </fieldset>
          <form
            class="row"
            onSubmit={(e) => {
              e.preventDefault();
              const v = formValues(e.currentTarget);
              void change({ new_recipients: { per_message: Number(v.per_message), per_day: Number(v.per_day) } });
            }}
          >
            <label>
              First contacts per message
              <input name="per_message" type="number" min={0} max={100000} required defaultValue={String(g.new_recipients.per_message)} key={`m${g.new_recipients.per_message}`} />
            </label>
            <label>
              First contacts per 24 hours
              <input name="per_day" type="number" min={0} max={100000} required defaultValue={String(g.new_recipients.per_day)} key={`d${g.new_recipients.per_day}`} />
            </label>
            <button disabled={action.busy}>Save limits</button>
          </form>
          <h2>Your secrets</h2>
          <p class="small muted">Strings that must never leave in mail (passwords, account numbers). They are kept in the encrypted database and shown only by their last 4 characters.</p>
          <ul class="plain" data-testid="guard-secrets">
            {g.secrets.map((x) => (
              <li key={x.secret_id}>
                <code>{x.hint}</code> <span class="small muted">added {when(x.created_at)}</span>{' '}
                <button class="small danger" disabled={action.busy} onClick={() => void change({ remove_secrets: [x.secret_id] })}>
                  Remove
                </button>
              </li>
            ))}
          </ul>
          <form
            class="row"
            onSubmit={(e) => {
              e.preventDefault();
              const form = e.currentTarget;
              const v = formValues(form);
              void change({ add_secrets: [v.secret] }).then((ok) => ok && form.reset());
            }}
          >
            <input name="secret" type="password" autocomplete="off" minLength={16} maxLength={256} required aria-label="Secret to guard" placeholder="a secret of 16 characters or more" />
            <button disabled={action.busy}>Add secret</button>
          </form>
        </div>
      )}
    </section>
  );
}
