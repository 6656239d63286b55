/**
 * `svc drafts`: list, show, create, approve, reject, send, delete (spec §2.5, §3.2, §4.6). Approve
 * and reject are the owner's answer to agents with the approval send policy. The inbox of a draft
 * is found from its id when --inbox is not given.
 */
import { enc, opt, PAGE_OPTIONS, pageQuery, type Ctx, type Group } from './commands.js';
import { resolveInbox } from './inboxes.js';
import type { ServiceClient } from './owner-client.js';
import { bodyText, fields, out, pageTable, printJson, type Column, WHOLE } from './output.js';
import type { Draft, DraftItem } from '../mail/drafts/schemas.js';
import { htmlAsText } from '../mail/part-mismatch.js';

const COLUMNS: Column<DraftItem>[] = [
  ['DRAFT', (d) => d.draft_id, WHOLE],
  ['INBOX', (d) => d.inbox_id, WHOLE],
  ['STATUS', (d) => d.state],
  ['SEND AT', (d) => d.send_at],
  ['TO', (d) => d.to, 40],
  ['SUBJECT', (d) => d.subject, 50],
];

const inboxOpt = opt('inbox ADDRESS', 'The inbox (default: found from the draft id).');

async function draftInbox(ctx: Ctx, client: ServiceClient): Promise<string> {
  const given = ctx.str('inbox');
  if (given) return given;
  return (await client.call<Draft>('GET', `/v0/drafts/${enc(ctx.args[0])}`)).inbox_id;
}

/**
 * A draft as its approver must see it: every header the recipient gets (From, Reply-To, custom
 * headers), the attachments, both parts (the HTML as the reader sees its text) and svc's warnings
 * where the parts may not say the same thing.
 */
function showDraft(ctx: Ctx, d: Draft, lead?: string): void {
  if (ctx.json) return printJson(d);
  const head = fields([
    ['draft', d.draft_id],
    ['inbox', d.inbox_id],
    ['status', `${d.state}${d.send_reason ? ` (${d.send_reason})` : ''}`],
    ['send at', d.send_at],
    ['from', d.from],
    ['to', d.to],
    ['cc', d.cc],
    ['bcc', d.bcc],
    ['reply to', d.reply_to],
    ['subject', d.subject],
    ...Object.entries(d.headers ?? {}).map(([name, value]) => ['header', `${name}: ${value}`] as [string, unknown]),
    ['replies to', d.in_reply_to],
    ['forwards', d.forward_of && `${d.forward_of} (its text, HTML and attachments are added when sent)`],
    ['labels', d.labels],
    ...d.attachments.map((a) => ['attachment', `${a.attachment_id} ${a.filename ?? '(unnamed)'} ${a.content_type ?? 'no type'} ${a.size} bytes`] as [string, unknown]),
    ...(d.guard_findings ?? []).map((f) => ['guard', `${f.detector}: ${f.detail}`] as [string, unknown]),
    ...(d.part_mismatch ?? []).map((m) => ['MISMATCH', `${m.reason}: ${m.detail}`] as [string, unknown]),
    ['message', d.message_id],
    // The version to pass to `svc drafts approve --expected-updated-at`: approve what was read.
    ['updated at', d.updated_at],
  ]);
  const parts = [
    d.text !== null ? `${d.html !== null ? '--- text part ---\n' : ''}${bodyText(d.text)}` : null,
    d.html !== null ? `--- HTML part, as its reader sees the text (svc drafts show --json has the HTML) ---\n${bodyText(htmlAsText(d.html))}` : null,
  ].filter((p) => p !== null);
  out(`${lead ? `${lead}\n` : ''}${head}${parts.map((p) => `\n\n${p}`).join('')}`);
}

export const group: Group = {
  name: 'drafts',
  summary: 'list, create, approve, reject and send drafts',
  notes: 'Agents with the approval send policy create drafts awaiting approval (status pending_approval): the owner approves or rejects them here.',
  actions: {
    list: {
      summary: 'List drafts, newest first: of one inbox with --inbox, else of every inbox in scope.',
      options: [opt('inbox ADDRESS', 'Only this inbox.'), ...PAGE_OPTIONS, opt('label LABEL...', 'Only drafts with this label.'), opt('status STATUS...', 'Only drafts in this status (draft, pending_approval, scheduled, sending, sent, rejected, failed); repeat for several.')],
      examples: ['svc drafts list --status pending_approval', 'svc drafts list --inbox hello@example.com --json'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = ctx.str('inbox');
        // The service filters by state (the `send_status` query takes svc's `state` names), so
        // every page holds only matching drafts.
        const query = { ...pageQuery(ctx), labels: ctx.list('label'), send_status: ctx.list('status') };
        const page = await client.call<{ drafts: DraftItem[]; next_page_token?: string; count: number }>('GET', inbox ? `/v0/inboxes/${enc(inbox)}/drafts` : '/v0/drafts', { query });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.drafts, COLUMNS, 'No drafts.'));
      },
    },
    show: {
      summary: 'Show one draft.',
      usage: '<draft_id>',
      args: [1, 1],
      options: [opt('inbox ADDRESS', 'The inbox (optional).')],
      examples: ['svc drafts show 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = ctx.str('inbox');
        showDraft(ctx, await client.call<Draft>('GET', inbox ? `/v0/inboxes/${enc(inbox)}/drafts/${enc(ctx.args[0])}` : `/v0/drafts/${enc(ctx.args[0])}`));
      },
    },
    create: {
      summary: 'Create a draft (optionally scheduled with --send-at).',
      options: [
        opt('inbox ADDRESS', 'The inbox (default: the only one visible).'),
        opt('to ADDRESS...', 'A recipient.'),
        opt('cc ADDRESS...', 'A Cc recipient.'),
        opt('bcc ADDRESS...', 'A Bcc recipient.'),
        opt('subject TEXT', 'The subject.'),
        opt('text TEXT', 'The plain-text body.'),
        opt('html HTML', 'The HTML body.'),
        opt('text-file FILE', 'Read the plain-text body from FILE (- for stdin).'),
        opt('send-at TIME', 'Send at this RFC 3339 time (needs draft_send).'),
        opt('in-reply-to MESSAGE_ID', 'Make it a reply to this message.'),
        opt('forward-of MESSAGE_ID', 'Make it a forward of this message.'),
        opt('client-id ID', 'A create key: repeating returns the same draft.'),
      ],
      examples: ['svc drafts create --to bob@example.org --subject Hi --text "Hello" --send-at 2030-01-01T09:00:00Z'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        const list = (n: string) => (ctx.list(n).length ? ctx.list(n) : undefined);
        const body = {
          to: list('to'),
          cc: list('cc'),
          bcc: list('bcc'),
          subject: ctx.str('subject'),
          text: ctx.str('text') ?? ctx.file('text-file')?.toString('utf8'),
          html: ctx.str('html'),
          send_at: ctx.str('send-at'),
          in_reply_to: ctx.str('in-reply-to'),
          forward_of: ctx.str('forward-of'),
          client_id: ctx.str('client-id'),
        };
        const d = await client.call<Draft>('POST', `/v0/inboxes/${enc(inbox)}/drafts`, { body });
        showDraft(ctx, d, `Created draft ${d.draft_id} (${d.state}).`);
      },
    },
    approve: {
      summary: 'Approve a draft awaiting approval (owner): it is sent now, or stays scheduled for its send_at.',
      usage: '<draft_id>',
      args: [1, 1],
      options: [
        inboxOpt,
        opt('idempotency-key KEY', 'Repeat-safe approval.'),
        opt('expected-updated-at TIME', 'Approve only if the draft is still at this version (its "updated at" in svc drafts show); a later edit → conflict.'),
      ],
      examples: ['svc drafts approve 0190f4c2-…', 'svc drafts approve 0190f4c2-… --expected-updated-at 2026-05-01T09:30:00.123Z'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await draftInbox(ctx, client);
        const key = ctx.str('idempotency-key');
        const expected = ctx.str('expected-updated-at');
        const body = expected === undefined ? {} : { expected_updated_at: expected };
        const result = await client.call<Record<string, unknown>>('POST', `/v0/inboxes/${enc(inbox)}/drafts/${enc(ctx.args[0])}/approve`, { body, headers: key ? { 'idempotency-key': key } : undefined });
        if (ctx.json) return printJson(result);
        if (typeof result.draft_id === 'string') return showDraft(ctx, result as unknown as Draft, `Approved; it stays scheduled for ${result.send_at as string}.`);
        out(`Approved and queued ${result.message_id as string} (thread ${result.thread_id as string}).`);
      },
    },
    reject: {
      summary: 'Reject a draft (owner); final.',
      usage: '<draft_id>',
      args: [1, 1],
      options: [inboxOpt, opt('reason TEXT', 'Why (the agent sees it as send_reason).')],
      examples: ['svc drafts reject 0190f4c2-… --reason "Wrong recipient"'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await draftInbox(ctx, client);
        const d = await client.call<Draft>('POST', `/v0/inboxes/${enc(inbox)}/drafts/${enc(ctx.args[0])}/reject`, { body: { reason: ctx.str('reason') } });
        showDraft(ctx, d, `Rejected draft ${d.draft_id}.`);
      },
    },
    send: {
      summary: 'Send a draft now (overrides send_at; needs draft_send).',
      usage: '<draft_id>',
      args: [1, 1],
      options: [inboxOpt, opt('idempotency-key KEY', 'Repeat-safe send.')],
      examples: ['svc drafts send 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await draftInbox(ctx, client);
        const key = ctx.str('idempotency-key');
        const result = await client.call<{ message_id: string; thread_id: string }>('POST', `/v0/inboxes/${enc(inbox)}/drafts/${enc(ctx.args[0])}/send`, { body: {}, headers: key ? { 'idempotency-key': key } : undefined });
        if (ctx.json) return printJson(result);
        out(`Queued ${result.message_id} (thread ${result.thread_id}).`);
      },
    },
    delete: {
      summary: 'Delete a draft.',
      usage: '<draft_id>',
      args: [1, 1],
      options: [inboxOpt],
      examples: ['svc drafts delete 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await draftInbox(ctx, client);
        await client.call('DELETE', `/v0/inboxes/${enc(inbox)}/drafts/${enc(ctx.args[0])}`);
        if (ctx.json) return printJson({ deleted: true, draft_id: ctx.args[0] });
        out(`Deleted draft ${ctx.args[0]}.`);
      },
    },
  },
};
