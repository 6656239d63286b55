/**
 * `svc send`, `svc reply`, `svc forward` (spec §2.4, §4.5) and `svc resolve` for send_unknown
 * messages (§3.2). The body comes from --text/--html, --text-file/--html-file (`-` is stdin), or
 * stdin when none is given and stdin is not a terminal. --attach reads files into base64; an
 * http(s) URL is passed on as a URL attachment, which the service refuses with not_supported.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CliError } from './exit-codes.js';
import { enc, opt, type Ctx, type Group, type Option } from './commands.js';
import { inboxOption, resolveInbox } from './inboxes.js';
import { out, printJson } from './output.js';

/** Common types by extension; anything else is sent as application/octet-stream. */
const CONTENT_TYPES: Record<string, string> = {
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.csv': 'text/csv',
  '.json': 'application/json',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.ics': 'text/calendar',
  '.eml': 'message/rfc822',
};

const bodyOptions: Option[] = [
  opt('subject TEXT', 'The subject (replies and forwards derive it).'),
  opt('text TEXT', 'The plain-text body.'),
  opt('html HTML', 'The HTML body.'),
  opt('text-file FILE', 'Read the plain-text body from FILE (- for stdin).'),
  opt('html-file FILE', 'Read the HTML body from FILE (- for stdin).'),
  opt('attach FILE...', 'Attach a file (up to 32; the whole message stays under 5 MiB).'),
  opt('header NAME:VALUE...', 'An X-* or Auto-Submitted header.'),
  opt('label LABEL...', 'A label for the sent message.'),
  opt('idempotency-key KEY', 'Repeat-safe send: the same key and payload returns the first result.'),
];

const recipientOptions: Option[] = [opt('to ADDRESS...', 'A recipient.'), opt('cc ADDRESS...', 'A Cc recipient.'), opt('bcc ADDRESS...', 'A Bcc recipient.'), opt('reply-to ADDRESS', 'The Reply-To address.')];

function attachments(ctx: Ctx): Record<string, string>[] | undefined {
  const files = ctx.list('attach');
  if (files.length === 0) return undefined;
  return files.map((file) => {
    if (/^https?:\/\//i.test(file)) return { url: file } as Record<string, string>;
    let content: Buffer;
    try {
      content = fs.readFileSync(file);
    } catch {
      throw new CliError('validation_error', `--attach: cannot read ${file}.`, 'Check the path and its permissions.');
    }
    const filename = path.basename(file);
    return { filename, content_type: CONTENT_TYPES[path.extname(filename).toLowerCase()] ?? 'application/octet-stream', content: content.toString('base64') };
  });
}

function headers(ctx: Ctx): Record<string, string> | undefined {
  const given = ctx.list('header');
  if (given.length === 0) return undefined;
  const result: Record<string, string> = {};
  for (const h of given) {
    const at = h.indexOf(':');
    if (at <= 0) throw new CliError('validation_error', `--header "${h}" is not NAME:VALUE.`, 'e.g. --header "X-Ticket: 42"');
    result[h.slice(0, at).trim()] = h.slice(at + 1).trim();
  }
  return result;
}

/** The body fields; stdin is read only when `stdinFallback` and no body option was given. */
function bodies(ctx: Ctx, stdinFallback: boolean): { text?: string; html?: string } {
  const text = ctx.str('text') ?? ctx.file('text-file')?.toString('utf8');
  const html = ctx.str('html') ?? ctx.file('html-file')?.toString('utf8');
  if (text !== undefined || html !== undefined) return { text, html };
  if (stdinFallback && !process.stdin.isTTY) return { text: fs.readFileSync(0, 'utf8') };
  if (stdinFallback) throw new CliError('validation_error', 'No body: give --text, --html, --text-file or --html-file, or pipe the text on stdin.', 'e.g. echo "Hello" | svc send --to bob@example.com --subject Hi');
  return {};
}

function composed(ctx: Ctx, opts: { recipients: boolean; subject: boolean; stdin: boolean }): Record<string, unknown> {
  const list = (n: string) => {
    const v = ctx.list(n);
    return v.length ? v : undefined;
  };
  return {
    ...(opts.recipients ? { to: list('to'), cc: list('cc'), bcc: list('bcc') } : {}),
    reply_to: ctx.str('reply-to'),
    ...(opts.subject ? { subject: ctx.str('subject') } : {}),
    ...bodies(ctx, opts.stdin),
    attachments: attachments(ctx),
    headers: headers(ctx),
    labels: list('label'),
  };
}

function idempotency(ctx: Ctx): Record<string, string> | undefined {
  const key = ctx.str('idempotency-key');
  return key ? { 'idempotency-key': key } : undefined;
}

/** The hint names the inbox: without --inbox, an owner with several inboxes gets validation_error. */
function report(ctx: Ctx, result: { message_id: string; thread_id: string }, verb: string, inbox: string): void {
  if (ctx.json) return printJson(result);
  out(`${verb} ${result.message_id} (thread ${result.thread_id}). Follow it with \`svc messages show '${result.message_id}' --inbox ${inbox}\`.`);
}

export const send: Group = {
  name: 'send',
  summary: 'send a new message from an inbox',
  actions: {
    '': {
      summary: 'Send a new message (queued, then handed to the transport). With the approval send policy it becomes a draft awaiting the owner (approval_required, exit 1, with its draft_id).',
      options: [inboxOption, ...recipientOptions, ...bodyOptions],
      examples: ['svc send --inbox hello@example.com --to bob@example.org --subject "Hi" --text "Hello Bob"', 'cat report.md | svc send --to bob@example.org --subject Report --attach report.pdf'],
      async run(ctx) {
        if (ctx.list('to').length + ctx.list('cc').length + ctx.list('bcc').length === 0) throw new CliError('validation_error', 'Give at least one recipient with --to, --cc or --bcc.');
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        const body = composed(ctx, { recipients: true, subject: true, stdin: true });
        report(ctx, await client.call('POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { body, headers: idempotency(ctx) }), 'Queued', inbox);
      },
    },
  },
};

export const reply: Group = {
  name: 'reply',
  summary: 'reply to a message',
  actions: {
    '': {
      summary: 'Reply to a message (to its Reply-To or sender; --all adds the original To and Cc).',
      usage: '<message_id>',
      args: [1, 1],
      options: [inboxOption, opt('all', 'Reply to all.'), ...recipientOptions, ...bodyOptions.filter((o) => o.name !== 'subject')],
      examples: ["svc reply '<abc@example.org>' --inbox hello@example.com --text \"Thanks!\""],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        const all = ctx.bool('all');
        const body = composed(ctx, { recipients: !all, subject: false, stdin: true });
        const route = all ? 'reply-all' : 'reply';
        report(ctx, await client.call('POST', `/v0/inboxes/${enc(inbox)}/messages/${enc(ctx.args[0])}/${route}`, { body, headers: idempotency(ctx) }), 'Queued reply', inbox);
      },
    },
  },
};

export const forward: Group = {
  name: 'forward',
  summary: 'forward a message with its attachments',
  actions: {
    '': {
      summary: 'Forward a message (its attachments included) with an optional note.',
      usage: '<message_id>',
      args: [1, 1],
      options: [inboxOption, ...recipientOptions, ...bodyOptions],
      examples: ["svc forward '<abc@example.org>' --to carol@example.org --text \"FYI\""],
      async run(ctx) {
        if (ctx.list('to').length + ctx.list('cc').length + ctx.list('bcc').length === 0) throw new CliError('validation_error', 'Give at least one recipient with --to, --cc or --bcc.');
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        const body = composed(ctx, { recipients: true, subject: true, stdin: false });
        report(ctx, await client.call('POST', `/v0/inboxes/${enc(inbox)}/messages/${enc(ctx.args[0])}/forward`, { body, headers: idempotency(ctx) }), 'Queued forward', inbox);
      },
    },
  },
};

export const resolve: Group = {
  name: 'resolve',
  summary: 'settle a send_unknown message as sent or failed (owner)',
  actions: {
    '': {
      summary: 'Settle a message whose send outcome is unknown: `sent` (you know it arrived) or `failed` (it did not). Owner only; no call is made to the provider.',
      usage: '<message_id> sent|failed',
      args: [2, 2],
      options: [inboxOption],
      examples: ["svc resolve '<abc@example.com>' sent --inbox hello@example.com", 'svc threads list --label send_unknown'],
      async run(ctx) {
        const [messageId, decision] = ctx.args;
        if (decision !== 'sent' && decision !== 'failed') throw new CliError('validation_error', 'The decision is `sent` or `failed`.');
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        const result = await client.call('POST', `/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}/resolve`, { body: { decision } });
        if (ctx.json) return printJson(result ?? { message_id: messageId, decision });
        out(`Marked ${messageId} as ${decision}.`);
      },
    },
  },
};
