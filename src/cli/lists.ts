/**
 * `svc lists`: allow and block lists, global or per inbox (spec §2.7, §4.8), and the owner's
 * inbound rejection records (§4.13).
 */
import { CliError } from './exit-codes.js';
import { enc, opt, type Ctx, type Group } from './commands.js';
import { out, pageTable, printJson, type Column, WHOLE } from './output.js';
import type { ListEntry } from '../mail/lists.js';

const COLUMNS: Column<ListEntry>[] = [
  ['ENTRY', (e) => e.entry],
  ['TYPE', (e) => e.entry_type],
  ['LIST', (e) => `${e.direction}/${e.list_type}`],
  ['INBOX', (e) => e.inbox_id ?? 'global', WHOLE],
  ['REASON', (e) => e.reason],
  ['CREATED', (e) => e.created_at],
];

const DIRECTIONS = ['receive', 'send', 'reply'];
const TYPES = ['allow', 'block'];
const inboxOpt = opt('inbox ADDRESS', 'The inbox list (default: the global list).');
const pageOpts = [opt('limit N', 'Items per page, 1–100.'), opt('page-token T', 'Continue from next_page_token.')];

function listPath(ctx: Ctx): string {
  const [direction, type] = ctx.args;
  if (!DIRECTIONS.includes(direction)) throw new CliError('validation_error', `The direction is one of ${DIRECTIONS.join(', ')}.`, 'e.g. `svc lists show receive block`');
  if (!TYPES.includes(type)) throw new CliError('validation_error', `The list type is allow or block.`, 'e.g. `svc lists show receive block`');
  const inbox = ctx.str('inbox');
  return `${inbox ? `/v0/inboxes/${enc(inbox)}` : '/v0'}/lists/${direction}/${type}`;
}

export const group: Group = {
  name: 'lists',
  summary: 'allow and block lists, and rejected inbound mail',
  notes: 'Directions: receive (inbound senders), send (recipients), reply (recipients of replies). Types: allow, block. An entry is an address or a domain.',
  actions: {
    show: {
      summary: 'List the entries of one list.',
      usage: '<direction> <type>',
      args: [2, 2],
      options: [inboxOpt, ...pageOpts],
      examples: ['svc lists show receive block', 'svc lists show send allow --inbox hello@example.com --json'],
      async run(ctx) {
        const client = await ctx.client();
        const page = await client.call<{ entries: ListEntry[]; next_page_token?: string }>('GET', listPath(ctx), { query: { limit: ctx.int('limit', 1, 100), page_token: ctx.str('page-token') } });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.entries, COLUMNS, 'The list is empty.'));
      },
    },
    add: {
      summary: 'Add an address or domain to a list.',
      usage: '<direction> <type> <entry>',
      args: [3, 3],
      options: [inboxOpt, opt('reason TEXT', 'Why (kept with the entry).')],
      examples: ['svc lists add receive block spam.example --reason "newsletters"'],
      async run(ctx) {
        const client = await ctx.client();
        const entry = await client.call<ListEntry>('POST', listPath(ctx), { body: { entry: ctx.args[2], reason: ctx.str('reason') } });
        if (ctx.json) return printJson(entry);
        out(`Added ${entry.entry} to the ${entry.direction} ${entry.list_type} list${entry.inbox_id ? ` of ${entry.inbox_id}` : ''}.`);
      },
    },
    get: {
      summary: 'Show one entry.',
      usage: '<direction> <type> <entry>',
      args: [3, 3],
      options: [inboxOpt],
      examples: ['svc lists get receive block spam.example'],
      async run(ctx) {
        const client = await ctx.client();
        const entry = await client.call<ListEntry>('GET', `${listPath(ctx)}/${enc(ctx.args[2])}`);
        if (ctx.json) return printJson(entry);
        out(pageTable({}, [entry], COLUMNS, ''));
      },
    },
    remove: {
      summary: 'Remove an entry from a list.',
      usage: '<direction> <type> <entry>',
      args: [3, 3],
      options: [inboxOpt],
      examples: ['svc lists remove receive block spam.example'],
      async run(ctx) {
        const client = await ctx.client();
        await client.call('DELETE', `${listPath(ctx)}/${enc(ctx.args[2])}`);
        if (ctx.json) return printJson({ deleted: true, entry: ctx.args[2] });
        out(`Removed ${ctx.args[2]}.`);
      },
    },
    rejections: {
      summary: 'List inbound mail rejected by the lists (metadata only; owner).',
      options: [opt('inbox ADDRESS', 'Only this inbox.'), ...pageOpts],
      examples: ['svc lists rejections --inbox hello@example.com'],
      async run(ctx) {
        const client = await ctx.client();
        const page = await client.call<{ rejections: Record<string, unknown>[]; next_page_token?: string }>('GET', '/v0/owner/lists/rejections', {
          query: { inbox_id: ctx.str('inbox'), limit: ctx.int('limit', 1, 100), page_token: ctx.str('page-token') },
        });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.rejections, [['REJECTION', (r) => r.rejection_id, WHOLE], ['INBOX', (r) => r.inbox_id, WHOLE], ['FROM', (r) => r.sender], ['REASON', (r) => r.reason], ['AT', (r) => r.created_at]], 'No rejections.'));
      },
    },
    'delete-rejection': {
      summary: 'Delete a rejection record (owner).',
      usage: '<rejection_id>',
      args: [1, 1],
      examples: ['svc lists delete-rejection 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        await client.call('DELETE', `/v0/owner/lists/rejections/${enc(ctx.args[0])}`);
        if (ctx.json) return printJson({ deleted: true, rejection_id: ctx.args[0] });
        out(`Deleted rejection ${ctx.args[0]}.`);
      },
    },
  },
};
