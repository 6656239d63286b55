/**
 * `svc transport`: the mail transport (spec §4.13 `/owner/transport`): pairing with edges
 * (`svc edge` prints its API URL and token) and an optional SMTP smart host for outbound. `set
 * --edge-url` pairs one edge (the list becomes that edge); `add-edge` and `remove-edge` change the
 * list one edge at a time (docs/edge.md "Several edges"), sending the kept edges by URL only, as
 * the service keeps their tokens.
 * Secrets are write-only: `show` says whether they are set. Tokens and passwords can come from
 * a file (or `-` for stdin) so they stay out of the shell history and the process list.
 */
import { CliError } from './exit-codes.js';
import { opt, type Ctx, type Group } from './commands.js';
import { fields, out, printJson } from './output.js';
import type { TransportResponse } from '../mail/transport.js';

function showTransport(ctx: Ctx, t: TransportResponse, lead?: string): void {
  if (ctx.json) return printJson(t);
  out(
    (lead ? `${lead}\n` : '') +
      fields([
        ['configured', t.configured ? 'yes' : 'no (sending answers service_unavailable)'],
        ...(t.edges.length === 0
          ? [['edge', 'not paired'] as [string, string]]
          : t.edges.map((e, i) => [t.edges.length > 1 ? `edge ${i + 1}` : 'edge', `${e.url} (token set)${e.health.healthy ? '' : `, unhealthy: ${e.health.last_error ?? 'failing'}`}`] as [string, string])),
        ['smtp', t.smtp ? `${t.smtp.host}:${t.smtp.port}${t.smtp.secure ? ' (TLS)' : ''}${t.smtp.username ? ` as ${t.smtp.username}` : ''}${t.smtp.password_set ? ', password set' : ''}${t.smtp.spf_include ? `, SPF ${t.smtp.spf_include}` : ''}` : 'none (outbound through the edge)'],
      ]),
  );
}

/** A secret from --NAME or --NAME-file (trailing newline dropped). */
function secret(ctx: Ctx, name: string): string | undefined {
  const direct = ctx.str(name);
  const file = ctx.file(`${name}-file`);
  if (direct !== undefined && file !== undefined) throw new CliError('validation_error', `Give --${name} or --${name}-file, not both.`);
  return direct ?? file?.toString('utf8').replace(/\r?\n$/, '');
}

export const group: Group = {
  name: 'transport',
  summary: 'pair with an edge and configure outbound mail (owner)',
  notes:
    'Pairing: run `svc edge` on a host with port 25; it prints its API URL and token. Then: svc transport set --edge-url URL --edge-token-file token.txt. A second edge (a backup MX, or a new edge during a migration): svc transport add-edge --edge-url URL --edge-token-file FILE; every edge is pulled, and outbound uses the first healthy one.',
  actions: {
    show: {
      summary: 'Show the transport (secrets are never shown).',
      examples: ['svc transport show'],
      async run(ctx) {
        const client = await ctx.client();
        showTransport(ctx, await client.call<TransportResponse>('GET', '/v0/owner/transport'));
      },
    },
    set: {
      summary: 'Pair an edge (replacing the paired edges; see add-edge for several) and/or set an SMTP smart host; parts not given are kept.',
      options: [
        opt('edge-url URL', 'The edge API URL (https, or http on loopback).'),
        opt('edge-token TOKEN', 'The edge API token.'),
        opt('edge-token-file FILE', 'Read the edge token from FILE (- for stdin).'),
        opt('smtp-host HOST', 'Smart host for outbound mail.'),
        opt('smtp-port PORT', 'Its port.'),
        opt('smtp-secure', 'Use TLS from the start (port 465).'),
        opt('smtp-username USER', 'Login name.'),
        opt('smtp-password PASSWORD', 'Password.'),
        opt('smtp-password-file FILE', 'Read the password from FILE (- for stdin).'),
        opt('smtp-spf MECHANISM', 'The SPF mechanism your provider requires, e.g. include:amazonses.com; the domain plans add it.'),
      ],
      examples: ['svc transport set --edge-url https://edge.example.com:8443 --edge-token-file edge-token.txt', 'svc transport set --smtp-host smtp.example.com --smtp-port 587 --smtp-username me --smtp-password-file pw.txt'],
      async run(ctx) {
        const body: Record<string, unknown> = {};
        const edgeUrl = ctx.str('edge-url');
        const edgeToken = secret(ctx, 'edge-token');
        if (edgeUrl !== undefined || edgeToken !== undefined) {
          if (edgeUrl === undefined || edgeToken === undefined) throw new CliError('validation_error', 'Pairing needs both --edge-url and --edge-token (or --edge-token-file).', 'Both are printed by `svc edge`.');
          body.edge = { url: edgeUrl, token: edgeToken };
        }
        const host = ctx.str('smtp-host');
        if (host !== undefined) {
          const port = ctx.int('smtp-port', 1, 65535);
          if (port === undefined) throw new CliError('validation_error', '--smtp-host needs --smtp-port.');
          body.smtp = { host, port, secure: ctx.bool('smtp-secure') || undefined, username: ctx.str('smtp-username'), password: secret(ctx, 'smtp-password'), spf_include: ctx.str('smtp-spf') };
        } else if (['smtp-port', 'smtp-username', 'smtp-password', 'smtp-password-file', 'smtp-spf'].some((n) => ctx.flags[n] !== undefined) || ctx.bool('smtp-secure')) {
          throw new CliError('validation_error', 'The --smtp-* options need --smtp-host.');
        }
        if (Object.keys(body).length === 0) throw new CliError('validation_error', 'Nothing to set: give --edge-url and --edge-token, or --smtp-host and --smtp-port.', 'Run `svc transport set --help`.');
        const client = await ctx.client();
        showTransport(ctx, await client.call<TransportResponse>('PUT', '/v0/owner/transport', { body }), 'Transport updated.');
      },
    },
    'add-edge': {
      summary: 'Pair one more edge (pulled beside the others; outbound uses the first healthy one in list order).',
      options: [
        opt('edge-url URL', 'The edge API URL (https, or http on loopback).'),
        opt('edge-token TOKEN', 'The edge API token.'),
        opt('edge-token-file FILE', 'Read the edge token from FILE (- for stdin).'),
        opt('first', 'Put it first in the list (outbound prefers it), instead of last.'),
      ],
      examples: ['svc transport add-edge --edge-url https://backup-edge.example.com:8443 --edge-token-file backup-token.txt'],
      async run(ctx) {
        const url = ctx.str('edge-url');
        const token = secret(ctx, 'edge-token');
        if (url === undefined || token === undefined) throw new CliError('validation_error', 'add-edge needs --edge-url and --edge-token (or --edge-token-file).', 'Both are printed by `svc edge`.');
        const client = await ctx.client();
        const current = await client.call<TransportResponse>('GET', '/v0/owner/transport');
        const kept = current.edges.filter((e) => e.url !== url.replace(/\/+$/, '')).map((e) => ({ url: e.url }));
        const edges = ctx.bool('first') ? [{ url, token }, ...kept] : [...kept, { url, token }];
        showTransport(ctx, await client.call<TransportResponse>('PUT', '/v0/owner/transport', { body: { edges } }), 'Edge added.');
      },
    },
    'remove-edge': {
      summary: 'Unpair one edge; the others are kept.',
      usage: '<edge-url>',
      args: [1, 1],
      examples: ['svc transport remove-edge https://old-edge.example.com:8443'],
      async run(ctx) {
        const url = ctx.args[0].replace(/\/+$/, '');
        const client = await ctx.client();
        const current = await client.call<TransportResponse>('GET', '/v0/owner/transport');
        if (!current.edges.some((e) => e.url === url)) throw new CliError('not_found', `No edge is paired at ${url}.`, `Run \`svc transport show\` for the paired edges.`);
        const edges = current.edges.filter((e) => e.url !== url).map((e) => ({ url: e.url }));
        showTransport(ctx, await client.call<TransportResponse>('PUT', '/v0/owner/transport', { body: { edges } }), 'Edge removed.');
      },
    },
    clear: {
      summary: 'Remove the edge pairings, the smart host, or (with neither option) both.',
      options: [opt('edge', 'Remove only the edge pairings (every edge).'), opt('smtp', 'Remove only the smart host.')],
      examples: ['svc transport clear --smtp', 'svc transport clear'],
      async run(ctx) {
        const client = await ctx.client();
        const edge = ctx.bool('edge');
        const smtp = ctx.bool('smtp');
        if (edge !== smtp) {
          const view = await client.call<TransportResponse>('PUT', '/v0/owner/transport', { body: edge ? { edge: null } : { smtp: null } });
          return showTransport(ctx, view, `Removed the ${edge ? 'edge pairing' : 'smart host'}.`);
        }
        await client.call('DELETE', '/v0/owner/transport');
        showTransport(ctx, await client.call<TransportResponse>('GET', '/v0/owner/transport'), 'Transport cleared.');
      },
    },
  },
};
