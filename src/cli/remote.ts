/**
 * `svc remote`: remote access through a tunnel (spec §1.7, §4.13 `/owner/remote`;
 * docs/remote-access.md): show, enable with a public hostname and the connector command svc
 * supervises, disable.
 */
import { opt, type Ctx, type Group } from './commands.js';
import { fields, out, printJson } from './output.js';
import type { RemoteResponse } from '../remote/schemas.js';

function showRemote(ctx: Ctx, r: RemoteResponse, lead?: string): void {
  if (ctx.json) return printJson(r);
  out(
    (lead ? `${lead}\n` : '') +
      fields([
        ['enabled', r.enabled ? 'yes' : 'no'],
        ['url', r.url],
        ['hostname', r.hostname],
        ['command', r.command],
        ['connector', `${r.connector.state}${r.connector.pid ? ` (pid ${r.connector.pid})` : ''}, ${r.connector.restarts} restarts${r.connector.next_restart_at ? `, next restart ${r.connector.next_restart_at}` : ''}`],
        ['listener port', r.listener.port],
      ]),
  );
}

export const group: Group = {
  name: 'remote',
  summary: 'remote access for agents through a tunnel (owner)',
  notes: 'Agents elsewhere then use SVC_URL=https://<hostname> with an API key. Owner routes are not reachable through the tunnel.',
  actions: {
    show: {
      summary: 'Show remote access and the connector state.',
      examples: ['svc remote show'],
      async run(ctx) {
        const client = await ctx.client();
        showRemote(ctx, await client.call<RemoteResponse>('GET', '/v0/owner/remote'));
      },
    },
    enable: {
      summary: 'Enable remote access: svc opens a tunnel listener and runs the connector command (with SVC_TUNNEL_* variables).',
      options: [opt('hostname NAME', 'The public hostname the tunnel serves (required).'), opt('command CMD', 'The connector command line, run with /bin/sh -c (required).')],
      examples: ['svc remote enable --hostname mail.example.com --command \'cloudflared tunnel run --url "$SVC_TUNNEL_URL" my-tunnel\''],
      async run(ctx) {
        const client = await ctx.client();
        showRemote(ctx, await client.call<RemoteResponse>('POST', '/v0/owner/remote/enable', { body: { hostname: ctx.str('hostname'), command: ctx.str('command') } }), 'Remote access enabled.');
      },
    },
    disable: {
      summary: 'Disable remote access: stops the connector and closes the tunnel listener (the settings are kept).',
      examples: ['svc remote disable'],
      async run(ctx) {
        const client = await ctx.client();
        showRemote(ctx, await client.call<RemoteResponse>('POST', '/v0/owner/remote/disable', { body: {} }), 'Remote access disabled.');
      },
    },
  },
};
