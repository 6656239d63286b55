/**
 * The MCP endpoint (spec §1.8, §4.14, §5.3 step 1) through the SDK's real Client over
 * Streamable HTTP against a real service: authentication and its challenge, origin rules, the
 * tool list with annotations, and tools enforcing the same scope, permissions, send policy,
 * idempotency and error codes as REST. Sending goes to a real SMTP sink on loopback.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Db } from '../../src/db/open.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { fixture, seedMail, simpleMail } from '../helpers/mail.js';
import { startSink, type Sink } from '../helpers/sink.js';

let svc: RunningSvc;
let db: Db;
let sink: Sink;
let n = 0;
const clients: Client[] = [];

const ALL = ['inbox_read', 'message_read', 'message_send', 'message_reply', 'message_update', 'draft_read', 'draft_create', 'draft_send', 'list_entry_read'];
const enc = encodeURIComponent;
const newInbox = () => createInbox(svc, `mcp${++n}@home.example`);
const keyFor = async (inboxes: string[] | null, permissions = ALL, sendPolicy: 'direct' | 'approval' | 'guarded' | 'read_only' = 'direct') =>
  (await createApiKey(svc, { permissions, inboxIds: inboxes, sendPolicy })).secret;

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'svc-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  clients.push(client);
  return client;
}

interface ToolOutcome {
  isError: boolean;
  body: Record<string, unknown>;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolOutcome> {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as { type: string; text: string }[];
  return { isError: result.isError === true, body: JSON.parse(content[0].text) as Record<string, unknown> };
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const rpcHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

t.before(async () => {
  svc = await startSvc();
  db = openHomeDb(svc.home);
  sink = await startSink();
  const res = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { smtp: { host: '127.0.0.1', port: sink.port } } });
  if (res.status !== 200) throw new Error(`transport: ${res.status} ${res.text}`);
});
t.teardown(async () => {
  await Promise.all(clients.map((c) => c.close()));
  db.close();
  await sink.close();
  await svc.stop();
});

t.test('without a credential /mcp is 401 with the exact WWW-Authenticate challenge and a JSON body', async (t) => {
  const challenge = `Bearer resource_metadata="${svc.url}/.well-known/oauth-protected-resource/mcp", scope="svc"`;
  const none = await api(svc.url, 'POST', '/mcp', { body: initialize, headers: rpcHeaders });
  t.equal(none.status, 401);
  t.equal(none.headers.get('www-authenticate'), challenge);
  t.match(none.headers.get('content-type'), /^application\/json/);
  t.equal(none.body.code, 'unauthorized');

  const invalid = await api(svc.url, 'POST', '/mcp', { token: 'svc_key_not-a-real-key', body: initialize, headers: rpcHeaders });
  t.equal(invalid.status, 401, 'an unknown key');
  t.equal(invalid.headers.get('www-authenticate'), challenge);

  const cookie = await api(svc.url, 'GET', '/mcp', { headers: { cookie: 'svc_session=anything' } });
  t.equal(cookie.status, 401, 'cookies are never a credential on /mcp');
  t.equal(cookie.headers.get('www-authenticate'), challenge);
});

t.test('a request whose Origin is not the listener’s own is refused with 403', async (t) => {
  const token = await keyFor(null);
  const foreign = await api(svc.url, 'POST', '/mcp', { token, body: initialize, headers: { ...rpcHeaders, origin: 'http://evil.example' } });
  t.equal(foreign.status, 403);
  t.equal(foreign.body.code, 'forbidden');
  const own = await api(svc.url, 'POST', '/mcp', { token, body: initialize, headers: { ...rpcHeaders, origin: svc.url } });
  t.equal(own.status, 200, 'the own origin is allowed');
});

t.test('the endpoint is stateless: GET and DELETE answer 405 after authentication', async (t) => {
  const res = await api(svc.url, 'GET', '/mcp', { token: await keyFor(null), headers: { accept: 'text/event-stream' } });
  t.equal(res.status, 405);
  t.equal(res.headers.get('allow'), 'POST');
});

t.test('tools/list has every tool, with read-only and destructive annotations', async (t) => {
  const client = await connect(await keyFor(null));
  const { tools } = await client.listTools();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const reads = ['list_inboxes', 'search_inboxes', 'get_inbox', 'list_threads', 'search_threads', 'get_thread', 'list_messages', 'search_messages', 'get_message', 'wait_for_message', 'get_metrics', 'get_usage', 'get_counts', 'get_attachment', 'list_drafts', 'get_draft', 'list_list_entries', 'get_list_entry'];
  const sends = ['send_message', 'reply_to_message', 'reply_all_message', 'forward_message', 'send_draft'];
  const deletes = ['delete_inbox', 'delete_thread', 'delete_draft'];
  const writes = ['create_inbox', 'update_inbox', 'update_thread', 'update_message', 'create_draft', 'update_draft'];
  t.same([...byName.keys()].sort(), [...reads, ...sends, ...deletes, ...writes].sort());
  for (const name of reads) t.match(byName.get(name)!.annotations, { readOnlyHint: true, destructiveHint: false, idempotentHint: true }, name);
  for (const name of [...sends, ...deletes]) t.match(byName.get(name)!.annotations, { readOnlyHint: false, destructiveHint: true }, name);
  for (const name of writes) t.match(byName.get(name)!.annotations, { readOnlyHint: false, destructiveHint: false }, name);
  for (const name of sends.filter((s) => s !== 'send_draft')) t.ok(byName.get(name)!.inputSchema.properties?.idempotencyKey, `${name} takes idempotencyKey`);
  t.equal(byName.get('reply_to_message')!.inputSchema.properties?.replyAll?.type, 'boolean');
});

t.test('list_inboxes returns only the inboxes in the credential’s scope', async (t) => {
  const mine = await newInbox();
  await newInbox();
  const client = await connect(await keyFor([mine]));
  const { isError, body } = await call(client, 'list_inboxes', {});
  t.notOk(isError);
  t.same((body.inboxes as { inbox_id: string }[]).map((i) => i.inbox_id), [mine]);
  t.equal(body.count, 1);
});

t.test('out of scope is not_found before permissions; in scope without the permission is missing_permission', async (t) => {
  const mine = await newInbox();
  const other = await newInbox();
  const client = await connect(await keyFor([mine], ['message_read']));
  const outside = await call(client, 'get_inbox', { inboxId: other });
  t.ok(outside.isError);
  t.match(outside.body, { name: 'NotFoundError', code: 'not_found' });
  const inside = await call(client, 'get_inbox', { inboxId: mine });
  t.ok(inside.isError);
  t.match(inside.body, { code: 'missing_permission' });
  t.match(inside.body.message, /inbox_read/);
  t.ok(inside.body.fix, 'the error carries a fix');
});

t.test('arguments are checked like REST bodies: system labels and unknown arguments are validation_error', async (t) => {
  const inbox = await newInbox();
  const seeded = await seedMail(db, simpleMail({ from: 'alice@remote.example', to: inbox, subject: 'Labels' }), { inboxId: inbox });
  const client = await connect(await keyFor([inbox]));
  const system = await call(client, 'update_message', { inboxId: inbox, messageId: seeded.messageId, addLabels: ['sent'] });
  t.ok(system.isError);
  t.equal(system.body.code, 'validation_error');
  const unknown = await call(client, 'get_inbox', { inboxId: inbox, bogus: 1 });
  t.ok(unknown.isError);
  t.equal(unknown.body.code, 'validation_error');
  const edited = await call(client, 'update_message', { inboxId: inbox, messageId: seeded.messageId, addLabels: ['todo'], removeLabels: 'unread' });
  t.notOk(edited.isError);
  t.same(edited.body, { message_id: seeded.messageId, labels: ['received', 'todo'] });
});

t.test('send and reply through MCP; a reply idempotencyKey reused over REST returns the same ids', async (t) => {
  const inbox = await newInbox();
  const token = await keyFor([inbox]);
  const client = await connect(token);
  const before = sink.messages.length;

  const sent = await call(client, 'send_message', { inboxId: inbox, to: 'bob@remote.example', subject: 'From MCP', text: 'Hello over MCP' });
  t.notOk(sent.isError, JSON.stringify(sent.body));
  t.match(sent.body, { message_id: /^<.+@home\.example>$/, thread_id: String });

  const original = await seedMail(db, simpleMail({ from: 'Alice <alice@remote.example>', to: inbox, subject: 'Question', messageId: '<q-1@remote.example>' }), { inboxId: inbox });
  const args = { inboxId: inbox, messageId: original.messageId, text: 'An answer.', idempotencyKey: 'mcp-reply-1' };
  const reply = await call(client, 'reply_to_message', args);
  t.notOk(reply.isError, JSON.stringify(reply.body));
  t.equal(reply.body.thread_id, original.threadId, 'the reply joins the original thread');
  const again = await call(client, 'reply_to_message', args);
  t.same(again.body, reply.body, 'the same key and payload over MCP returns the original ids');

  const rest = await api(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/${enc(original.messageId)}/reply`, { token, body: { text: 'An answer.' }, headers: { 'idempotency-key': 'mcp-reply-1' } });
  t.equal(rest.status, 200);
  t.same(rest.body, reply.body, 'the REST idempotency store is the same');
  const conflict = await api(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/${enc(original.messageId)}/reply`, { token, body: { text: 'Another answer.' }, headers: { 'idempotency-key': 'mcp-reply-1' } });
  t.equal(conflict.body.code, 'idempotency_conflict');

  const delivered = (await sink.waitFor(before + 2)).slice(before);
  t.equal(delivered.length, 2, 'one send and one reply, each delivered once');
  t.same(delivered.map((m) => m.to).sort(), [['alice@remote.example'], ['bob@remote.example']]);
  const stored = db.prepare("SELECT count(*) AS c FROM messages WHERE inbox_id = ? AND direction = 'outbound'").get(inbox) as { c: number };
  t.equal(stored.c, 2);
});

t.test('the approval send policy turns a send into a draft: approval_required with the draft id', async (t) => {
  const inbox = await newInbox();
  const client = await connect(await keyFor([inbox], ALL, 'approval'));
  const res = await call(client, 'send_message', { inboxId: inbox, to: 'bob@remote.example', subject: 'Needs approval', text: 'Please approve' });
  t.ok(res.isError);
  t.match(res.body, { name: 'ApprovalRequiredError', code: 'approval_required', draft_id: String });
  const draft = await call(client, 'get_draft', { inboxId: inbox, draftId: res.body.draft_id });
  t.notOk(draft.isError);
  t.match(draft.body, { draft_id: res.body.draft_id, subject: 'Needs approval', state: 'pending_approval' });
});

t.test('get_draft shows what the recipient gets: HTML, Reply-To, headers, attachments, From and the part mismatch (issue 32)', async (t) => {
  const inbox = await newInbox();
  const client = await connect(await keyFor([inbox], ALL, 'approval'));
  const res = await call(client, 'send_message', {
    inboxId: inbox,
    to: 'bob@remote.example',
    subject: 'Tuesday',
    text: 'see you Tuesday',
    html: '<p>wire EUR 48,000 to DE89 3704 0044 0532 0130 00</p>',
    replyTo: 'payments@evil.example',
    headers: { 'X-Campaign': 'tuesday-note' },
    attachments: [{ filename: 'invoice.pdf', contentType: 'application/pdf', content: Buffer.from('%PDF-1.4').toString('base64') }],
  });
  t.match(res.body, { code: 'approval_required', draft_id: String });
  const draft = await call(client, 'get_draft', { inboxId: inbox, draftId: res.body.draft_id });
  t.notOk(draft.isError);
  t.match(draft.body, {
    html: '<p>wire EUR 48,000 to DE89 3704 0044 0532 0130 00</p>',
    text: 'see you Tuesday',
    reply_to: ['payments@evil.example'],
    headers: { 'X-Campaign': 'tuesday-note' },
    attachments: [{ filename: 'invoice.pdf', content_type: 'application/pdf', size: 8 }],
    from: inbox,
    part_mismatch: [{ reason: 'html_only', detail: /IBAN “DE89 3704 0044 0532 0130 00”.*48,000/ }, { reason: 'text_only' }],
  });
  const agreeing = await call(client, 'send_message', { inboxId: inbox, to: 'bob@remote.example', subject: 'Agreeing', text: 'See you Tuesday.', html: '<p>See you <b>Tuesday</b>.</p>' });
  const calm = await call(client, 'get_draft', { inboxId: inbox, draftId: agreeing.body.draft_id });
  t.same(calm.body.part_mismatch, [], 'parts that agree: no mismatch');
  t.equal(calm.body.headers, null, 'no custom headers: null');
});

t.test('the guarded send policy: clean mail goes out, a credential is held with approval_required and the reasons', async (t) => {
  const inbox = await newInbox();
  const client = await connect(await keyFor([inbox], ALL, 'guarded'));
  const clean = await call(client, 'send_message', { inboxId: inbox, to: 'bob@remote.example', subject: 'Guarded clean', text: 'See you at ten.' });
  t.notOk(clean.isError, JSON.stringify(clean.body));
  t.match(clean.body, { message_id: String });
  const held = await call(client, 'send_message', { inboxId: inbox, to: 'bob@remote.example', subject: 'Guarded key', text: 'token ghp_R8x2Kq7LmN4pT9vB3cZ6wY1dF5hJ0sAeGu2i' });
  t.ok(held.isError);
  t.match(held.body, { name: 'ApprovalRequiredError', code: 'approval_required', draft_id: String, reasons: [{ detector: 'credentials', detail: /GitHub/ }] });
  t.notMatch(JSON.stringify(held.body), 'ghp_R8x2Kq7LmN4pT9vB3cZ6wY1dF5hJ0sAeGu2i');
  const draft = await call(client, 'get_draft', { inboxId: inbox, draftId: held.body.draft_id });
  t.match(draft.body, { state: 'pending_approval', guard_findings: [{ detector: 'credentials' }] });
});

t.test('the read_only send policy cannot send: missing_permission', async (t) => {
  const inbox = await newInbox();
  const client = await connect(await keyFor([inbox], ALL, 'read_only'));
  const res = await call(client, 'send_message', { inboxId: inbox, to: 'bob@remote.example', subject: 'No', text: 'No' });
  t.ok(res.isError);
  t.equal(res.body.code, 'missing_permission');
  const stored = db.prepare('SELECT count(*) AS c FROM messages WHERE inbox_id = ?').get(inbox) as { c: number };
  t.equal(stored.c, 0, 'nothing stored');
});

t.test('a paused inbox cannot send: inbox_paused, as over REST', async (t) => {
  const inbox = await newInbox();
  const client = await connect(await keyFor([inbox], [...ALL, 'inbox_update']));
  const paused = await call(client, 'update_inbox', { inboxId: inbox, status: 'paused' });
  t.equal(paused.body.status, 'paused');
  const res = await call(client, 'send_message', { inboxId: inbox, to: 'bob@remote.example', subject: 'Paused', text: 'x' });
  t.equal(res.body.code, 'inbox_paused');
});

t.test('get_attachment returns a download URL on the listener origin that serves the bytes without a bearer', async (t) => {
  const inbox = await newInbox();
  const seeded = await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox });
  const row = db
    .prepare("SELECT a.attachment_id, a.content FROM attachments a JOIN messages m ON m.id = a.message_rowid WHERE m.inbox_id = ? AND a.filename = 'photo.png'")
    .get(inbox) as { attachment_id: string; content: Buffer };
  const client = await connect(await keyFor([inbox]));

  const byMessage = await call(client, 'get_attachment', { inboxId: inbox, messageId: seeded.messageId, attachmentId: row.attachment_id });
  t.notOk(byMessage.isError, JSON.stringify(byMessage.body));
  t.match(byMessage.body, { attachment_id: row.attachment_id, filename: 'photo.png', size: row.content.length, download_url: String, expires_at: String });
  t.ok((byMessage.body.download_url as string).startsWith(`${svc.url}/v0/downloads/`));
  const download = await fetch(byMessage.body.download_url as string);
  t.equal(download.status, 200);
  t.equal(Buffer.compare(Buffer.from(await download.arrayBuffer()), row.content), 0, 'the exact bytes');

  const byThread = await call(client, 'get_attachment', { threadId: seeded.threadId, attachmentId: row.attachment_id });
  t.notOk(byThread.isError);
  t.equal((await fetch(byThread.body.download_url as string)).status, 200, 'the thread form works without an inbox id');

  const neither = await call(client, 'get_attachment', { attachmentId: row.attachment_id });
  t.equal(neither.body.code, 'validation_error');
});

t.test('the owner bearer works on /mcp on the loopback listener', async (t) => {
  const inbox = await newInbox();
  const client = await connect(svc.ownerToken);
  const res = await call(client, 'get_inbox', { inboxId: inbox });
  t.notOk(res.isError);
  t.equal(res.body.inbox_id, inbox);
});

t.test('tool results are the REST bodies: get_message, get_thread and list_threads answer what REST answers', async (t) => {
  const inbox = await newInbox();
  const seeded = await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox });
  const token = await keyFor([inbox]);
  const client = await connect(token);
  const rest = async (path: string) => (await api(svc.url, 'GET', path, { token })).body;

  t.same((await call(client, 'get_message', { inboxId: inbox, messageId: seeded.messageId })).body, await rest(`/v0/inboxes/${enc(inbox)}/messages/${enc(seeded.messageId)}`));
  t.same((await call(client, 'get_thread', { threadId: seeded.threadId })).body, await rest(`/v0/threads/${seeded.threadId}`));
  t.same((await call(client, 'list_threads', { inboxId: inbox, limit: 5 })).body, await rest(`/v0/inboxes/${enc(inbox)}/threads?limit=5`));
  t.same((await call(client, 'list_messages', { inboxId: inbox })).body, await rest(`/v0/inboxes/${enc(inbox)}/messages`));
});

t.test('drafts through MCP: create, update, then send_draft delivers it', async (t) => {
  const inbox = await newInbox();
  const client = await connect(await keyFor([inbox], [...ALL, 'draft_update']));
  const before = sink.messages.length;
  const created = await call(client, 'create_draft', { inboxId: inbox, to: ['dora@remote.example'], subject: 'Draft', text: 'First' });
  t.notOk(created.isError, JSON.stringify(created.body));
  const draftId = created.body.draft_id as string;
  const updated = await call(client, 'update_draft', { inboxId: inbox, draftId, text: 'Second', addLabels: ['outreach'] });
  t.match(updated.body, { draft_id: draftId, text: 'Second' });
  const listed = await call(client, 'list_drafts', {});
  t.same((listed.body.drafts as { draft_id: string }[]).map((d) => d.draft_id), [draftId]);
  const sent = await call(client, 'send_draft', { inboxId: inbox, draftId, idempotencyKey: 'draft-send-1' });
  t.notOk(sent.isError, JSON.stringify(sent.body));
  const [delivered] = (await sink.waitFor(before + 1)).slice(before);
  t.same(delivered.to, ['dora@remote.example']);
  t.match(delivered.raw.toString(), /Second/);
  const again = await call(client, 'send_draft', { inboxId: inbox, draftId, idempotencyKey: 'draft-send-1' });
  t.same(again.body, sent.body, 'the same key returns the original ids, not a conflict');
});

t.test('list_list_entries: instance-wide lists need a credential without an inbox restriction', async (t) => {
  const inbox = await newInbox();
  const res = await api(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/lists/send/block`, { token: svc.ownerToken, body: { entry: 'spam.example' } });
  t.equal(res.status, 200);
  const client = await connect(await keyFor([inbox]));
  const entries = await call(client, 'list_list_entries', { inboxId: inbox, direction: 'send', listType: 'block' });
  t.notOk(entries.isError);
  t.same((entries.body.entries as { entry: string }[]).map((e) => e.entry), ['spam.example']);
  const global = await call(client, 'list_list_entries', { direction: 'send', listType: 'block' });
  t.equal(global.body.code, 'missing_permission');
  const blocked = await call(client, 'send_message', { inboxId: inbox, to: 'x@spam.example', subject: 'Hi', text: 'Hi' });
  t.equal(blocked.body.code, 'message_rejected', 'the send list applies to MCP sends');
});

t.test('wait_for_message answers a stored match at once, a new one while waiting, and null at the timeout', async (t) => {
  const inbox = await newInbox();
  const other = await newInbox();
  const client = await connect(await keyFor([inbox]));
  const before = new Date(Date.now() - 60_000).toISOString();
  const seeded = await seedMail(db, simpleMail({ from: 'noreply@service.test', to: inbox, subject: 'Your code' }), { inboxId: inbox });
  const stored = await call(client, 'wait_for_message', { inboxId: inbox, after: before, subject: ['code'], timeout: 0 });
  t.notOk(stored.isError);
  t.equal((stored.body.message as { message_id: string }).message_id, seeded.messageId);

  const pending = call(client, 'wait_for_message', { after: seeded.messageId, from: ['noreply@service.test'], timeout: 20 });
  await new Promise((r) => setTimeout(r, 300));
  const next = await seedMail(db, simpleMail({ from: 'noreply@service.test', to: inbox, subject: 'Second code' }), { inboxId: inbox });
  const answered = await pending;
  t.notOk(answered.isError);
  t.equal((answered.body.message as { message_id: string }).message_id, next.messageId, 'the instance-wide form, answered by new mail');

  const none = await call(client, 'wait_for_message', { inboxId: inbox, subject: ['never'], timeout: 1 });
  t.same(none.body, { message: null });
  const outside = await call(client, 'wait_for_message', { inboxId: other, timeout: 0 });
  t.ok(outside.isError);
  t.match(outside.body, { code: 'not_found' });
});

t.test('get_metrics, get_usage and get_counts count the credential\'s own inboxes, with its permissions', async (t) => {
  const inbox = await newInbox();
  const other = await newInbox();
  const client = await connect(await keyFor([inbox], ['message_read']));
  await seedMail(db, simpleMail({ from: 'a@elsewhere.test', to: inbox, subject: 'counted' }), { inboxId: inbox });
  await seedMail(db, simpleMail({ from: 'a@elsewhere.test', to: other, subject: 'not counted' }), { inboxId: other });
  const events = await call(client, 'get_metrics', { eventTypes: ['message.received'], period: 3600 });
  t.notOk(events.isError);
  t.equal((events.body['message.received'] as { count: number }[]).reduce((n, b) => n + b.count, 0), 1, 'only the key\'s inbox');
  const usage = await call(client, 'get_usage', { inboxId: inbox, usageTypes: ['message_count'], descending: true, limit: 1 });
  t.same((usage.body.message_count as { value: number }[]).map((p) => p.value), [1]);
  const counts = await call(client, 'get_counts', {});
  t.same(counts.body, { unread: 1, inboxes: [{ inbox_id: inbox, unread: 1 }] });
  const outside = await call(client, 'get_metrics', { inboxId: other });
  t.match(outside.body, { code: 'not_found' });
  const bad = await call(client, 'get_metrics', { period: 0 });
  t.ok(bad.isError);
  const spam = await call(client, 'get_metrics', { eventTypes: ['message.received.spam'] });
  t.match(spam.body, { code: 'missing_permission' });
});
