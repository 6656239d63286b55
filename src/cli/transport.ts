/**
 * `svc transport`: the mail transport (spec §4.13 `/owner/transport`): pairing with an edge
 * (`svc edge` prints its API URL and token) and an optional SMTP smart host for outbound.
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
        ['edge', t.edge ? `${t.edge.url} (token set)` : 'not paired'],
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
  notes: 'Pairing: run `svc edge` on a host with port 25; it prints its API URL and token. Then: svc transport set --edge-url URL --edge-token-file token.txt',
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
      summary: 'Pair an edge and/or set an SMTP smart host; parts not given are kept.',
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
    clear: {
      summary: 'Remove the edge pairing, the smart host, or (with neither option) both.',
      options: [opt('edge', 'Remove only the edge pairing.'), opt('smtp', 'Remove only the smart host.')],
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
