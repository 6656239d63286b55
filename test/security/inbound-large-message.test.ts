/**
 * Large inbound mail (issue 16, finding 9): a 20 MB message goes through the path that opens
 * large objects one at a time in a worker of their own (bytes in and out by transfer, no string
 * copies of the raw MIME). It arrives intact: the raw download has the sha256 of what was sent
 * over SMTP, and the attachment downloads to the bytes that were encoded. The process's peak RSS
 * rise while it is received, sealed, opened, parsed and stored (the kernel's high-water mark, reset
 * just before) is printed as a comment; the memory target itself is a benchmark
 * (bench/inbound-memory.ts, numbers in docs/inbound.md), not a test assertion.
 */
import fs from 'node:fs';
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { api, startSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { smtpSendRaw } from '../helpers/fuzz.js';

const INBOX = 'large@local.test';
const MESSAGE_ID = '<large-1@elsewhere.test>';
const ATTACHMENT_BYTES = 14 * 1024 * 1024; // ~19 MB once base64-encoded
const DEADLINE_MS = 120_000;
/** VmRSS / VmHWM of a process, in bytes. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

/** Resets the process's peak RSS to its current RSS (proc(5), clear_refs value 5). */
const resetPeak = (pid: number) => fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const enc = encodeURIComponent;

function largeMime(attachment: Buffer): Buffer {
  const base64 = attachment.toString('base64').replace(/.{76}/g, '$&\r\n');
  return Buffer.from(
    [
      'From: Sender <sender@elsewhere.test>',
      `To: ${INBOX}`,
      'Subject: twenty megabytes',
      `Message-ID: ${MESSAGE_ID}`,
      'Date: Tue, 24 Nov 2026 20:00:00 +0000',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b1"',
      '',
      '--b1',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'The data set is attached.',
      '--b1',
      'Content-Type: application/octet-stream',
      'Content-Disposition: attachment; filename="data.bin"',
      'Content-Transfer-Encoding: base64',
      '',
      base64.trimEnd(),
      '--b1--',
      '',
    ].join('\r\n'),
  );
}

t.test('a 20 MB message arrives intact: raw download and attachment are byte for byte what was sent', async (t) => {
  const dns = await startLoopbackDns({});
  t.teardown(() => dns.close());
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  t.teardown(() => svc.stop());
  const port = Number(String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp).split(':')[1]);
  t.equal((await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'large', domain: 'local.test' } })).status, 200);

  const attachment = randomBytes(ATTACHMENT_BYTES);
  const raw = largeMime(attachment);
  t.ok(raw.length > 19 * 1024 * 1024, `the message is ${(raw.length / 1024 / 1024).toFixed(1)} MB`);
  const deadline = Date.now() + DEADLINE_MS;
  // A small message first, so routing is in place and every code path has run once before the peak is measured.
  const warm = Buffer.from(`From: sender@elsewhere.test\r\nTo: ${INBOX}\r\nSubject: warm up\r\nMessage-ID: <warm-1@elsewhere.test>\r\n\r\nhello\r\n`);
  let answer = await smtpSendRaw(port, 'sender@elsewhere.test', INBOX, warm);
  // 451 until the provisioning loop has pushed the new inbox's routing to the edge.
  while (answer.code === 451 && Date.now() < deadline) {
    await sleep(200);
    answer = await smtpSendRaw(port, 'sender@elsewhere.test', INBOX, warm);
  }
  t.equal(answer.code, 250, 'the edge accepts the small message');
  const warmPath = `/v0/inboxes/${enc(INBOX)}/messages/${enc('<warm-1@elsewhere.test>')}`;
  while ((await api(svc.url, 'GET', warmPath, { token: svc.ownerToken })).status === 404 && Date.now() < deadline) await sleep(250);

  const pid = svc.proc.pid!;
  const before = memoryOf(pid);
  resetPeak(pid);
  answer = await smtpSendRaw(port, 'sender@elsewhere.test', INBOX, raw);
  t.equal(answer.code, 250, 'the edge accepts it');
  // smtpSendRaw ends DATA with <CRLF>.<CRLF>; the message as received is the bytes plus that line end.
  const sent = Buffer.concat([raw, Buffer.from('\r\n')]);

  const path = `/v0/inboxes/${enc(INBOX)}/messages/${enc(MESSAGE_ID)}`;
  let message = await api<{ size: number; attachments: { attachment_id: string; size: number; filename: string }[] }>(svc.url, 'GET', path, { token: svc.ownerToken });
  while (message.status === 404 && Date.now() < deadline) {
    await sleep(250);
    message = await api(svc.url, 'GET', path, { token: svc.ownerToken });
  }
  t.equal(message.status, 200, 'the message is in its inbox');
  t.equal(message.body.size, sent.length, 'its size is the size sent');
  const rise = memoryOf(pid).peak - before.rss;
  t.comment(`peak RSS rise ${(rise / 1048576).toFixed(0)} MiB for a ${(sent.length / 1048576).toFixed(1)} MiB message (${(rise / sent.length).toFixed(1)}x)`);

  const link = await api<{ download_url: string }>(svc.url, 'GET', `${path}/raw`, { token: svc.ownerToken });
  t.equal(link.status, 200);
  const downloaded = new Uint8Array(await (await fetch(link.body.download_url)).arrayBuffer());
  t.equal(sha256(downloaded), sha256(sent), 'the raw download has the sha256 of what was sent');

  t.match(message.body.attachments, [{ filename: 'data.bin', size: ATTACHMENT_BYTES }]);
  const file = await api<{ download_url: string }>(svc.url, 'GET', `${path}/attachments/${message.body.attachments[0].attachment_id}`, { token: svc.ownerToken });
  const content = new Uint8Array(await (await fetch(file.body.download_url)).arrayBuffer());
  t.equal(sha256(content), sha256(attachment), 'the attachment decodes to the bytes that were encoded');

  const quarantine = await api<{ items: unknown[] }>(svc.url, 'GET', '/v0/owner/quarantine', { token: svc.ownerToken });
  t.same(quarantine.body.items, [], 'nothing was quarantined');
});
