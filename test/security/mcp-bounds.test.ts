/**
 * MCP ids keep their REST bounds: an id past the length its REST path parameter allows is
 * refused before any lookup (`validation_error`), never looked up as if it were an id. REST
 * answers the same over-long ids with 400.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startSvc, type RunningSvc } from '../helpers/svc.js';
import { createApiKey, createInbox } from '../helpers/seed.js';

let svc: RunningSvc;
let client: Client;
const INBOX = 'bounds@home.example';

t.before(async () => {
  svc = await startSvc();
  await createInbox(svc, INBOX);
  const { secret } = await createApiKey(svc, { permissions: ['inbox_read', 'message_read', 'list_entry_read'], inboxIds: [INBOX], sendPolicy: 'direct' });
  client = new Client({ name: 'svc-security', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
});
t.teardown(async () => {
  await client?.close();
  await svc?.stop();
});

/** The tool's error code (`answered` when it succeeded, `thrown` when the call failed as a protocol error). */
async function refusal(name: string, args: Record<string, unknown>): Promise<string> {
  try {
    const result = await client.callTool({ name, arguments: args });
    if (result.isError !== true) return 'answered';
    const body = JSON.parse((result.content as { text: string }[])[0].text) as { error?: string; code?: string };
    return body.error ?? body.code ?? 'error';
  } catch {
    return 'thrown';
  }
}

t.test('an unknown id of a sane length is not found; the same id past its bound is refused as invalid', async (t) => {
  t.equal(await refusal('get_message', { inboxId: INBOX, messageId: '<nope@x.test>' }), 'not_found');
  t.equal(await refusal('get_message', { inboxId: INBOX, messageId: `<${'m'.repeat(5_000)}@x.test>` }), 'validation_error');
  t.equal(await refusal('get_thread', { inboxId: INBOX, threadId: 't'.repeat(10_000) }), 'validation_error');
  t.equal(await refusal('get_inbox', { inboxId: `${'i'.repeat(100_000)}@home.example` }), 'validation_error');
});

t.test('ids a tool takes as its own arguments have the same bounds', async (t) => {
  for (const args of [
    { inboxId: INBOX, messageId: '<a@x.test>', attachmentId: 'a'.repeat(10_000) },
    { inboxId: `${'i'.repeat(100_000)}@home.example`, messageId: '<a@x.test>', attachmentId: 'att_1' },
    { threadId: 't'.repeat(10_000), attachmentId: 'att_1' },
  ]) {
    t.equal(await refusal('get_attachment', args), 'validation_error', Object.keys(args).join(','));
  }
  t.equal(await refusal('get_list_entry', { direction: 'receive', listType: 'block', entry: `${'e'.repeat(100_000)}.test` }), 'validation_error');
});
