/**
 * Hostile attachments (docs/attachments.md, docs/security.md): every one arrives over SMTP through
 * the built-in edge, the message commits, the service keeps answering, and the attachment's
 * `extraction.status` says why it has no text. Then the readers themselves on hostile input: a
 * zip bomb stops at the inflate limit, 100 000 entries and 100 000 levels are refused, a
 * "billion laughs" file expands nothing, and XML and CSV reading is linear.
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import zlib from 'node:zlib';
import { strToU8, zipSync, type Zippable } from 'fflate';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { until } from '../helpers/until.js';
import { docx, documentXml, pdf, pdfExtraObjectId } from '../helpers/documents.js';
import { assertLinear } from '../helpers/linear.js';
import { extractAttachmentText, readSync } from '../../src/attachment-text/extract.js';
import { TextSink } from '../../src/attachment-text/text-sink.js';
import { MAX_ATTACHMENT_TEXT_BYTES } from '../../src/attachment-text/limits.js';

const enc = encodeURIComponent;
const INBOX = 'target@hostile.test';
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/**
 * A DOCX whose document.xml inflates to `bytes` of one repeated letter inside a text run, about
 * 1 MB zipped per GB, laid out as fflate's streaming Zip writes it (local headers without sizes,
 * then a data descriptor). Never held whole: every 1 MiB step of the letter deflates (with a full
 * flush, so no match reaches back across steps) to the same few hundred bytes, which are repeated;
 * only the CRC reads the whole gigabyte. Deflating it step by step took about 25 s of CPU. Made once.
 */
let bomb: Uint8Array | null = null;
function bombDocx(bytes: number): Uint8Array {
  if (bomb) return bomb;
  const STEP = 1024 * 1024;
  if (bytes % STEP !== 0) throw new Error('bombDocx: whole MiB steps only');
  const deflated = (data: Buffer, last: boolean) => zlib.deflateRawSync(data, { level: 9, finishFlush: last ? zlib.constants.Z_FINISH : zlib.constants.Z_FULL_FLUSH });
  const step = Buffer.alloc(STEP, 0x41);
  const head = Buffer.from('<w:document xmlns:w="x"><w:body><w:p><w:r><w:t>');
  const stepDeflated = deflated(step, false);
  let crc = zlib.crc32(head);
  for (let done = 0; done < bytes; done += STEP) crc = zlib.crc32(step, crc);
  const types = Buffer.from('<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>');
  const entries = [
    { name: '[Content_Types].xml', data: [deflated(types, true)], crc: zlib.crc32(types), size: types.byteLength },
    { name: 'word/document.xml', data: [deflated(head, false), ...Array.from({ length: bytes / STEP }, () => stepDeflated), deflated(Buffer.alloc(0), true)], crc, size: head.byteLength + bytes },
  ];
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  const push = (b: Buffer) => {
    parts.push(b);
    offset += b.byteLength;
  };
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const compressed = e.data.reduce((n, d) => n + d.byteLength, 0);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0808, 6); // sizes in the data descriptor; UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt16LE(0x21, 12); // 1980-01-01
    local.writeUInt16LE(name.byteLength, 26);
    const at = offset;
    push(Buffer.concat([local, name]));
    for (const d of e.data) push(d);
    const descriptor = Buffer.alloc(16);
    descriptor.writeUInt32LE(0x08074b50, 0);
    descriptor.writeUInt32LE(e.crc, 4);
    descriptor.writeUInt32LE(compressed, 8);
    descriptor.writeUInt32LE(e.size, 12);
    push(descriptor);
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE(20, 4);
    header.writeUInt16LE(20, 6);
    header.writeUInt16LE(0x0808, 8);
    header.writeUInt16LE(8, 10);
    header.writeUInt16LE(0x21, 14);
    header.writeUInt32LE(e.crc, 16);
    header.writeUInt32LE(compressed, 20);
    header.writeUInt32LE(e.size, 24);
    header.writeUInt16LE(name.byteLength, 28);
    header.writeUInt32LE(at, 42);
    central.push(Buffer.concat([header, name]));
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.byteLength, 12);
  end.writeUInt32LE(offset, 16);
  bomb = Buffer.concat([...parts, directory, end]);
  return bomb;
}

const deepXml = (levels: number) => `<w:document xmlns:w="x"><w:body>${'<w:p>'.repeat(levels)}<w:t>deep</w:t>${'</w:p>'.repeat(levels)}</w:body></w:document>`;
const laughs =
  '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">' +
  Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`).join('') +
  ']><w:document xmlns:w="x"><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>';
function manyEntries(n: number): Uint8Array {
  const files: Zippable = { 'word/document.xml': strToU8(documentXml(['never reached'])) };
  for (let i = 0; i < n; i++) files[`junk/${i}`] = new Uint8Array(0);
  return zipSync(files, { level: 0 });
}
const encryptedPdf = () =>
  pdf([['secret words']], {
    trailer: `/Encrypt ${pdfExtraObjectId(1)} 0 R /ID [<00112233445566778899aabbccddeeff> <00112233445566778899aabbccddeeff>]`,
    objects: [`<< /Filter /Standard /V 2 /R 3 /Length 128 /P -3904 /O <${'ab'.repeat(32)}> /U <${'cd'.repeat(32)}> >>`],
  });

const HOSTILE: { filename: string; contentType: string; content: () => Uint8Array; status: string }[] = [
  { filename: 'bomb.docx', contentType: DOCX, content: () => bombDocx(1024 * 1024 * 1024), status: 'too_large' },
  { filename: 'entries.docx', contentType: DOCX, content: () => manyEntries(100_000), status: 'too_large' },
  { filename: 'deep.docx', contentType: DOCX, content: () => docx(deepXml(100_000)), status: 'too_large' },
  { filename: 'laughs.docx', contentType: DOCX, content: () => docx(laughs), status: 'failed' },
  { filename: 'locked.pdf', contentType: 'application/pdf', content: encryptedPdf, status: 'encrypted' },
  { filename: 'cut.pdf', contentType: 'application/pdf', content: () => pdf([['cut short']]).subarray(0, 200), status: 'failed' },
  { filename: 'loop.pdf', contentType: 'application/pdf', content: () => pdf([['x']], { pagesKids: '[2 0 R 2 0 R]', pagesCount: 2 }), status: 'failed' },
  { filename: 'invoice.pdf', contentType: 'application/pdf', content: () => Buffer.concat([Buffer.from('MZ\x90\x00\x03\x00\x00\x00', 'latin1'), Buffer.alloc(4096, 0x90)]), status: 'failed' },
  { filename: 'notzip.docx', contentType: DOCX, content: () => Buffer.from('MZ this is not a zip'), status: 'failed' },
];

async function sendOver(svc: RunningSvc, mail: nodemailer.SendMailOptions): Promise<void> {
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

t.test('hostile attachments over SMTP: the mail commits, the service answers, the status says why', async (t) => {
  const dns = await startLoopbackDns({});
  t.teardown(() => dns.close());
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  t.teardown(() => svc.stop());
  const owner = svc.ownerToken;
  t.equal((await api(svc.url, 'POST', '/v0/inboxes', { token: owner, body: { username: 'target', domain: 'hostile.test' } })).status, 200);
  for (const h of HOSTILE) {
    await sendOver(svc, { from: 'attacker@evil.test', to: INBOX, subject: `hostile ${h.filename}`, text: 'open me', attachments: [{ filename: h.filename, content: Buffer.from(h.content()), contentType: h.contentType }] });
  }
  // A well-formed message after them all: the pipeline still moves.
  await sendOver(svc, { from: 'friend@ok.test', to: INBOX, subject: 'after the attack', text: 'fine', attachments: [{ filename: 'ok.txt', content: 'still reading', contentType: 'text/plain' }] });
  const messages = await until('every message commits', async () => {
    const res = await api<{ messages: { subject: string; message_id: string; attachments: { attachment_id: string; filename: string }[] }[] }>(svc.url, 'GET', `/v0/inboxes/${enc(INBOX)}/messages?limit=50`, { token: owner });
    return res.body.messages.length === HOSTILE.length + 1 ? res.body.messages : undefined;
  }, 120_000);
  for (const h of [...HOSTILE, { filename: 'ok.txt', status: 'ok' }]) {
    const m = messages.find((x) => x.attachments[0]?.filename === h.filename)!;
    t.ok(m, `${h.filename}: the message committed`);
    const got = await api<{ extracted_text: string | null; extraction: { status: string } }>(
      svc.url,
      'GET',
      `/v0/inboxes/${enc(INBOX)}/messages/${enc(m.message_id)}/attachments/${m.attachments[0].attachment_id}`,
      { token: owner },
    );
    t.equal(got.status, 200, `${h.filename}: answered`);
    t.equal(got.body.extraction.status, h.status, `${h.filename}: ${h.status}`);
    if (h.status !== 'ok') t.equal(got.body.extracted_text, null);
  }
  const health = await api(svc.url, 'GET', '/v0/inboxes', { token: owner });
  t.equal(health.status, 200, 'the service still answers');
});

t.test('the readers on hostile input, in this process', async (t) => {
  const read = (content: Uint8Array, contentType: string) => extractAttachmentText({ content, contentType, filename: null, maxBytes: MAX_ATTACHMENT_TEXT_BYTES });
  const heapBefore = process.memoryUsage().heapUsed;
  t.same(await read(bombDocx(1024 * 1024 * 1024), DOCX), { status: 'too_large', text: null, truncated: false }, 'a 1 GB zip bomb stops at the inflate limit');
  t.ok(process.memoryUsage().heapUsed - heapBefore < 512 * 1024 * 1024, 'without inflating the gigabyte');
  t.equal((await read(manyEntries(100_000), DOCX)).status, 'too_large', '100 000 entries');
  t.equal((await read(docx(deepXml(100_000)), DOCX)).status, 'too_large', '100 000 levels');
  const laughed = await read(docx(laughs), DOCX);
  t.same(laughed, { status: 'failed', text: null, truncated: false }, 'billion laughs: the declared entities are never expanded');
  t.equal((await read(encryptedPdf(), 'application/pdf')).status, 'encrypted');
  const long = await read(Buffer.from('word '.repeat(200_000)), 'text/plain');
  t.equal(long.truncated, true, 'past the output cap the text is cut');
  t.ok(Buffer.byteLength(long.text!) <= MAX_ATTACHMENT_TEXT_BYTES);
  t.equal((await read(Buffer.from('word '.repeat(1000)), 'text/plain')).text?.length, 'word '.repeat(1000).trimEnd().length);
});

t.test('reading XML and CSV takes linear time', async (t) => {
  const docxRun = (xml: Uint8Array) => {
    const sink = new TextSink(MAX_ATTACHMENT_TEXT_BYTES);
    try {
      readSync('docx', { content: xml, contentType: DOCX }, sink);
    } catch {
      // a limit reached is a result too
    }
    return sink;
  };
  assertLinear(
    t,
    [
      { name: 'many paragraphs', build: (size: number) => docx(documentXml(Array.from({ length: size / 32 }, () => 'a paragraph of text here'))) },
      { name: 'deep nesting', build: (size: number) => docx(deepXml(size / 12)) },
      { name: 'one long attribute', build: (size: number) => docx(`<w:document a="${'x'.repeat(size)}"><w:t>t</w:t></w:document>`) },
    ],
    docxRun,
    (sink, label) => t.ok(Buffer.byteLength(sink.text()) <= MAX_ATTACHMENT_TEXT_BYTES, label),
  );
  const csvRun = (bytes: Uint8Array) => {
    const sink = new TextSink(MAX_ATTACHMENT_TEXT_BYTES);
    readSync('csv', { content: bytes, contentType: 'text/csv' }, sink);
    return sink;
  };
  assertLinear(
    t,
    [
      { name: 'carriage returns', build: (size: number) => Buffer.alloc(size, '\r') },
      { name: 'control characters', build: (size: number) => Buffer.alloc(size, '\u0001') },
      { name: 'spaces then a letter', build: (size: number) => Buffer.from(' '.repeat(size - 1) + 'x') },
      { name: 'invalid UTF-8', build: (size: number) => Buffer.alloc(size, 0xff) },
    ],
    csvRun,
    (sink, label) => t.ok(Buffer.byteLength(sink.text()) <= MAX_ATTACHMENT_TEXT_BYTES, label),
  );
});
