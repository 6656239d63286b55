/**
 * `svc api-keys`: list, show, create (prints the secret once), update, delete (spec §2.9, §4.11,
 * owner only). Permissions are names (comma-separated or repeated), or `all`.
 */
import { CliError } from './exit-codes.js';
import { enc, opt, PAGE_OPTIONS, pageQuery, type Ctx, type Group } from './commands.js';
import { PERMISSIONS } from '../auth/permissions.js';
import { SEND_POLICIES } from '../auth/principal.js';
import { fields, out, pageTable, printJson, type Column, WHOLE } from './output.js';
import type { ApiKeyResponse } from '../auth/api-keys.js';

/** A key as the API answers; `api_key`, the secret, only on create. */
type ApiKey = ApiKeyResponse & { api_key?: string };

const granted = (k: ApiKey) => Object.keys(k.permissions).filter((p) => k.permissions[p]);

const COLUMNS: Column<ApiKey>[] = [
  ['KEY', (k) => k.api_key_id, WHOLE],
  ['NAME', (k) => k.name],
  ['PREFIX', (k) => k.prefix],
  ['POLICY', (k) => k.send_policy],
  ['INBOXES', (k) => k.inbox_ids ?? 'all'],
  ['PERMISSIONS', (k) => `${granted(k).length} of ${PERMISSIONS.length}`],
  ['EXPIRES', (k) => k.expires_at],
];

const POLICIES: readonly string[] = SEND_POLICIES;

function permissions(ctx: Ctx): string[] | undefined {
  const names = ctx.list('permissions', true);
  if (names.length === 0) return undefined;
  return names.includes('all') ? [...PERMISSIONS] : names;
}

function policy(ctx: Ctx): string | undefined {
  const p = ctx.str('send-policy');
  if (p !== undefined && !POLICIES.includes(p)) throw new CliError('validation_error', `--send-policy must be one of ${POLICIES.join(', ')}.`);
  return p;
}

function showKey(ctx: Ctx, k: ApiKey, lead?: string): void {
  if (ctx.json) return printJson(k);
  const lines = fields([
    ['key', k.api_key_id],
    ['name', k.name],
    ['prefix', k.prefix],
    ['send policy', k.send_policy],
    ['inboxes', k.inbox_ids ?? 'all'],
    ['permissions', granted(k)],
    ['expires', k.expires_at],
    ['created', k.created_at],
    ['used', k.used_at],
  ]);
  const secret = k.api_key ? `\nSecret (shown only this once; store it now):\n${k.api_key}\n\nAn agent uses it with SVC_URL=<service url> SVC_API_KEY=<secret> svc ...` : '';
  out(`${lead ? `${lead}\n` : ''}${lines}${secret}`);
}

export const group: Group = {
  name: 'api-keys',
  summary: 'create and manage agent API keys (owner)',
  notes: `Permissions: ${PERMISSIONS.join(', ')} (or all).\nSend policies: direct (sends at once), approval (sends become drafts for the owner to approve), read_only (cannot send).`,
  actions: {
    list: {
      summary: 'List API keys (never their secrets).',
      options: [opt('inbox ADDRESS', 'Only keys scoped to this inbox.'), ...PAGE_OPTIONS],
      examples: ['svc api-keys list'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = ctx.str('inbox');
        const page = await client.call<{ api_keys: ApiKey[]; next_page_token?: string }>('GET', inbox ? `/v0/inboxes/${enc(inbox)}/api-keys` : '/v0/api-keys', { query: pageQuery(ctx) });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.api_keys, COLUMNS, 'No API keys. Create one with `svc api-keys create`.'));
      },
    },
    show: {
      summary: 'Show one API key.',
      usage: '<api_key_id>',
      args: [1, 1],
      examples: ['svc api-keys show 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        showKey(ctx, await client.call<ApiKey>('GET', `/v0/api-keys/${enc(ctx.args[0])}`));
      },
    },
    create: {
      summary: 'Create an API key; its secret is printed once.',
      options: [
        opt('permissions NAME...', 'Granted permissions, comma-separated or repeated; `all` for every one (required).'),
        opt('send-policy POLICY', 'direct, approval, guarded or read_only (required).'),
        opt('inbox ADDRESS...', 'Restrict the key to this inbox (default: every inbox).'),
        opt('name NAME', 'A name to recognise it.'),
        opt('expires-at TIME', 'RFC 3339 time when it stops working.'),
      ],
      examples: [
        'svc api-keys create --name support-bot --inbox hello@example.com --permissions all --send-policy approval',
        'svc api-keys create --permissions inbox_read,message_read --send-policy read_only --json',
      ],
      async run(ctx) {
        const perms = permissions(ctx);
        const sendPolicy = policy(ctx);
        if (!perms || !sendPolicy) throw new CliError('validation_error', '--permissions and --send-policy are required.', 'e.g. --permissions all --send-policy approval');
        const inboxes = ctx.list('inbox', true);
        const client = await ctx.client();
        const key = await client.call<ApiKey>('POST', '/v0/api-keys', {
          body: { name: ctx.str('name'), permissions: perms, send_policy: sendPolicy, inbox_ids: inboxes.length ? inboxes : undefined, expires_at: ctx.str('expires-at') },
        });
        showKey(ctx, key, `Created API key ${key.api_key_id}.`);
      },
    },
    update: {
      summary: 'Change the name, permissions (replaced as a whole) or send policy.',
      usage: '<api_key_id>',
      args: [1, 1],
      options: [opt('name NAME', 'The new name.'), opt('permissions NAME...', 'The new permission set (`all` for every one).'), opt('send-policy POLICY', 'direct, approval or read_only.')],
      examples: ['svc api-keys update 0190f4c2-… --send-policy direct'],
      async run(ctx) {
        const body = { name: ctx.str('name'), permissions: permissions(ctx), send_policy: policy(ctx) };
        const client = await ctx.client();
        showKey(ctx, await client.call<ApiKey>('PATCH', `/v0/api-keys/${enc(ctx.args[0])}`, { body }), 'Updated.');
      },
    },
    delete: {
      summary: 'Revoke an API key at once.',
      usage: '<api_key_id>',
      args: [1, 1],
      examples: ['svc api-keys delete 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        await client.call('DELETE', `/v0/api-keys/${enc(ctx.args[0])}`);
        if (ctx.json) return printJson({ deleted: true, api_key_id: ctx.args[0] });
        out(`Revoked API key ${ctx.args[0]}.`);
      },
    },
  },
};
