/**
 * Domains page: register, then per domain its records, plan, zone file, apply, verify, teardown and
 * delete; and the DNS provider apply publishes the records through (docs/dns-providers.md).
 */
import { useState } from 'preact/hooks';
import { del, enc, get, getText, post, put } from '../api';
import { CopyButton, ErrorBox, Loading, Page, confirmed, downloadText, onSubmitWith, useAction, useLoad } from '../ui';
import type { DnsProviderView, Domain, DomainItem, DomainPlan } from '../api-types';

const zonesOf = (text: string | undefined) => (text ?? '').split(/[\s,]+/).filter(Boolean);

type Kind = 'rfc2136' | 'powerdns' | 'cloudflare';

/** The DNS provider: what is configured (secrets only as "set"), and forms to set or remove it. */
function DnsProviderCard() {
  const p = useLoad(() => get<DnsProviderView>('/v0/owner/dns-provider'), []);
  const action = useAction();
  const [kind, setKind] = useState<Kind>('rfc2136');
  const v = p.data?.provider;
  const save = async (body: unknown) => p.set(await put<DnsProviderView>('/v0/owner/dns-provider', body));
  return (
    <details class="card" data-testid="dns-provider">
      <summary>
        DNS provider:{' '}
        {!v ? <span class="badge warn">none: create the records by hand</span> : v.kind === 'rfc2136' ? <code>{`RFC 2136 ${v.server}:${v.port}, key ${v.key_name}`}</code> : v.kind === 'powerdns' ? <code>{`PowerDNS ${v.url}`}</code> : <code>{`Cloudflare ${v.zone_id ? `zone ${v.zone_id}` : '(zone looked up by name)'}`}</code>}
      </summary>
      <Loading loaded={p} />
      <ErrorBox error={action.error} />
      <p class="small muted">With a provider, Apply publishes the domain's records itself and Teardown removes exactly those. Secrets are write-only; leave them empty to keep the stored one.</p>
      <label>
        Kind
        <select value={kind} onChange={(e) => setKind((e.currentTarget as HTMLSelectElement).value as Kind)}>
          <option value="rfc2136">RFC 2136 + TSIG (BIND, Knot, …)</option>
          <option value="powerdns">PowerDNS HTTP API</option>
          <option value="cloudflare">Cloudflare DNS</option>
        </select>
      </label>
      <form
        class="narrow"
        onSubmit={onSubmitWith(action, async (f, form) => {
          const common = { zones: zonesOf(f.zones), ...(f.ttl ? { ttl: Number(f.ttl) } : {}) };
          await save(
            kind === 'rfc2136'
              ? { kind, server: f.server, ...(f.port ? { port: Number(f.port) } : {}), key_name: f.key_name, algorithm: f.algorithm, ...(f.secret ? { secret: f.secret } : {}), ...common }
              : kind === 'powerdns'
                ? { kind, url: f.url, ...(f.server_id ? { server_id: f.server_id } : {}), ...(f.api_key ? { api_key: f.api_key } : {}), ...common }
                : { kind, ...(f.api_token ? { api_token: f.api_token } : {}), ...(f.zone_id ? { zone_id: f.zone_id } : {}), ...(v?.kind === 'cloudflare' ? { api_base: v.api_base } : {}), ...common },
          );
          // Write-only: once stored, the secret leaves the page too.
          form.querySelectorAll<HTMLInputElement>('input[type=password]').forEach((i) => (i.value = ''));
        })}
      >
        {kind === 'rfc2136' ? (
          <>
            <label>
              Server <input name="server" required defaultValue={v?.kind === 'rfc2136' ? v.server : ''} placeholder="10.0.0.53" />
            </label>
            <label>
              Port <input name="port" type="number" defaultValue={v?.kind === 'rfc2136' ? String(v.port) : '53'} />
            </label>
            <label>
              Key name <input name="key_name" required defaultValue={v?.kind === 'rfc2136' ? v.key_name : ''} placeholder="svc-update" />
            </label>
            <label>
              Algorithm
              <select name="algorithm" defaultValue={v?.kind === 'rfc2136' ? v.algorithm : 'hmac-sha256'}>
                <option value="hmac-sha256">hmac-sha256</option>
                <option value="hmac-sha512">hmac-sha512</option>
              </select>
            </label>
            <label>
              TSIG secret, base64 (write-only{v?.kind === 'rfc2136' && v.secret_set ? ', set' : ''})
              <input name="secret" type="password" autocomplete="off" />
            </label>
          </>
        ) : kind === 'cloudflare' ? (
          <>
            <label>
              API token with Zone:DNS:Edit (write-only{v?.kind === 'cloudflare' && v.api_token_set ? ', set' : ''})
              <input name="api_token" type="password" autocomplete="off" />
            </label>
            <label>
              Zone ID (optional: without it the zone is looked up by name, which needs Zone:Read) <input name="zone_id" defaultValue={v?.kind === 'cloudflare' ? v.zone_id ?? '' : ''} placeholder="023e105f4ecef8ad9ca31a8372d0c353" />
            </label>
          </>
        ) : (
          <>
            <label>
              API URL <input name="url" required defaultValue={v?.kind === 'powerdns' ? v.url : ''} placeholder="http://127.0.0.1:8081" />
            </label>
            <label>
              Server id <input name="server_id" defaultValue={v?.kind === 'powerdns' ? v.server_id : 'localhost'} />
            </label>
            <label>
              API key (write-only{v?.kind === 'powerdns' && v.api_key_set ? ', set' : ''})
              <input name="api_key" type="password" autocomplete="off" />
            </label>
          </>
        )}
        <label>
          Zones (optional, comma-separated) <input name="zones" defaultValue={v?.zones.join(', ') ?? ''} placeholder="example.com" />
        </label>
        <label>
          TTL <input name="ttl" type="number" defaultValue={v ? String(v.ttl) : '3600'} />
        </label>
        <button class="primary">Save provider</button>
        {v && (
          <button type="button" class="small danger" onClick={() => confirmed('Remove the DNS provider? Records svc already published stay until teardown.') && void action.run(async () => { await del('/v0/owner/dns-provider'); p.reload(); })}>
            Remove provider
          </button>
        )}
      </form>
    </details>
  );
}

function DomainDetail({ id, onChanged }: { id: string; onChanged: () => void }) {
  const d = useLoad(() => get<Domain>(`/v0/domains/${enc(id)}`), [id]);
  const [plan, setPlan] = useState<DomainPlan | null>(null);
  // The plan's warnings (no transport, an edge only on loopback, …) are shown with the records, as `svc domains plan` prints them.
  const warnings = useLoad(() => get<DomainPlan>(`/v0/domains/${enc(id)}/plan`).then((p) => p.warnings), [id]);
  const action = useAction();
  const base = `/v0/domains/${enc(id)}`;
  const step = (what: string) =>
    action.run(async () => {
      await post(`${base}/${what}`);
      d.reload();
      warnings.reload();
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
      {(warnings.data ?? []).length > 0 && (
        <div class="warning" role="note" data-testid="domain-warnings">
          <strong>Before you rely on these records:</strong>
          <ul>
            {warnings.data!.map((w, i) => (
              <li key={i}>{w}</li>
            ))}
          </ul>
        </div>
      )}
      {d.data && (
        <div class="table-wrap" style={{ marginTop: '0.5rem' }}>
          <table class="list records" data-testid="records">
            <thead>
              <tr>
                <th>Type</th>
                <th>Name</th>
                <th>Priority</th>
                <th>Value</th>
                <th>Status</th>
              </tr>
            </thead>
            <tbody>
              {[...d.data.records, ...d.data.extra_records].map((r, i) => (
                <tr key={i} data-record={r.type}>
                  <td>{r.type}</td>
                  <td class="record-name">
                    <code>{r.name}</code> <CopyButton text={r.name} what={`${r.type} name`} />
                  </td>
                  <td data-testid="priority">{r.priority ?? ''}</td>
                  <td>
                    <code>{r.value}</code> <CopyButton text={r.value} what={`${r.type} value`} />
                  </td>
                  <td>
                    <span class={`badge ${r.state === 'valid' ? 'good' : r.state === 'invalid' ? 'bad' : 'warn'}`}>{r.state}</span>
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

/** `openId`: the domain shown open, from its setup link (`/domains/<domain_id>`). */
export function DomainsPage({ openId }: { openId?: string } = {}) {
  const domains = useLoad(() => get<{ domains: DomainItem[] }>('/v0/domains?limit=100'), []);
  const [open, setOpen] = useState<string | null>(openId ?? null);
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
      <DnsProviderCard />
      <Loading loaded={domains} />
      <ul class="items" data-testid="domains">
        {domains.data?.domains.map((d) => (
          <li key={d.domain_id} data-domain={d.domain} style={{ padding: '0.6rem 0.8rem' }}>
            <div class="item-line">
              <button class="small" onClick={() => setOpen(open === d.domain_id ? null : d.domain_id)} aria-expanded={open === d.domain_id}>
                {d.domain}
              </button>
              <span class={`badge ${d.state === 'verified' ? 'good' : d.state === 'failed' ? 'bad' : 'warn'}`}>{d.state}</span>
            </div>
            {d.reason && <div class="small muted">{d.reason}</div>}
            {open === d.domain_id && <DomainDetail id={d.domain_id} onChanged={domains.reload} />}
          </li>
        ))}
      </ul>
    </Page>
  );
}
