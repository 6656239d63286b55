/**
 * Codes and links an attacker hides or aims inward (issue 32 §5, docs/extraction.md), over real
 * SMTP into the built-in edge: a code and a verification link inside hidden HTML (display:none,
 * a zero font size, text coloured like its background, the hidden attribute…) placed before the
 * real ones are not extracted at all — not from the HTML, and not from the text mailparser derives
 * from an HTML-only message — and a "verification" link to svc's own loopback origin, or to any
 * loopback, private or link-local address however it is written, is never labelled an action.
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';

const enc = encodeURIComponent;
const INBOX = 'agent@actions.test';
const REAL_LINK = 'https://service.test/verify?token=c29ac3f17d2e4b1a9f07';
interface Extracted {
  codes: { value: string }[];
  links: { url: string; kind: string }[];
}

let dns: LoopbackDns;
let svc: RunningSvc;
let smtp: nodemailer.Transporter;

t.before(async () => {
  dns = await startLoopbackDns({});
  svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  if ((await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'agent', domain: 'actions.test' } })).status !== 200) throw new Error('inbox');
  const ready = svc.stdoutLines.find((l) => l.event === 'server.ready')!;
  smtp = nodemailer.createTransport({ host: '127.0.0.1', port: Number(String(ready.smtp).split(':').pop()), secure: false, ignoreTLS: true });
});
t.teardown(async () => {
  smtp?.close();
  await svc?.stop();
  await dns?.close();
});

let sent = 0;
async function extractedOf(mail: nodemailer.SendMailOptions): Promise<Extracted> {
  const subject = `Verify your email (${++sent})`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await smtp.sendMail({ from: 'Service <noreply@service.test>', to: INBOX, subject, ...mail });
      break;
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const waited = await api<{ extracted: Extracted }>(svc.url, 'GET', `/v0/inboxes/${enc(INBOX)}/messages/wait?after=2000-01-01T00:00:00Z&subject=${enc(subject)}&timeout=20`, {
    token: svc.ownerToken,
  });
  if (waited.status !== 200) throw new Error(`${subject}: ${waited.status}`);
  return waited.body.extracted;
}

const HIDERS = [
  'style="display:none"',
  'style="font-size:0px;line-height:0"',
  'style="color:#fafafa;background:#fafafa"',
  'hidden',
  'style="visibility : hidden"',
  'style="max-height:0;overflow:hidden;mso-hide:all"',
  'style="position:absolute;left:-10000px;top:auto"',
];

t.test('a code and a verification link in hidden HTML, placed first, are not extracted', async (t) => {
  const visible = `<p>Your verification code is <b>482913</b>.</p><p><a href="${REAL_LINK}">Verify your email address</a></p>`;
  for (const hider of HIDERS) {
    const decoy = `<div ${hider}>Your verification code is 551873. <a href="https://attacker.test/verify?token=a1b2c3d4e5f6a7b8c9d0">Verify your email address</a></div>`;
    // HTML only: mailparser derives the text part from the HTML, hidden text included.
    const htmlOnly = await extractedOf({ html: decoy + visible });
    t.same(htmlOnly.codes.map((c) => c.value), ['482913'], `${hider}: only the visible code (HTML only)`);
    t.same(htmlOnly.links.map((l) => l.url), [REAL_LINK], `${hider}: only the visible link (HTML only)`);
    // With a text part that repeats the decoy, as a sender controls both.
    const both = await extractedOf({
      html: decoy + visible,
      text: `Your verification code is 551873: https://attacker.test/verify?token=a1b2c3d4e5f6a7b8c9d0\nYour verification code is 482913: ${REAL_LINK}`,
    });
    t.same(both.codes.map((c) => c.value), ['482913'], `${hider}: only the visible code (with a text part)`);
    t.same(both.links.map((l) => l.url), [REAL_LINK], `${hider}: only the visible link (with a text part)`);
  }
  // An anchor that shows nothing but hidden text, around a visible code mail.
  const empty = await extractedOf({ html: `<a href="https://attacker.test/verify?token=a1b2c3d4e5f6a7b8c9d0"><span style="display:none">Verify</span></a>${visible}` });
  t.same(empty.links.map((l) => l.url), [REAL_LINK], 'an anchor showing only hidden text is not a link');
});

t.test('a verification link to svc itself or any internal address is never labelled an action', async (t) => {
  const port = new URL(svc.url).port;
  const inward = [
    `${svc.url}/v0/owner/login?token=c29ac3f17d2e4b1a9f07`,
    `http://localhost:${port}/verify?token=c29ac3f17d2e4b1a9f07`,
    `http://2130706433:${port}/verify?token=c29ac3f17d2e4b1a9f07`,
    `http://[::ffff:7f00:1]:${port}/verify?token=c29ac3f17d2e4b1a9f07`,
    'http://169.254.169.254/latest/verify?token=c29ac3f17d2e4b1a9f07',
    'http://192.168.0.1/reset-password?token=c29ac3f17d2e4b1a9f07',
    'http://intranet/magic-link?token=c29ac3f17d2e4b1a9f07',
  ];
  const html = inward.map((url) => `<p><a href="${url}">Verify your email address</a></p>`).join('') + `<p><a href="${REAL_LINK}">Verify your email address</a></p>`;
  const found = await extractedOf({ html, headers: { 'List-Unsubscribe': `<http://127.0.0.1:${port}/v0/api-keys>` } });
  t.same(found.links.find((l) => l.url === REAL_LINK)?.kind, 'verification', 'the real link keeps its kind');
  t.equal(found.links[0]?.url, REAL_LINK, 'and comes first');
  for (const link of found.links.filter((l) => l.url !== REAL_LINK)) t.equal(link.kind, 'other', link.url);
  t.equal(found.links.length, inward.length + 2, 'every link is listed');
});
