/**
 * `svc oauth clients | revoke <grant_id> | purge`: OAuth management for the owner (spec §5.3
 * "Owner management"), through the running service's owner routes (/v0/owner/oauth/...).
 */
import { parseArgs } from './args.js';
import { CliError } from './exit-codes.js';
import { callOwner, ownerConnection, ownerHome } from './owner-client.js';
import type { OAuthClient } from '../oauth/schemas.js';

const USAGE = 'svc oauth clients | revoke <grant_id> | purge [--home DIR] [--flavor development|production] [--json]';
/** The owner list's largest page; `clients` follows next_page_token to the end. */
const PAGE = 100;
/** A bound on pages followed, far above the 1,000 registrations svc keeps. */
const MAX_PAGES = 50;

const invalid = (message: string) => new CliError('validation_error', message, `Usage: ${USAGE}`);
const out = (text: string) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);

/** Columns padded to their widest cell; the last column is left ragged. */
function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ')).join('\n');
}

/** One row per grant; a client without grants gets one row with dashes. */
function clientsTable(clients: OAuthClient[]): string {
  if (clients.length === 0) return 'No OAuth clients are registered.';
  const rows = [['CLIENT', 'NAME', 'GRANT', 'RESOURCE', 'INBOXES', 'POLICY', 'EXPIRES', 'LAST USED']];
  for (const c of clients) {
    const name = c.client_name ?? '(unnamed)';
    if (c.grants.length === 0) rows.push([c.client_id, name, '-', '-', '-', '-', '-', '-']);
    for (const g of c.grants) rows.push([c.client_id, name, g.grant_id, g.resource, g.inbox_ids.join(','), g.send_policy, g.expires_at, g.last_used_at ?? 'never']);
  }
  return table(rows);
}

export async function runOAuthCommand(args: string[]): Promise<number> {
  const { flags, positionals } = parseArgs(args, { home: 'string', flavor: 'string', json: 'boolean' });
  const [action, ...rest] = positionals;
  const json = flags.json === true;
  const connection = () => ownerConnection(ownerHome({ home: flags.home as string | undefined, flavor: flags.flavor as string | undefined }));
  switch (action) {
    case 'clients': {
      if (rest.length > 0) throw invalid(`Unexpected argument "${rest[0]}".`);
      const conn = connection();
      const clients: OAuthClient[] = [];
      let token: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const query = `?limit=${PAGE}${token ? `&page_token=${encodeURIComponent(token)}` : ''}`;
        const body = await callOwner<{ clients: OAuthClient[]; next_page_token?: string }>(conn, 'GET', `/v0/owner/oauth/clients${query}`);
        clients.push(...body.clients);
        token = body.next_page_token;
        if (!token) break;
      }
      out(json ? JSON.stringify({ count: clients.length, clients }) : clientsTable(clients));
      return 0;
    }
    case 'revoke': {
      const [grantId, ...extra] = rest;
      if (!grantId) throw invalid('Missing the grant id (see `svc oauth clients`).');
      if (extra.length > 0) throw invalid(`Unexpected argument "${extra[0]}".`);
      await callOwner(connection(), 'DELETE', `/v0/owner/oauth/grants/${encodeURIComponent(grantId)}`);
      out(json ? JSON.stringify({ revoked: true, grant_id: grantId }) : `Revoked grant ${grantId} and every token it issued.`);
      return 0;
    }
    case 'purge': {
      if (rest.length > 0) throw invalid(`Unexpected argument "${rest[0]}".`);
      const body = await callOwner<{ deleted_clients: number }>(connection(), 'POST', '/v0/owner/oauth/clients/purge', {});
      out(json ? JSON.stringify(body) : `Deleted ${body.deleted_clients} client registration${body.deleted_clients === 1 ? '' : 's'} without a grant.`);
      return 0;
    }
    default:
      throw invalid(action ? `Unknown oauth command "${action}".` : 'Missing the oauth command.');
  }
}
