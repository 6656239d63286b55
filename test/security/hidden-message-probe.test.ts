/**
 * Probing for hidden mail by its Message-ID (issue 32 §5): a key without `label_<name>_read` must
 * not tell a message hidden by that label (spam, blocked, unauthenticated, trash) from one that
 * does not exist. Every surface that takes a Message-ID answers both alike — the same status,
 * code, message and fix — over REST (wait `after=`, get, label edit, delete, raw and attachment
 * downloads, reply, reply-all, forward, a draft's `in_reply_to` / `forward_of`, batch get and
 * update) and MCP (get_message, wait_for_message, update_message, reply, forward, get_attachment);
 * and a key with the label's permission does find the message.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { createApiKey, createInbox } from '../helpers/seed.js';

const enc = encodeURIComponent;
const INBOX = 'probe@hidden.test';
const HIDDEN = ['spam', 'blocked', 'unauthenticated', 'trash'] as const;
const MISSING = '<never-stored@elsewhere.test>';
const hiddenId = (label: string) => `<hidden-${label}@elsewhere.test>`;
const VISIBLE = '<visible-1@elsewhere.test>';

let svc: RunningSvc;
let probe: string;
let client: Client;

/** The parts of an answer that must not differ: status and error body, the probed id written as ID. */
function shape(status: number, body: unknown, id: string): string {
  return `${status} ${JSON.stringify(body ?? null).split(id).join('ID').split(enc(id)).join('ID')}`;
}

t.before(async () => {
  svc = await startSvc();
  await createInbox(svc, INBOX);
  const attachment = (label: string) =>
    [
      `From: x@elsewhere.test`,
      `To: ${INBOX}`,
      `Subject: hidden ${label}`,
      `Message-ID: ${hiddenId(label)}`,
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'hello',
      '--b',
      'Content-Type: application/octet-stream; name="a.bin"',
      'Content-Disposition: attachment; filename="a.bin"',
      'Content-Transfer-Encoding: base64',
      '',
      'AAEC',
      '--b--',
      '',
    ].join('\r\n');
  for (const label of HIDDEN) {
    await seedMail(svc.home, attachment(label), { inboxId: INBOX, hiddenLabels: label === 'trash' ? [] : [label] });
  }
  const trashed = await api(svc.url, 'PATCH', `/v0/inboxes/${enc(INBOX)}/messages/${enc(hiddenId('trash'))}`, { token: svc.ownerToken, body: { add_labels: ['trash'] } });
  if (trashed.status !== 200) throw new Error(`trash: ${trashed.status} ${trashed.text}`);
  await seedMail(svc.home, simpleMail({ from: 'x@elsewhere.test', to: INBOX, subject: 'visible', messageId: VISIBLE }), { inboxId: INBOX });
  probe = (
    await createApiKey(svc, {
      permissions: ['inbox_read', 'message_read', 'message_update', 'message_delete', 'message_send', 'message_reply', 'draft_create', 'draft_read'],
      inboxIds: [INBOX],
      sendPolicy: 'approval',
    })
  ).secret;
  client = new Client({ name: 'svc-security', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${probe}` } } }));
});
t.teardown(async () => {
  await client?.close();
  await svc?.stop();
});

type Probe = (id: string) => Promise<{ status: number; body: unknown }>;
const rest =
  (method: string, path: (id: string) => string, body?: (id: string) => unknown): Probe =>
  async (id) => {
    const res = await api(svc.url, method, path(id), { token: probe, body: body?.(id) });
    return { status: res.status, body: res.body };
  };
const base = `/v0/inboxes/${enc(INBOX)}`;
const mcp =
  (name: string, args: (id: string) => Record<string, unknown>): Probe =>
  async (id) => {
    const result = await client.callTool({ name, arguments: args(id) });
    return { status: result.isError === true ? 1 : 0, body: (result.content as { text: string }[])[0]?.text };
  };

const PROBES: [string, Probe][] = [
  ['wait after=', rest('GET', (id) => `${base}/messages/wait?after=${enc(id)}&timeout=0`)],
  ['wait after= without brackets', rest('GET', (id) => `${base}/messages/wait?after=${enc(id.slice(1, -1))}&timeout=0`)],
  ['instance-wide wait after=', rest('GET', (id) => `/v0/messages/wait?after=${enc(id)}&timeout=0`)],
  ['get', rest('GET', (id) => `${base}/messages/${enc(id)}`)],
  ['label edit', rest('PATCH', (id) => `${base}/messages/${enc(id)}`, () => ({ add_labels: ['probe'] }))],
  ['label edit removing unread', rest('PATCH', (id) => `${base}/messages/${enc(id)}`, () => ({ remove_labels: ['unread'] }))],
  ['raw download', rest('GET', (id) => `${base}/messages/${enc(id)}/raw`)],
  ['attachment download', rest('GET', (id) => `${base}/messages/${enc(id)}/attachments/att_000000000000000000000000`)],
  ['reply', rest('POST', (id) => `${base}/messages/${enc(id)}/reply`, () => ({ text: 'hi' }))],
  ['reply-all', rest('POST', (id) => `${base}/messages/${enc(id)}/reply-all`, () => ({ text: 'hi' }))],
  ['forward', rest('POST', (id) => `${base}/messages/${enc(id)}/forward`, () => ({ to: 'y@elsewhere.test', text: 'hi' }))],
  ['draft in_reply_to', rest('POST', () => `${base}/drafts`, (id) => ({ in_reply_to: id, text: 'hi' }))],
  ['draft forward_of', rest('POST', () => `${base}/drafts`, (id) => ({ forward_of: id, to: 'y@elsewhere.test', text: 'hi' }))],
  ['batch get', rest('POST', () => `${base}/messages/batch-get`, (id) => ({ message_ids: [id] }))],
  ['batch update', rest('POST', () => `${base}/messages/batch-update`, (id) => ({ message_ids: [id], add_labels: ['probe'] }))],
  ['delete', rest('DELETE', (id) => `${base}/messages/${enc(id)}`)],
  ['MCP get_message', mcp('get_message', (id) => ({ inboxId: INBOX, messageId: id }))],
  ['MCP wait_for_message after', mcp('wait_for_message', (id) => ({ inboxId: INBOX, after: id, timeout: 0 }))],
  ['MCP update_message', mcp('update_message', (id) => ({ inboxId: INBOX, messageId: id, addLabels: ['probe'] }))],
  ['MCP reply_to_message', mcp('reply_to_message', (id) => ({ inboxId: INBOX, messageId: id, text: 'hi' }))],
  ['MCP forward_message', mcp('forward_message', (id) => ({ inboxId: INBOX, messageId: id, to: ['y@elsewhere.test'], text: 'hi' }))],
  ['MCP get_attachment', mcp('get_attachment', (id) => ({ inboxId: INBOX, messageId: id, attachmentId: 'att_000000000000000000000000' }))],
];

t.test('a message hidden by a label the key cannot read answers exactly like a missing one, on every surface', async (t) => {
  for (const [name, run] of PROBES) {
    const missing = await run(MISSING);
    // Batch reads and edits leave an unknown id out; everything else says not_found.
    const refused = name.startsWith('batch') ? missing.status === 200 : missing.status !== 200 && JSON.stringify(missing.body).includes('not_found');
    t.ok(refused, `${name}: a missing message is not found (${missing.status} ${JSON.stringify(missing.body).slice(0, 200)})`);
    for (const label of HIDDEN) {
      const hidden = await run(hiddenId(label));
      t.equal(shape(hidden.status, hidden.body, hiddenId(label)), shape(missing.status, missing.body, MISSING), `${name}: hidden by ${label} = missing`);
    }
  }
  // The probes changed nothing: the owner still sees every hidden message with its labels.
  for (const label of HIDDEN) {
    const seen = await api<{ labels: string[] }>(svc.url, 'GET', `${base}/messages/${enc(hiddenId(label))}`, { token: svc.ownerToken });
    t.equal(seen.status, 200, `${label}: still stored`);
    t.ok(seen.body.labels.includes(label) && !seen.body.labels.includes('probe'), `${label}: labels untouched`);
  }
});

t.test('the probe works for a visible message and, with the label permission, for the hidden one', async (t) => {
  const visible = await api(svc.url, 'GET', `${base}/messages/wait?after=${enc(VISIBLE)}&timeout=0`, { token: probe });
  t.equal(visible.status, 204, 'a visible after= message is a starting point: nothing newer yet');
  const spamReader = (await createApiKey(svc, { permissions: ['message_read', 'label_spam_read'], inboxIds: [INBOX], sendPolicy: 'read_only' })).secret;
  const hidden = await api(svc.url, 'GET', `${base}/messages/wait?after=${enc(hiddenId('spam'))}&timeout=0`, { token: spamReader });
  t.not(hidden.status, 404, 'a key that may read spam can wait after a spam message');
  const other = await api(svc.url, 'GET', `${base}/messages/wait?after=${enc(hiddenId('blocked'))}&timeout=0`, { token: spamReader });
  t.equal(other.status, 404, 'but not after a message hidden by another label');
});
