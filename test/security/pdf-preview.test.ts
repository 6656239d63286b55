/**
 * The inline PDF preview of a download URL (`?view=inline`, docs/downloads.md), from an attacker's
 * side: only bytes that are a PDF, stored as `application/pdf`, are ever served inline, and then
 * sandboxed and frameable by svc's own pages only. HTML dressed as a PDF, a PDF dressed as
 * something else, and every other spelling of the parameter stay a plain attachment or a 400.
 */
import t from 'tap';
import { startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createInbox } from '../helpers/seed.js';
import { seedMail } from '../helpers/mail.js';
import { pdf } from '../helpers/documents.js';
import type { Db } from '../../src/db/open.js';

const INBOX = 'previews@example.com';
const MESSAGE_ID = '<previews-1@example.org>';
const HTML = Buffer.from('<html><body><script>parent.postMessage(document.cookie, "*")</script>%PDF-</body></html>');
const PDF = pdf([['A real PDF']]);
/** filename → [declared type, bytes]. */
const PARTS: Record<string, [string, Buffer]> = {
  'real.pdf': ['application/pdf', PDF],
  'html-as.pdf': ['application/pdf', HTML],
  'late-header.pdf': ['application/pdf', Buffer.concat([Buffer.alloc(2048, 0x20), PDF])],
  'pdf-as.html': ['text/html', PDF],
  'pdf-as-octets.bin': ['application/octet-stream', PDF],
  'pdf-as-image.png': ['image/png', PDF],
};

let svc: RunningSvc;
let db: Db;
t.before(async () => {
  svc = await startSvc();
  db = openHomeDb(svc.home);
  await createInbox(svc, INBOX);
  const parts = Object.entries(PARTS).flatMap(([name, [type, bytes]]) => [
    '--b',
    `Content-Type: ${type}; name="${name}"`,
    `Content-Disposition: attachment; filename="${name}"`,
    'Content-Transfer-Encoding: base64',
    '',
    bytes.toString('base64'),
  ]);
  const raw = ['From: a@example.org', `To: ${INBOX}`, 'Subject: previews', `Message-ID: ${MESSAGE_ID}`, 'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="b"', '', '--b', 'Content-Type: text/plain', '', 'see attached', ...parts, '--b--', ''].join('\r\n');
  await seedMail(db, raw, { inboxId: INBOX });
});
t.teardown(async () => {
  db.close();
  await svc.stop();
});

async function urlOf(filename: string): Promise<string> {
  const { attachment_id } = db.prepare('SELECT attachment_id FROM attachments WHERE filename = ?').get(filename) as { attachment_id: string };
  const res = await fetch(`${svc.url}/v0/inboxes/${encodeURIComponent(INBOX)}/messages/${encodeURIComponent(MESSAGE_ID)}/attachments/${attachment_id}`, { headers: { authorization: `Bearer ${svc.ownerToken}` } });
  return ((await res.json()) as { download_url: string }).download_url;
}

async function served(url: string) {
  const res = await fetch(url);
  const body = Buffer.from(await res.arrayBuffer());
  const h = (name: string) => res.headers.get(name) ?? '';
  return { status: res.status, body, type: h('content-type'), disposition: h('content-disposition'), csp: h('content-security-policy'), nosniff: h('x-content-type-options') };
}

t.test('a PDF asked inline is served inline, sandboxed, frameable by svc only', async (t) => {
  const res = await served(`${await urlOf('real.pdf')}?view=inline`);
  t.equal(res.status, 200);
  t.ok(res.body.equals(PDF), 'the exact bytes');
  t.equal(res.type, 'application/pdf');
  t.match(res.disposition, /^inline; filename="real\.pdf"/);
  t.equal(res.csp, "default-src 'none'; frame-ancestors 'self'; sandbox", 'an opaque origin that runs nothing, framed only by svc');
  t.equal(res.nosniff, 'nosniff');
  const plain = await served(await urlOf('real.pdf'));
  t.match(plain.disposition, /^attachment;/, 'without view, the same PDF downloads');
  t.equal(plain.csp, "default-src 'none'; frame-ancestors 'none'; sandbox", 'and nothing may frame a download');
});

t.test('nothing but a PDF is ever inline, whatever it claims to be', async (t) => {
  for (const name of ['html-as.pdf', 'late-header.pdf', 'pdf-as.html', 'pdf-as-octets.bin', 'pdf-as-image.png']) {
    const res = await served(`${await urlOf(name)}?view=inline`);
    t.equal(res.status, 200, name);
    t.match(res.disposition, /^attachment;/, `${name}: still an attachment`);
    t.equal(res.csp, "default-src 'none'; frame-ancestors 'none'; sandbox", `${name}: not frameable`);
    t.equal(res.nosniff, 'nosniff');
  }
  t.equal((await served(`${await urlOf('pdf-as.html')}?view=inline`)).type, 'text/html', 'the stored type is kept (the sandbox and the attachment disposition hold it)');
});

t.test('other spellings of the parameter are refused before any bytes', async (t) => {
  const url = await urlOf('real.pdf');
  for (const query of ['view=INLINE', 'view=', 'view=attachment', 'view=inline&view=inline', 'view[]=inline', 'inline=1', 'view=inline&x=1']) {
    const res = await served(`${url}?${query}`);
    t.equal(res.status, 400, query);
    t.notOk(res.body.includes('%PDF-'), `${query}: no file bytes in the refusal`);
    t.equal(JSON.parse(res.body.toString()).code, 'validation_error');
  }
});
