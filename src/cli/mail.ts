/**
 * `svc threads` and `svc messages`: list, search, read, label, delete, and export (raw MIME and
 * attachments through their download URLs, spec §4.4, §4.5, §4.7).
 */
import fs from 'node:fs';
import { CliError } from './exit-codes.js';
import { enc, opt, PAGE_OPTIONS, pageQuery, type Ctx, type Group, type Option } from './commands.js';
import { inboxOption, resolveInbox } from './inboxes.js';
import { bodyText, cell, fields, out, pageTable, printJson, type Column, WHOLE } from './output.js';
import type { Message, MessageItem, Thread, ThreadItem } from '../mail/serialize.js';
import { DEFAULT_WAIT_S, MAX_WAIT_S } from '../mail/limits.js';

const THREAD_COLUMNS: Column<ThreadItem>[] = [
  ['THREAD', (t) => t.thread_id, WHOLE],
  ['INBOX', (t) => t.inbox_id, WHOLE],
  ['LAST', (t) => t.timestamp],
  ['MSGS', (t) => t.message_count],
  ['FROM', (t) => t.senders, 30],
  ['SUBJECT', (t) => t.subject, 50],
  ['LABELS', (t) => t.labels],
];

const MESSAGE_COLUMNS: Column<MessageItem>[] = [
  // The id is whole (it is pasted into `svc messages show`); the free-text columns give way.
  ['MESSAGE', (m) => m.message_id, WHOLE],
  ['DATE', (m) => m.timestamp],
  ['FROM', (m) => m.from, 24],
  ['SUBJECT', (m) => m.subject, 40],
  ['LABELS', (m) => m.labels],
];

const FILTER_OPTIONS: Option[] = [
  opt('label LABEL...', 'Only mail with this label.'),
  opt('before TIME', 'Only mail before this RFC 3339 time.'),
  opt('after TIME', 'Only mail after this RFC 3339 time.'),
  opt('include KIND...', 'Also hidden mail: spam, blocked, unauthenticated or trash (needs label_*_read).'),
];

const HIDDEN = ['spam', 'blocked', 'unauthenticated', 'trash'];

/** The hidden kinds of --include, checked. */
function filterQueryIncludes(ctx: Ctx): string[] {
  const kinds = ctx.list('include', true);
  for (const kind of kinds) if (!HIDDEN.includes(kind)) throw new CliError('validation_error', `--include ${kind}: use ${HIDDEN.join(', ')}.`);
  return kinds;
}

function filterQuery(ctx: Ctx): Record<string, string | string[] | boolean | number | undefined> {
  const include: Record<string, boolean> = {};
  for (const kind of filterQueryIncludes(ctx)) include[`include_${kind}`] = true;
  return { ...pageQuery(ctx), labels: ctx.list('label'), before: ctx.str('before'), after: ctx.str('after'), ...include };
}

const labelOptions = [opt('add LABEL...', 'Add a label (unread or your own).'), opt('remove LABEL...', 'Remove a label.')];

function labelEdit(ctx: Ctx): { add_labels?: string[]; remove_labels?: string[] } {
  const add = ctx.list('add', true);
  const remove = ctx.list('remove', true);
  if (!add.length && !remove.length) throw new CliError('validation_error', 'Give --add or --remove.', 'e.g. --add important --remove unread');
  return { ...(add.length ? { add_labels: add } : {}), ...(remove.length ? { remove_labels: remove } : {}) };
}

function showMessage(m: Message): string {
  const head = fields([
    ['message', m.message_id],
    ['thread', m.thread_id],
    ['inbox', m.inbox_id],
    ['date', m.timestamp],
    ['from', m.from],
    ['to', m.to],
    ...(m.cc?.length ? ([['cc', m.cc]] as [string, unknown][]) : []),
    ['subject', m.subject],
    ['labels', m.labels],
    ...(m.send_status ? ([['send status', `${m.send_status}${m.send_reason ? ` (${m.send_reason})` : ''}`]] as [string, unknown][]) : []),
    ...m.attachments.map((a) => ['attachment', `${a.attachment_id}  ${cell(a.filename)}  ${cell(a.content_type)}  ${a.size} bytes`] as [string, unknown]),
  ]);
  const body = m.text ?? m.extracted_text ?? (m.html ? '(HTML only; see --json for the html field)' : '(no body)');
  return `${head}\n\n${bodyText(body)}`;
}

/** Fetches a download URL (no credential: the URL is the capability) to a file or stdout. */
async function download(ctx: Ctx, link: { download_url: string; expires_at: string }, what: string): Promise<void> {
  const output = ctx.str('output');
  if (ctx.json && !output) return printJson(link);
  let res: Response;
  try {
    res = await fetch(link.download_url, { redirect: 'error' });
  } catch {
    throw new CliError('service_unavailable', `The download URL for the ${what} did not answer.`, 'Check that the service is still running, then try again.');
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new CliError(res.status === 403 ? 'missing_permission' : res.status === 401 ? 'unauthorized' : 'not_found', `The ${what} could not be downloaded (${res.status}).`, 'Ask again: download URLs last five minutes and end when the service restarts.');
  }
  const bytes = Buffer.from(await res.arrayBuffer());
  if (!output || output === '-') {
    await new Promise<void>((resolve, reject) => process.stdout.write(bytes, (err) => (err ? reject(err) : resolve())));
    return;
  }
  // Mail is private: the file is readable by this user only.
  fs.writeFileSync(output, bytes, { mode: 0o600 });
  if (ctx.json) printJson({ path: output, bytes: bytes.length });
  else out(`Wrote the ${what} (${bytes.length} bytes) to ${output}.`);
}

const outputOption = opt('output FILE', 'Write to FILE instead of stdout (with --json and no --output: print the download URL).');

export const threads: Group = {
  name: 'threads',
  summary: 'list, search, read, label and delete conversations',
  actions: {
    list: {
      summary: 'List threads, newest first: of one inbox with --inbox, else of every inbox in scope.',
      options: [opt('inbox ADDRESS', 'Only this inbox.'), ...PAGE_OPTIONS, ...FILTER_OPTIONS, opt('sender ADDRESS...', 'Only threads with this sender.'), opt('recipient ADDRESS...', 'Only threads with this recipient.'), opt('subject TEXT...', 'Subject contains.')],
      examples: ['svc threads list --inbox hello@example.com', 'svc threads list --label unread --json'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = ctx.str('inbox');
        const path = inbox ? `/v0/inboxes/${enc(inbox)}/threads` : '/v0/threads';
        const query = { ...filterQuery(ctx), senders: ctx.list('sender'), recipients: ctx.list('recipient'), subject: ctx.list('subject') };
        const page = await client.call<{ threads: ThreadItem[]; next_page_token?: string }>('GET', path, { query });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.threads, THREAD_COLUMNS, 'No threads.'));
      },
    },
    search: {
      summary: 'Full-text search, ranked by relevance (never hidden mail).',
      usage: '<query>',
      args: [1, 1],
      options: [opt('inbox ADDRESS', 'Only this inbox.'), opt('limit N', 'Items per page, 1–100.'), opt('page-token T', 'Continue from next_page_token.'), opt('before TIME', 'Before this time.'), opt('after TIME', 'After this time.')],
      examples: ['svc threads search "invoice march"'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = ctx.str('inbox');
        const path = inbox ? `/v0/inboxes/${enc(inbox)}/threads/search` : '/v0/threads/search';
        const page = await client.call<{ threads: ThreadItem[]; next_page_token?: string }>('GET', path, {
          query: { q: ctx.args[0], limit: ctx.int('limit', 1, 100), page_token: ctx.str('page-token'), before: ctx.str('before'), after: ctx.str('after') },
        });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.threads, THREAD_COLUMNS, 'No thread matches.'));
      },
    },
    show: {
      summary: 'Show a thread with its messages (the newest page, oldest first).',
      usage: '<thread_id>',
      args: [1, 1],
      options: [opt('inbox ADDRESS', 'The inbox (optional: threads are found across the scope).')],
      examples: ['svc threads show 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = ctx.str('inbox');
        const thread = await client.call<Thread>('GET', inbox ? `/v0/inboxes/${enc(inbox)}/threads/${enc(ctx.args[0])}` : `/v0/threads/${enc(ctx.args[0])}`);
        if (ctx.json) return printJson(thread);
        const head = fields([['thread', thread.thread_id], ['inbox', thread.inbox_id], ['subject', thread.subject], ['messages', thread.message_count], ['labels', thread.labels]]);
        out([head, ...thread.messages.map((m) => `${'-'.repeat(60)}\n${showMessage(m)}`)].join('\n\n'));
      },
    },
    label: {
      summary: 'Add or remove labels on every message of a thread.',
      usage: '<thread_id>',
      args: [1, 1],
      options: [opt('inbox ADDRESS', 'The inbox (optional).'), ...labelOptions],
      examples: ['svc threads label 0190f4c2-… --remove unread --add done'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = ctx.str('inbox');
        const result = await client.call<{ thread_id: string; labels: string[] }>('PATCH', inbox ? `/v0/inboxes/${enc(inbox)}/threads/${enc(ctx.args[0])}` : `/v0/threads/${enc(ctx.args[0])}`, { body: labelEdit(ctx) });
        if (ctx.json) return printJson(result);
        out(`Labels of ${result.thread_id}: ${cell(result.labels)}`);
      },
    },
    delete: {
      summary: 'Delete a thread and its messages, permanently.',
      usage: '<thread_id>',
      args: [1, 1],
      options: [opt('inbox ADDRESS', 'The inbox (optional).')],
      examples: ['svc threads delete 0190f4c2-…'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = ctx.str('inbox');
        await client.call('DELETE', inbox ? `/v0/inboxes/${enc(inbox)}/threads/${enc(ctx.args[0])}` : `/v0/threads/${enc(ctx.args[0])}`);
        if (ctx.json) return printJson({ deleted: true, thread_id: ctx.args[0] });
        out(`Deleted thread ${ctx.args[0]}.`);
      },
    },
  },
};

const base = (inbox: string) => `/v0/inboxes/${enc(inbox)}/messages`;

export const messages: Group = {
  name: 'messages',
  summary: 'list, search, read, label, delete and export messages of an inbox',
  notes: 'Message ids are Message-IDs such as <abc@example.com>; quote them in the shell.',
  actions: {
    list: {
      summary: 'List the messages of an inbox, newest first.',
      options: [inboxOption, ...PAGE_OPTIONS, ...FILTER_OPTIONS, opt('from TEXT...', 'From contains.'), opt('to TEXT...', 'To contains.'), opt('subject TEXT...', 'Subject contains.')],
      examples: ['svc messages list --inbox hello@example.com', 'svc messages list --label unread --json'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        const page = await client.call<{ messages: MessageItem[]; next_page_token?: string }>('GET', base(inbox), { query: { ...filterQuery(ctx), from: ctx.list('from'), to: ctx.list('to'), subject: ctx.list('subject') } });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.messages, MESSAGE_COLUMNS, `No messages in ${inbox}.`));
      },
    },
    search: {
      summary: 'Full-text search of an inbox\'s messages.',
      usage: '<query>',
      args: [1, 1],
      options: [inboxOption, opt('limit N', 'Items per page, 1–100.'), opt('page-token T', 'Continue from next_page_token.'), opt('before TIME', 'Before this time.'), opt('after TIME', 'After this time.')],
      examples: ['svc messages search "quarterly report" --inbox hello@example.com'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        const page = await client.call<{ messages: MessageItem[]; next_page_token?: string }>('GET', `${base(inbox)}/search`, {
          query: { q: ctx.args[0], limit: ctx.int('limit', 1, 100), page_token: ctx.str('page-token'), before: ctx.str('before'), after: ctx.str('after') },
        });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.messages, MESSAGE_COLUMNS, 'No message matches.'));
      },
    },
    wait: {
      summary: 'Wait for the next received message that matches, and show it (exit 2 when none came in time).',
      options: [
        opt('inbox ADDRESS', 'The inbox (default: every inbox the caller can see).'),
        opt('after TIME|MESSAGE_ID', 'Only mail received after this RFC 3339 time or this message (default: now).'),
        opt('from TEXT...', 'From contains.'),
        opt('to TEXT...', 'To contains.'),
        opt('subject TEXT...', 'Subject contains.'),
        opt('timeout SECONDS', `Wait at most this long, 0–${MAX_WAIT_S} (default ${DEFAULT_WAIT_S}).`),
        opt('include KIND...', 'Also hidden mail: spam, blocked, unauthenticated or trash (needs label_*_read).'),
      ],
      examples: ['svc messages wait --inbox signup@example.com --from noreply@service.example --subject verify --timeout 60 --json'],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = ctx.str('inbox');
        const timeout = ctx.int('timeout', 0, MAX_WAIT_S) ?? DEFAULT_WAIT_S;
        const include = Object.fromEntries(filterQueryIncludes(ctx).map((kind) => [`include_${kind}`, true]));
        const m = await client.call<Message | undefined>('GET', inbox ? `${base(inbox)}/wait` : '/v0/messages/wait', {
          query: { after: ctx.str('after'), from: ctx.list('from'), to: ctx.list('to'), subject: ctx.list('subject'), timeout, ...include },
          timeoutMs: (timeout + 15) * 1000,
        });
        if (!m) throw new CliError('no_message', `No matching message arrived within ${timeout} s.`, 'Wait again, with --after set to the time you started so nothing in between is missed.');
        if (ctx.json) return printJson(m);
        out(showMessage(m));
      },
    },
    show: {
      summary: 'Show one message: headers, labels, attachments and the text body.',
      usage: '<message_id>',
      args: [1, 1],
      options: [inboxOption],
      examples: ["svc messages show '<abc@example.com>' --inbox hello@example.com"],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        const m = await client.call<Message>('GET', `${base(inbox)}/${enc(ctx.args[0])}`);
        if (ctx.json) return printJson(m);
        out(showMessage(m));
      },
    },
    raw: {
      summary: 'Export the original MIME (message/rfc822) to stdout or a file.',
      usage: '<message_id>',
      args: [1, 1],
      options: [inboxOption, outputOption],
      examples: ["svc messages raw '<abc@example.com>' --output message.eml"],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        await download(ctx, await client.call('GET', `${base(inbox)}/${enc(ctx.args[0])}/raw`), 'raw message');
      },
    },
    attachment: {
      summary: 'Download one attachment of a message to stdout or a file.',
      usage: '<message_id> <attachment_id>',
      args: [2, 2],
      options: [inboxOption, outputOption],
      examples: ["svc messages attachment '<abc@example.com>' att_1 --output report.pdf"],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        await download(ctx, await client.call('GET', `${base(inbox)}/${enc(ctx.args[0])}/attachments/${enc(ctx.args[1])}`), 'attachment');
      },
    },
    label: {
      summary: 'Add or remove labels on a message.',
      usage: '<message_id>',
      args: [1, 1],
      options: [inboxOption, ...labelOptions],
      examples: ["svc messages label '<abc@example.com>' --remove unread"],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        const result = await client.call<{ message_id: string; labels: string[] }>('PATCH', `${base(inbox)}/${enc(ctx.args[0])}`, { body: labelEdit(ctx) });
        if (ctx.json) return printJson(result);
        out(`Labels of ${result.message_id}: ${cell(result.labels)}`);
      },
    },
    delete: {
      summary: 'Delete a message, permanently.',
      usage: '<message_id>',
      args: [1, 1],
      options: [inboxOption],
      examples: ["svc messages delete '<abc@example.com>' --inbox hello@example.com"],
      async run(ctx) {
        const client = await ctx.client();
        const inbox = await resolveInbox(ctx, client);
        await client.call('DELETE', `${base(inbox)}/${enc(ctx.args[0])}`);
        if (ctx.json) return printJson({ deleted: true, message_id: ctx.args[0] });
        out(`Deleted message ${ctx.args[0]}.`);
      },
    },
  },
};
