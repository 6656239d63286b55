/**
 * Attachment text (docs/attachments.md) end to end: a message sent over SMTP into the built-in
 * edge with a two-page PDF, a DOCX, an XLSX, a CSV in Latin-1, an HTML page and a plain-text file;
 * each attachment's text is on the attachment answer through the AgentMail SDK (validation on),
 * REST (message and thread routes) and MCP `get_attachment`; search finds a word that only an
 * attachment holds; mail stored before the text was read gets it on the first read, searchable after.
 */
import t, { type Test } from 'tap';
import nodemailer from 'nodemailer';
import { AgentMailClient } from 'agentmail';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { openHomeDb } from '../helpers/db.js';
import { shardTable } from '../../src/mail/search-index.js';
import { createApiKey } from '../helpers/seed.js';
import { until } from '../helpers/until.js';
import { docx, documentXml, pdf, xlsx } from '../helpers/documents.js';

const enc = encodeURIComponent;
const INBOX = 'agent@docs.test';

interface Reading {
  attachment_id: string;
  filename: string;
  extracted_text: string | null;
  extraction: { status: string; truncated: boolean; bytes: number };
}

async function sendWithRetry(svc: RunningSvc, mail: nodemailer.SendMailOptions): Promise<void> {
  const ready = svc.stdoutLines.find((l) => l.event === 'server.ready')!;
  const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: Number(String(ready.smtp).split(':')[1]), secure: false, ignoreTLS: true });
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await smtp.sendMail(mail);
      return;
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

const FILES = {
  'report.pdf': { content: pdf([['Quarterly report', 'Revenue grew by 12 percent'], ['Second page mentions the pangolin']]), contentType: 'application/pdf' },
  'letter.docx': {
    content: Buffer.from(docx(documentXml(['Dear board,', 'Name\tRole', 'The capybara project is approved.']))),
    contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  },
  'budget.xlsx': {
    content: Buffer.from(
      xlsx([
        { name: 'Costs', rows: [['Item', 'Amount'], ['quokka food', 250]] },
        { name: 'Notes', rows: [['approved', 'yes']] },
      ]),
    ),
    contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  },
  'people.csv': { content: Buffer.from('name,city\r\nJosé,Zürich\r\naxolotl,Basel\r\n', 'latin1'), contentType: 'text/csv; charset=iso-8859-1' },
  'page.html': { content: Buffer.from('<html><head><title>hidden title</title><style>.x{}</style></head><body><h1>Narwhal notes</h1><p>First <b>para</b>.</p></body></html>'), contentType: 'text/html; charset=utf-8' },
  'notes.txt': { content: Buffer.from('plain words about the okapi\n'), contentType: 'text/plain; charset=utf-8' },
  'photo.png': { content: Buffer.from('89504e470d0a1a0a', 'hex'), contentType: 'image/png' },
};

const EXPECTED: Record<string, { status: string; text?: RegExp[]; exact?: string }> = {
  'report.pdf': { status: 'ok', text: [/Quarterly report\nRevenue grew by 12 percent/, /\n\nSecond page mentions the pangolin$/] },
  'letter.docx': { status: 'ok', exact: 'Dear board,\nName\tRole\nThe capybara project is approved.' },
  'budget.xlsx': { status: 'ok', exact: 'Costs\nItem\tAmount\nquokka food\t250\n\nNotes\napproved\tyes' },
  'people.csv': { status: 'ok', exact: 'name,city\nJosé,Zürich\naxolotl,Basel' },
  'page.html': { status: 'ok', text: [/Narwhal notes/, /First para\./] },
  'notes.txt': { status: 'ok', exact: 'plain words about the okapi' },
  'photo.png': { status: 'unsupported' },
};

function checkReading(t: Test, r: Reading, how: string) {
  const want = EXPECTED[r.filename];
  t.equal(r.extraction.status, want.status, `${how}: ${r.filename} status`);
  if (want.exact !== undefined) t.equal(r.extracted_text, want.exact, `${how}: ${r.filename} text`);
  for (const re of want.text ?? []) t.match(r.extracted_text, re, `${how}: ${r.filename} text`);
  if (want.status !== 'ok') t.equal(r.extracted_text, null, `${how}: ${r.filename} has no text`);
  t.equal(r.extraction.bytes, r.extracted_text === null ? 0 : Buffer.byteLength(r.extracted_text), `${how}: ${r.filename} bytes`);
  t.equal(r.extraction.truncated, false);
}

t.test('the text of each attachment is on the SDK, REST and MCP answers, and search finds it', async (t) => {
  const dns = await startLoopbackDns({});
  t.teardown(() => dns.close());
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  t.teardown(() => svc.stop());
  const owner = svc.ownerToken;
  t.equal((await api(svc.url, 'POST', '/v0/inboxes', { token: owner, body: { username: 'agent', domain: 'docs.test' } })).status, 200);
  await sendWithRetry(svc, {
    from: 'Sender <someone@elsewhere.test>',
    to: INBOX,
    subject: 'Papers for the meeting',
    text: 'See the attached files.',
    attachments: Object.entries(FILES).map(([filename, f]) => ({ filename, content: f.content, contentType: f.contentType })),
  });

  const { secret } = await createApiKey(svc, { permissions: ['inbox_read', 'message_read'], inboxIds: [INBOX] });
  const sdk = new AgentMailClient({ apiKey: secret, baseUrl: svc.url, maxRetries: 0 });
  const listed = await until('the message arrives', async () => (await sdk.inboxes.messages.list(INBOX)).messages.find((m) => m.subject === 'Papers for the meeting') ?? undefined);
  const message = await sdk.inboxes.messages.get(INBOX, listed.messageId);
  t.equal(message.attachments?.length, Object.keys(FILES).length, 'every attachment is stored');

  // Read at receive time: stored before anyone asked.
  const db = openHomeDb(svc.home);
  t.teardown(() => db.close());
  const stored = db.prepare('SELECT filename, text_status FROM attachments ORDER BY rowid').all() as { filename: string; text_status: string }[];
  t.same(
    Object.fromEntries(stored.map((r) => [r.filename, r.text_status])),
    Object.fromEntries(Object.entries(EXPECTED).map(([name, e]) => [name, e.status])),
    'each attachment was read before its commit',
  );

  for (const a of message.attachments ?? []) {
    const got = (await sdk.inboxes.messages.getAttachment(INBOX, message.messageId, a.attachmentId)) as unknown as Record<string, unknown>;
    t.ok(got.downloadUrl, 'the SDK answer keeps its own fields');
    checkReading(t, { filename: String(got.filename), extracted_text: got.extracted_text as string | null, extraction: got.extraction as Reading['extraction'], attachment_id: a.attachmentId }, 'SDK');
  }

  for (const a of message.attachments ?? []) {
    const viaThread = await api<Reading>(svc.url, 'GET', `/v0/threads/${enc(message.threadId)}/attachments/${a.attachmentId}`, { token: secret });
    t.equal(viaThread.status, 200);
    checkReading(t, viaThread.body, 'REST thread route');
  }

  const mcp = new Client({ name: 'svc-test', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
  t.teardown(() => mcp.close());
  for (const a of message.attachments ?? []) {
    const result = await mcp.callTool({ name: 'get_attachment', arguments: { inboxId: INBOX, messageId: message.messageId, attachmentId: a.attachmentId } });
    t.notOk(result.isError);
    checkReading(t, JSON.parse((result.content as { text: string }[])[0].text) as Reading, 'MCP');
  }

  for (const word of ['pangolin', 'capybara', 'quokka', 'axolotl', 'narwhal', 'okapi']) {
    const found = await api<{ messages: { message_id: string }[] }>(svc.url, 'GET', `/v0/inboxes/${enc(INBOX)}/messages/search?q=${word}`, { token: secret });
    t.same(
      found.body.messages.map((m) => m.message_id),
      [message.messageId],
      `search finds "${word}", only in an attachment`,
    );
  }
  const title = await api<{ messages: unknown[] }>(svc.url, 'GET', `/v0/inboxes/${enc(INBOX)}/messages/search?q=deleted`, { token: secret });
  t.same(title.body.messages, [], "a DOCX's deleted text is not text");

  // Mail whose text was never read (stored before this feature, or sent): read on first read, then searchable.
  db.prepare('UPDATE attachments SET text = NULL, text_status = NULL').run();
  // The test's few messages are in one shard (src/mail/search-index.ts).
  const shards = db.prepare('SELECT k FROM search_shards').pluck().all() as number[];
  t.equal(shards.length, 1, 'one search shard');
  for (const table of shards.map(shardTable)) {
    db.prepare(`DELETE FROM ${table}`).run();
    db.prepare(`INSERT INTO ${table} (rowid, subject, participants, body) SELECT id, subject, '', text FROM messages`).run();
  }
  const before = await api<{ messages: unknown[] }>(svc.url, 'GET', `/v0/inboxes/${enc(INBOX)}/messages/search?q=quokka`, { token: secret });
  t.same(before.body.messages, [], 'not searchable while unread');
  const xlsxId = message.attachments!.find((a) => a.filename === 'budget.xlsx')!.attachmentId;
  const first = await api<Reading>(svc.url, 'GET', `/v0/inboxes/${enc(INBOX)}/messages/${enc(message.messageId)}/attachments/${xlsxId}`, { token: secret });
  checkReading(t, first.body, 'first read of older mail');
  t.equal((db.prepare('SELECT text_status FROM attachments WHERE attachment_id = ?').get(xlsxId) as { text_status: string }).text_status, 'ok', 'kept');
  const after = await api<{ messages: { message_id: string }[] }>(svc.url, 'GET', `/v0/inboxes/${enc(INBOX)}/messages/search?q=quokka`, { token: secret });
  t.same(after.body.messages.map((m) => m.message_id), [message.messageId], 'searchable after its first read');
  const body = await api<{ messages: { message_id: string }[] }>(svc.url, 'GET', `/v0/inboxes/${enc(INBOX)}/messages/search?q=attached`, { token: secret });
  t.same(body.body.messages.map((m) => m.message_id), [message.messageId], 'the body stays searchable after the re-index');
});
