/** `svc webhooks`: list, show (with health), create (prints the secret once), update, delete (spec §2.8, §4.9). */
import { CliError } from './exit-codes.js';
import { enc, opt, PAGE_OPTIONS, pageQuery, type Ctx, type Group } from './commands.js';
import { fields, out, pageTable, printJson, type Column, WHOLE } from './output.js';
import type { WebhookResponse as Webhook } from '../webhooks/webhooks.js';

const COLUMNS: Column<Webhook>[] = [
  ['WEBHOOK', (w) => w.webhook_id, WHOLE],
  ['URL', (w) => w.url, 50],
  ['ENABLED', (w) => (w.enabled ? 'yes' : 'no')],
  ['EVENTS', (w) => w.event_types, 50],
  ['INBOXES', (w) => w.inbox_ids ?? 'all'],
];

function headerMap(ctx: Ctx): Record<string, string> | undefined {
  const given = ctx.list('header');
  if (!given.length) return undefined;
  const result: Record<string, string> = {};
  for (const h of given) {
    const at = h.indexOf(':');
    if (at <= 0) throw new CliError('validation_error', `--header "${h}" is not NAME:VALUE.`);
    result[h.slice(0, at).trim()] = h.slice(at + 1).trim();
  }
  return result;
}

function showHook(ctx: Ctx, w: Webhook, lead?: string): void {
  if (ctx.json) return printJson(w);
  const lines = fields([
    ['webhook', w.webhook_id],
    ['url', w.url],
    ['events', w.event_types],
    ['inboxes', w.inbox_ids ?? 'all'],
    ['pods', w.pod_ids ?? 'all'],
    ['enabled', w.enabled ? 'yes' : `no${w.disabled_reason ? ` (${w.disabled_reason})` : ''}`],
    ...(w.failure_count !== undefined
      ? ([
          ['failures', w.failure_count],
          ['last error', w.last_error_code],
          ['last success', w.last_success_at],
        ] as [string, unknown][])
      : []),
  ]);
  const secret = w.secret ? `\nSigning secret (shown only this once; store it now):\n${w.secret}` : '';
  out(`${lead ? `${lead}\n` : ''}${lines}${secret}`);
}

export const group: Group = {
  name: 'webhooks',
  summary: 'deliver events to your URLs',
  actions: {
    list: {
      summary: 'List webhooks (agents see the ones their key created).',
      options: PAGE_OPTIONS,
      examples: ['svc webhooks list'],
      async run(ctx) {
        const client = await ctx.client();
        const page = await client.call<{ webhooks: Webhook[]; next_page_token?: string }>('GET', '/v0/webhooks', { query: pageQuery(ctx) });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.webhooks, COLUMNS, 'No webhooks.'));
      },
    },
    show: {
      summary: 'Show a webhook with its health (failures, last error, last success).',
      usage: '<webhook_id>',
      args: [1, 1],
      examples: ['svc webhooks show 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        showHook(ctx, await client.call<Webhook>('GET', `/v0/webhooks/${enc(ctx.args[0])}`));
      },
    },
    create: {
      summary: 'Create a webhook; its signing secret is printed once.',
      usage: '<url>',
      args: [1, 1],
      options: [opt('event TYPE...', 'An event type (comma-separated or repeated; required), e.g. message.received.'), opt('inbox ADDRESS...', 'Only events of this inbox.'), opt('pod POD_ID...', 'Only events of inboxes in this pod.'), opt('header NAME:VALUE...', 'A custom header sent with every delivery.')],
      examples: ['svc webhooks create https://example.com/hook --event message.received,message.sent --inbox hello@example.com'],
      async run(ctx) {
        const events = ctx.list('event', true);
        if (!events.length) throw new CliError('validation_error', 'Give at least one --event.', 'e.g. --event message.received');
        const inboxes = ctx.list('inbox', true);
        const pods = ctx.list('pod', true);
        const client = await ctx.client();
        const body = { url: ctx.args[0], event_types: events, inbox_ids: inboxes.length ? inboxes : undefined, pod_ids: pods.length ? pods : undefined, headers: headerMap(ctx) };
        const hook = await client.call<Webhook>('POST', '/v0/webhooks', { body });
        showHook(ctx, hook, `Created webhook ${hook.webhook_id}.`);
      },
    },
    update: {
      summary: 'Enable or disable, replace the event types, add or remove inboxes or pods.',
      usage: '<webhook_id>',
      args: [1, 1],
      options: [opt('enable', 'Enable it (also clears a disable after failures).'), opt('disable', 'Disable it.'), opt('event TYPE...', 'The new event types.'), opt('add-inbox ADDRESS...', 'Add an inbox.'), opt('remove-inbox ADDRESS...', 'Remove an inbox.'), opt('add-pod POD_ID...', 'Add a pod to the pod filter.'), opt('remove-pod POD_ID...', 'Remove a pod from the pod filter.')],
      examples: ['svc webhooks update 0190f4c2-… --disable'],
      async run(ctx) {
        if (ctx.bool('enable') && ctx.bool('disable')) throw new CliError('validation_error', '--enable and --disable exclude each other.');
        const list = (n: string) => (ctx.list(n, true).length ? ctx.list(n, true) : undefined);
        const body = { enabled: ctx.bool('enable') ? true : ctx.bool('disable') ? false : undefined, event_types: list('event'), add_inbox_ids: list('add-inbox'), remove_inbox_ids: list('remove-inbox'), add_pod_ids: list('add-pod'), remove_pod_ids: list('remove-pod') };
        const client = await ctx.client();
        showHook(ctx, await client.call<Webhook>('PATCH', `/v0/webhooks/${enc(ctx.args[0])}`, { body }), 'Updated.');
      },
    },
    delete: {
      summary: 'Delete a webhook.',
      usage: '<webhook_id>',
      args: [1, 1],
      examples: ['svc webhooks delete 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        await client.call('DELETE', `/v0/webhooks/${enc(ctx.args[0])}`);
        if (ctx.json) return printJson({ deleted: true, webhook_id: ctx.args[0] });
        out(`Deleted webhook ${ctx.args[0]}.`);
      },
    },
  },
};
