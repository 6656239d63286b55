/**
 * `svc quarantine`: inbound mail that could not be processed (spec §2.11, §4.13; owner, local
 * only). Retry of a queue-message item is not_supported (exit 9); a retry while its deletion is
 * pending, or with a missing or different edge buffer, is action_required (exit 6).
 */
import { enc, opt, type Group } from './commands.js';
import { fields, out, pageTable, printJson, type Column, WHOLE } from './output.js';
import type { QuarantineItem } from '../inbound/schemas.js';

const COLUMNS: Column<QuarantineItem>[] = [
  ['ITEM', (i) => i.quarantine_id, WHOLE],
  ['KIND', (i) => i.source_kind],
  ['REASON', (i) => i.reason_code],
  ['STATUS', (i) => i.status],
  ['INBOX', (i) => i.inbox_id, WHOLE],
  ['SIZE', (i) => i.size],
  ['ATTEMPTS', (i) => i.attempts ?? '?'],
  ['FIRST SEEN', (i) => i.first_seen],
];

export const group: Group = {
  name: 'quarantine',
  summary: 'inbound mail that could not be processed (owner, local only)',
  actions: {
    list: {
      summary: 'List quarantined items (metadata only; nothing is decrypted).',
      options: [opt('limit N', 'Items per page, 1–100.'), opt('page-token T', 'Continue from next_page_token.')],
      examples: ['svc quarantine list'],
      async run(ctx) {
        const client = await ctx.client();
        const page = await client.call<{ items: QuarantineItem[]; next_page_token?: string }>('GET', '/v0/owner/quarantine', { query: { limit: ctx.int('limit', 1, 100), page_token: ctx.str('page-token') } });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.items, COLUMNS, 'Nothing is quarantined.'));
      },
    },
    retry: {
      summary: 'Process a quarantined buffer object again: released, or still quarantined with the new reason.',
      usage: '<quarantine_id>',
      args: [1, 1],
      examples: ['svc quarantine retry 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        const result = await client.call<{ status: string; item?: QuarantineItem }>('POST', `/v0/owner/quarantine/${enc(ctx.args[0])}/retry`, { body: {} });
        if (ctx.json) return printJson(result);
        if (result.status === 'released') return out(`Released ${ctx.args[0]}: it was processed (the receive lists still applied).`);
        out(`Still quarantined:\n${fields([['reason', result.item?.reason_code], ['attempts', result.item?.attempts]])}`);
      },
    },
    delete: {
      summary: 'Delete an item and its ciphertext at the edge, permanently (repeating is fine).',
      usage: '<quarantine_id>',
      args: [1, 1],
      examples: ['svc quarantine delete 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        await client.call('DELETE', `/v0/owner/quarantine/${enc(ctx.args[0])}`);
        if (ctx.json) return printJson({ deleted: true, quarantine_id: ctx.args[0] });
        out(`Deleted ${ctx.args[0]}.`);
      },
    },
  },
};
