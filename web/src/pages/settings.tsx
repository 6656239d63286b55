/** Service settings: mail delivery (edge pairing or SMTP), remote access, connected (OAuth) apps. */
import { del, enc, get, post, put } from '../api';
import { useLiveEvents } from '../live';
import { ErrorBox, Loading, Notice, Page, bytes, confirmed, formValues, useAction, useLoad, when } from '../ui';
import { useState } from 'preact/hooks';
import type { OAuthClient, RemoteView, TransportView } from '../api-types';
import { PermissionSummary, POLICY_NAMES } from '../widgets';

export function TransportPage() {
  const t = useLoad(() => get<TransportView>('/v0/owner/transport'), []);
  const action = useAction();
  const save = (body: unknown) =>
    action.run(async () => {
      t.set(await put<TransportView>('/v0/owner/transport', body));
    });
  const v = t.data;
  return (
    <Page title="Delivery">
      <p class="muted">How mail reaches svc and leaves it: an edge receives mail for your domains and relays what agents send; an SMTP server (a smart host) can send instead.</p>
      <Loading loaded={t} />
      <ErrorBox error={action.error} />
      {v && (
        <div class="card" data-testid="transport-state">
          {v.configured ? <span class="badge good">configured</span> : <span class="badge warn">not configured: sending answers service_unavailable</span>}
          {v.edges.length > 0 && (
            <div class="table-wrap">
              <table class="list" data-testid="edges">
                <thead>
                  <tr>
                    <th>Edge</th>
                    <th>Health</th>
                    <th>Last contact</th>
                    <th>
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {v.edges.map((e, i) => (
                    <tr key={e.url} data-testid="edge-row">
                      <td>
                        <code>{e.url}</code> (token set){i === 0 && v.edges.length > 1 ? ' · outbound prefers it' : ''}
                      </td>
                      <td>
                        {e.health.healthy ? <span class="badge good">healthy</span> : <span class="badge warn">{`${e.health.consecutive_failures} failure${e.health.consecutive_failures === 1 ? '' : 's'}: ${e.health.last_error ?? 'failing'}`}</span>}
                        {e.health.backoff_until && <span class="small muted"> retrying after {when(e.health.backoff_until)}</span>}
                      </td>
                      <td>{e.health.last_success_at ? when(e.health.last_success_at) : 'not yet'}</td>
                      <td>
                        <button
                          class="small danger"
                          onClick={() =>
                            confirmed(`Unpair the edge at ${e.url}? Mail it still holds stays there until it is paired again.`) &&
                            void save({ edges: v.edges.filter((x) => x.url !== e.url).map((x) => ({ url: x.url })) })
                          }
                        >
                          Remove
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {v.smtp && (
            <p>
              SMTP: <code>{`${v.smtp.host}:${v.smtp.port}`}</code> {v.smtp.secure ? 'TLS' : 'STARTTLS if offered'} {v.smtp.username && `as ${v.smtp.username}`}
            </p>
          )}
          {v.configured && (
            <button class="small danger" onClick={() => confirmed('Remove the transport? Sending stops until a new one is set.') && void action.run(async () => { await del('/v0/owner/transport'); t.reload(); })}>
              Remove transport
            </button>
          )}
        </div>
      )}
      <h2>{v && v.edges.length > 0 ? 'Add an edge' : 'Edge pairing'}</h2>
      <form
        class="card narrow"
        onSubmit={(e) => {
          e.preventDefault();
          const form = e.currentTarget;
          const f = formValues(form);
          // Kept edges go by URL only: the service keeps their tokens, which it never shows.
          const kept = (v?.edges ?? []).filter((x) => x.url !== f.url.replace(/\/+$/, '')).map((x) => ({ url: x.url }));
          void save({ edges: [...kept, { url: f.url, token: f.token }] }).then((ok) => ok && form.reset());
        }}
      >
        <p class="small muted">
          The edge buffers inbound mail sealed to this home and relays outbound mail. Its URL and token come from <code>svc edge</code>. With several edges (a backup MX, or a new edge during a move) every edge is pulled and outbound goes through the first healthy one.
        </p>
        <label>
          Edge URL
          <input name="url" type="url" required />
        </label>
        <label>
          Edge token (write-only)
          <input name="token" type="password" required autocomplete="off" />
        </label>
        <button class="primary">{v && v.edges.length > 0 ? 'Add edge' : 'Save edge'}</button>
      </form>
      <h2>Outbound through SMTP (optional)</h2>
      <form
        class="card narrow"
        onSubmit={(e) => {
          e.preventDefault();
          const f = formValues(e.currentTarget);
          void save({ smtp: { host: f.host, port: Number(f.port), secure: f.secure === 'on', ...(f.username ? { username: f.username, password: f.password } : {}) } });
        }}
      >
        <div class="row">
          <label>
            Host
            <input name="host" required defaultValue={v?.smtp?.host ?? ''} />
          </label>
          <label>
            Port
            <input name="port" type="number" min={1} max={65535} required defaultValue={String(v?.smtp?.port ?? 587)} />
          </label>
        </div>
        <label class="check">
          <input type="checkbox" name="secure" defaultChecked={v?.smtp?.secure ?? false} /> TLS from the start (port 465)
        </label>
        <div class="row">
          <label>
            Username
            <input name="username" defaultValue={v?.smtp?.username ?? ''} autocomplete="off" />
          </label>
          <label>
            Password (write-only)
            <input name="password" type="password" autocomplete="off" />
          </label>
        </div>
        <button class="primary">Save SMTP</button>
      </form>
    </Page>
  );
}

export function RemotePage() {
  const r = useLoad(() => get<RemoteView>('/v0/owner/remote'), []);
  const action = useAction();
  const v = r.data;
  return (
    <Page title="Remote access" actions={<button class="small" onClick={r.reload}>Refresh</button>}>
      <p class="muted">
        A tunnel exposes the agent API (API keys and OAuth tokens) on a public hostname. Owner routes, this app and quarantine stay on this machine only.
      </p>
      <Loading loaded={r} />
      <ErrorBox error={action.error} />
      {v && (
        <div class="card" data-testid="remote-state">
          <p>
            {v.enabled ? <span class="badge good">enabled</span> : <span class="badge warn">off</span>} {v.url && <code>{v.url}</code>}
          </p>
          {v.connector && (
            <p class="small">
              Connector: {v.connector.state}
              {v.connector.pid ? ` (pid ${v.connector.pid})` : ''} · restarts {v.connector.restarts}
              {v.connector.last_exit_code !== null && ` · last exit ${v.connector.last_exit_code}`}
              {v.connector.next_restart_at && ` · next try ${when(v.connector.next_restart_at)}`}
            </p>
          )}
          {v.enabled && (
            <button class="danger" onClick={() => void action.run(async () => { await post('/v0/owner/remote/disable'); r.reload(); })}>
              Disable remote access
            </button>
          )}
        </div>
      )}
      <form
        class="card narrow"
        onSubmit={(e) => {
          e.preventDefault();
          const f = formValues(e.currentTarget);
          void action.run(async () => {
            await post('/v0/owner/remote/enable', { hostname: f.hostname, command: f.command });
            r.reload();
          });
        }}
      >
        <label>
          Public hostname
          <input name="hostname" required defaultValue={v?.hostname ?? ''} placeholder="agents.example.com" />
        </label>
        <label>
          Connector command
          <input name="command" required defaultValue={v?.command ?? ''} placeholder="cloudflared tunnel run --url $SVC_TUNNEL_URL my-tunnel" />
        </label>
        <p class="small muted">
          svc runs it and restarts it when it exits; it gets <code>SVC_TUNNEL_URL</code>, <code>SVC_TUNNEL_PORT</code> and <code>SVC_TUNNEL_HOSTNAME</code>. Changing the
          hostname invalidates OAuth tokens issued for the old one.
        </p>
        <button class="primary">{v?.enabled ? 'Update' : 'Enable'}</button>
      </form>
    </Page>
  );
}

export function OAuthPage() {
  const clients = useLoad(() => get<{ clients: OAuthClient[] }>('/v0/owner/oauth/clients?limit=100'), []);
  const action = useAction();
  const [note, setNote] = useState<string | null>(null);
  useLiveEvents(['oauth.'], () => clients.reload());
  return (
    <Page
      title="Connected apps"
      actions={
        <button
          onClick={() =>
            void action.run(async () => {
              const r = await post<{ deleted_clients: number }>('/v0/owner/oauth/clients/purge');
              setNote(`Deleted ${r.deleted_clients} registration(s) without a grant.`);
              clients.reload();
            })
          }
        >
          Purge unused registrations
        </button>
      }
    >
      <p class="muted">MCP clients that registered themselves. Names and redirect addresses are what the client declared; svc cannot verify them.</p>
      {note && <Notice>{note}</Notice>}
      <ErrorBox error={action.error} />
      <Loading loaded={clients} />
      {clients.data?.clients.length === 0 && <p class="muted">No client has registered.</p>}
      <ul class="items plain" data-testid="oauth-clients">
        {clients.data?.clients.map((c) => (
          <li key={c.client_id} class="card" data-client={c.client_id}>
            <strong>{c.client_name ?? '(no name)'}</strong> <span class="badge warn">unverified</span>
            <div class="small muted">
              {c.redirect_uris.join(', ')} · registered {when(c.created_at)}
            </div>
            {c.grants.length === 0 && <p class="small muted">No active grant.</p>}
            {c.grants.map((g) => (
              <div key={g.grant_id} class="card small" data-grant={g.grant_id}>
                <div>
                  <code>{g.resource}</code> · {POLICY_NAMES[g.send_policy] ?? g.send_policy} · inboxes {g.inbox_ids.join(', ')}
                </div>
                <div class="muted">
                  granted {when(g.created_at)} · ends {when(g.expires_at)} · last used {when(g.last_used_at)}
                </div>
                <div class="muted">
                  <PermissionSummary permissions={g.permissions} />
                </div>
                <button
                  class="small danger"
                  onClick={() =>
                    confirmed('Revoke this grant and every token it issued?') &&
                    void action.run(async () => {
                      await del(`/v0/owner/oauth/grants/${enc(g.grant_id)}`);
                      clients.reload();
                    })
                  }
                >
                  Revoke
                </button>
              </div>
            ))}
          </li>
        ))}
      </ul>
    </Page>
  );
}
