/** Domains page: register, then per domain its records, plan, zone file, apply, verify, teardown and delete. */
import { useState } from 'preact/hooks';
import { del, enc, get, getText, post } from '../api';
import { ErrorBox, Loading, Page, confirmed, downloadText, onSubmitWith, useAction, useLoad } from '../ui';
import type { Domain, DomainItem, DomainPlan } from '../api-types';

function DomainDetail({ id, onChanged }: { id: string; onChanged: () => void }) {
  const d = useLoad(() => get<Domain>(`/v0/domains/${enc(id)}`), [id]);
  const [plan, setPlan] = useState<DomainPlan | null>(null);
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
        <button class="small" onClick={() => void action.run(async () => setPlan(await get<DomainPlan>(`${base}/plan`)))}>
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
