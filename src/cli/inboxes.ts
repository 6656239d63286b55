/** `svc inboxes`: list, search, show, create, update, pause, resume, delete (spec §4.3). */
import { CliError } from './exit-codes.js';
import { enc, opt, PAGE_OPTIONS, pageQuery, type Ctx, type Group } from './commands.js';
import type { ServiceClient } from './owner-client.js';
import { fields, out, pageTable, printJson, type Column, WHOLE } from './output.js';
import type { InboxResponse as Inbox } from '../mail/inboxes.js';

const COLUMNS: Column<Inbox>[] = [
  ['INBOX', (i) => i.inbox_id, WHOLE],
  ['STATUS', (i) => i.status],
  ['DISPLAY NAME', (i) => i.display_name],
  ['CREATED', (i) => i.created_at],
];

export const inboxOption = opt('inbox ADDRESS', 'The inbox (default: the only inbox the caller can see).');

/**
 * The inbox a mail command acts on: --inbox, else the caller's only inbox (handy with a key
 * scoped to one inbox); several or none is a usage error.
 */
export async function resolveInbox(ctx: Ctx, client: ServiceClient): Promise<string> {
  const given = ctx.str('inbox');
  if (given) return given;
  const page = await client.call<{ inboxes: Inbox[] }>('GET', '/v0/inboxes', { query: { limit: 2 } });
  if (page.inboxes.length === 1) return page.inboxes[0].inbox_id;
  throw new CliError(
    'validation_error',
    page.inboxes.length === 0 ? 'No inbox is visible to this caller.' : 'Several inboxes are visible; say which one with --inbox.',
    page.inboxes.length === 0 ? 'Create one with `svc inboxes create <address>`.' : 'List them with `svc inboxes list`.',
  );
}

function showInbox(ctx: Ctx, inbox: Inbox, lead?: string): void {
  if (ctx.json) return printJson(inbox);
  out(
    (lead ? `${lead}\n` : '') +
      fields([
        ['inbox', inbox.inbox_id],
        ['status', inbox.status],
        ['display name', inbox.display_name],
        ['metadata', inbox.metadata],
        ['client id', inbox.client_id],
        ['created', inbox.created_at],
        ['updated', inbox.updated_at],
      ]),
  );
}

/** `name=value` pairs → metadata; `name=` (empty) removes the key on update. */
function metadataOf(ctx: Ctx): Record<string, string | null> | undefined {
  const pairs = ctx.list('metadata');
  if (pairs.length === 0) return undefined;
  const metadata: Record<string, string | null> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new CliError('validation_error', `--metadata "${pair}" is not KEY=VALUE.`, 'Use e.g. --metadata team=sales (an empty value removes the key on update).');
    const value = pair.slice(at + 1);
    metadata[pair.slice(0, at)] = value === '' ? null : value;
  }
  return metadata;
}

async function setStatus(ctx: Ctx, status: 'active' | 'paused'): Promise<void> {
  const client = await ctx.client();
  const inbox = await client.call<Inbox>('PATCH', `/v0/inboxes/${enc(ctx.args[0])}`, { body: { status } });
  showInbox(ctx, inbox, status === 'paused' ? `Paused ${inbox.inbox_id}: sending from it answers inbox_paused.` : `Resumed ${inbox.inbox_id}.`);
}

export const group: Group = {
  name: 'inboxes',
  summary: 'manage inboxes',
  actions: {
    list: {
      summary: 'List the inboxes in scope, newest first.',
      options: PAGE_OPTIONS,
      examples: ['svc inboxes list', 'svc inboxes list --limit 100 --json'],
      async run(ctx) {
        const client = await ctx.client();
        const page = await client.call<{ inboxes: Inbox[]; next_page_token?: string }>('GET', '/v0/inboxes', { query: pageQuery(ctx) });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.inboxes, COLUMNS, 'No inboxes yet. Create one with `svc inboxes create <address>`.'));
      },
    },
    search: {
      summary: 'Find inboxes whose address or display name contains the text.',
      usage: '<text>',
      args: [1, 1],
      options: [opt('limit N', 'Items per page, 1–100.'), opt('page-token T', 'Continue from next_page_token.')],
      examples: ['svc inboxes search sales'],
      async run(ctx) {
        const client = await ctx.client();
        const page = await client.call<{ inboxes: Inbox[]; next_page_token?: string }>('GET', '/v0/inboxes/search', { query: { q: ctx.args[0], limit: ctx.int('limit', 1, 100), page_token: ctx.str('page-token') } });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.inboxes, COLUMNS, 'No inbox matches.'));
      },
    },
    show: {
      summary: 'Show one inbox.',
      usage: '<inbox_id>',
      args: [1, 1],
      examples: ['svc inboxes show hello@example.com'],
      async run(ctx) {
        const client = await ctx.client();
        showInbox(ctx, await client.call<Inbox>('GET', `/v0/inboxes/${enc(ctx.args[0])}`));
      },
    },
    create: {
      summary: 'Create an inbox: give its address, or --domain alone for a random username.',
      usage: '[<address>]',
      args: [0, 1],
      options: [
        opt('domain DOMAIN', 'The domain (instead of a full address): the username is 16 random hex characters.'),
        opt('display-name NAME', 'The name shown in From.'),
        opt('metadata KEY=VALUE...', 'A metadata entry.'),
        opt('client-id ID', 'A create key: repeating the create returns the same inbox.'),
        opt('paused', 'Create it paused.'),
      ],
      examples: ['svc inboxes create hello@example.com --display-name "Hello Agent"', 'svc inboxes create --domain example.com --json'],
      async run(ctx) {
        const [address] = ctx.args;
        const domain = ctx.str('domain');
        if (Boolean(address) === Boolean(domain)) throw new CliError('validation_error', 'Give either an address or --domain.', 'e.g. `svc inboxes create hello@example.com` or `svc inboxes create --domain example.com`.');
        const at = address ? address.lastIndexOf('@') : -1;
        if (address && at <= 0) throw new CliError('validation_error', `"${address}" is not an address (username@domain).`, 'e.g. `svc inboxes create hello@example.com`.');
        const body = {
          ...(address ? { username: address.slice(0, at), domain: address.slice(at + 1) } : { domain }),
          display_name: ctx.str('display-name'),
          metadata: metadataOf(ctx),
          client_id: ctx.str('client-id'),
          status: ctx.bool('paused') ? 'paused' : undefined,
        };
        const client = await ctx.client();
        const inbox = await client.call<Inbox>('POST', '/v0/inboxes', { body });
        showInbox(ctx, inbox, `Created ${inbox.inbox_id}.`);
      },
    },
    update: {
      summary: 'Change the display name or metadata (merged; KEY= removes a key).',
      usage: '<inbox_id>',
      args: [1, 1],
      options: [opt('display-name NAME', 'The new display name.'), opt('clear-display-name', 'Remove the display name.'), opt('metadata KEY=VALUE...', 'Set (or with an empty value remove) a metadata key.'), opt('clear-metadata', 'Remove all metadata.')],
      examples: ['svc inboxes update hello@example.com --display-name "Sales" --metadata team=sales'],
      async run(ctx) {
        const body: Record<string, unknown> = {};
        if (ctx.str('display-name') !== undefined) body.display_name = ctx.str('display-name');
        if (ctx.bool('clear-display-name')) body.display_name = null;
        const metadata = metadataOf(ctx);
        if (metadata) body.metadata = metadata;
        if (ctx.bool('clear-metadata')) body.metadata = null;
        const client = await ctx.client();
        const inbox = await client.call<Inbox>('PATCH', `/v0/inboxes/${enc(ctx.args[0])}`, { body });
        showInbox(ctx, inbox, `Updated ${inbox.inbox_id}.`);
      },
    },
    pause: {
      summary: 'Pause an inbox: sending from it answers inbox_paused.',
      usage: '<inbox_id>',
      args: [1, 1],
      examples: ['svc inboxes pause hello@example.com'],
      run: (ctx) => setStatus(ctx, 'paused'),
    },
    resume: {
      summary: 'Make a paused inbox active again.',
      usage: '<inbox_id>',
      args: [1, 1],
      examples: ['svc inboxes resume hello@example.com'],
      run: (ctx) => setStatus(ctx, 'active'),
    },
    delete: {
      summary: 'Delete an inbox and everything in it, permanently.',
      usage: '<inbox_id>',
      args: [1, 1],
      examples: ['svc inboxes delete hello@example.com'],
      async run(ctx) {
        const client = await ctx.client();
        await client.call('DELETE', `/v0/inboxes/${enc(ctx.args[0])}`);
        if (ctx.json) return printJson({ deleted: true, inbox_id: ctx.args[0] });
        out(`Deleted ${ctx.args[0]} and everything in it.`);
      },
    },
  },
};
