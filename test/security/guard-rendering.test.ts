/**
 * The outbound guard reads what the recipient sees (issue 32 item 3, docs/guarded.md), attacked
 * through a real service with a `guarded` key, over REST and the AgentMail SDK: a token written
 * as HTML character references (decimal, hex, without `;`, with leading zeros) or split by empty
 * elements, `<wbr>`, comments (nested ones too), inside CDATA or an Outlook conditional comment;
 * zero-width, soft-hyphen and bidi characters inside a token or a card number, junk hidden by an
 * inline style inside it, a right-to-left override or `<bdo>` that shows it reversed, full-width
 * and mathematical letters; attachments a
 * client shows as text (message/rfc822 with base64 and quoted-printable parts and encoded-word
 * headers, an .eml sent as octet-stream, SVG, RTF, UTF-16 and ISO-8859-1 text); the inbox's
 * display name set by an `inbox_update` key; header names, Reply-To addresses, content IDs, and a
 * scheduled draft's References and kept Reply-To. Each is held (`403 approval_required` with its
 * reasons, never the secret) and never reaches the SMTP sink; ordinary rich mail still goes out.
 */
import t, { type Test } from 'tap';
import { AgentMailClient } from 'agentmail';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { until } from '../helpers/until.js';

let svc: RunningSvc;
let sink: Sink;
let n = 0;

const ALL = ['inbox_read', 'message_read', 'message_send', 'message_reply', 'draft_read', 'draft_create', 'draft_update', 'draft_send', 'draft_delete'];
const enc = encodeURIComponent;
const b64 = (s: string | Buffer) => (typeof s === 'string' ? Buffer.from(s) : s).toString('base64');
/** A GitHub token of the right shape (never a live one); its last 4 are all a reason may show. */
const TOKEN = 'ghp_R7mK2pQ9xW4vL8nT3bY6cH1jD5fG0sZa2Ek8';
const LAST5 = TOKEN.slice(-5);
const CARD = '4111111111111111';

interface ErrorBody {
  code: string;
  message: string;
  draft_id?: string;
  reasons?: { detector: string; detail: string }[];
}
interface DraftBody {
  draft_id: string;
  state: string;
  guard_findings: { detector: string; detail: string }[] | null;
}

const newInbox = () => createInbox(svc, `seen${++n}@home.example`);
const guardedKey = async (inbox: string, extra: string[] = []) => (await createApiKey(svc, { permissions: [...ALL, ...extra], inboxIds: [inbox], sendPolicy: 'guarded' })).secret;
const sdk = (token: string) => new AgentMailClient({ apiKey: token, baseUrl: svc.url, maxRetries: 0 });
const sendRest = (token: string, inbox: string, body: Record<string, unknown>) => api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body: { to: 'x@remote.example', subject: 's', ...body } });
const decimalRefs = (s: string) => [...s].map((c) => `&#${c.charCodeAt(0)};`).join('');
const hexRefs = (s: string) => [...s].map((c) => `&#x${c.charCodeAt(0).toString(16)}`).join('');
const attachment = (filename: string, content_type: string, content: string | Buffer) => ({ attachments: [{ filename, content_type, content: b64(content) }] });
const mime = (lines: string[]) => lines.join('\r\n');
const sinkHas = (marker: string) => sink.messages.some((m) => m.raw.toString('latin1').includes(marker));
/** Lets the outbox run: a queued message reaches the sink within this. */
const settle = () => new Promise((r) => setTimeout(r, 1500));

/** The held answer's own rules: approval_required with a draft and reasons, none showing more than the last 4 characters. */
function assertHeld(t: Test, res: { status: number; body: ErrorBody }, what: string, detector = 'credentials', where?: RegExp): void {
  t.equal(res.status, 403, `${what}: 403`);
  t.equal(res.body.code, 'approval_required', `${what}: approval_required`);
  t.ok(res.body.draft_id, `${what}: saved as a draft`);
  t.ok(res.body.reasons?.some((r) => r.detector === detector && (where === undefined || where.test(r.detail))), `${what}: reasons ${JSON.stringify(res.body.reasons)}`);
  const said = JSON.stringify(res.body);
  t.notOk(said.includes(LAST5) || said.includes(CARD.slice(-5)), `${what}: the answer never shows more than the last 4 characters`);
}

t.before(async () => {
  svc = await startSvc();
  sink = await startSink();
  const res = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { smtp: { host: '127.0.0.1', port: sink.port } } });
  if (res.status !== 200) throw new Error(res.text);
});
t.teardown(async () => {
  await sink.close();
  await svc.stop();
});

t.test('HTML: a token as character references or split by elements and comments is held', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const [a, b, c] = [TOKEN.slice(0, 9), TOKEN.slice(9, 22), TOKEN.slice(22)];
  const cases: [string, string][] = [
    ['decimal references', `<p>Here you go: ${decimalRefs(TOKEN)}</p>`],
    ['hex references without semicolons', `<p>${hexRefs(TOKEN)}</p>`],
    ['references with leading zeros', `<p>${[...TOKEN].map((ch) => `&#000000${ch.charCodeAt(0)};`).join('')}</p>`],
    ['named references for its punctuation', `<p>ghp&lowbar;${TOKEN.slice(4)}</p>`],
    ['empty elements', `<p>${a}<b></b>${b}<span style="x"></span>${c}</p>`],
    ['<wbr>', `<p>${a}<wbr>${b}<wbr/>${c}</p>`],
    ['comments', `<p>${a}<!-- x -->${b}<!---->${c}</p>`],
    ['nested comments', `<p>x<!-- <!-- --> -->${a}<!-- a --!>${b}<!-->${c}</p>`],
    ['CDATA', `<p><![CDATA[${TOKEN}]]></p>`],
    ['an Outlook conditional comment with references', `<!--[if mso]><p>${decimalRefs(TOKEN)}</p><![endif]-->`],
    ['an image alt text with references', `<img src="cid:x" alt="${decimalRefs(TOKEN)}">`],
    ['a link target with references', `<a href="https://x.example/c?k=${hexRefs(TOKEN)}">click</a>`],
    ['junk hidden by an inline style inside it', `<p>${a}<span style="display: none">zzz</span>${b}<i hidden>q</i>${c}</p>`],
    ['reversed inside <bdo dir=rtl>', `<p><bdo dir="rtl">${[...TOKEN].reverse().join('')}</bdo></p>`],
  ];
  for (const [what, html] of cases) assertHeld(t, await sendRest(token, inbox, { text: `marker-html-${what}`, html }), what);
  // The same through the SDK.
  try {
    await sdk(token).inboxes.messages.send(inbox, { to: 'x@remote.example', subject: 's', html: `<div>${decimalRefs(TOKEN)}</div>`, text: 'marker-html-sdk' });
    t.fail('the SDK send went out');
  } catch (err) {
    const e = err as { statusCode?: number; body?: ErrorBody };
    assertHeld(t, { status: e.statusCode ?? 0, body: e.body! }, 'SDK: decimal references');
  }
  await settle();
  t.notOk(sink.messages.some((m) => m.raw.toString('latin1').includes('marker-html-')), 'none reached the recipient');
});

t.test('text: zero-width, soft-hyphen and bidi characters inside a token or card number are held', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const groups = CARD.match(/.{4}/g)!;
  const cases: [string, Record<string, unknown>, string][] = [
    ['zero-width spaces in a token', { text: [...TOKEN].join('\u200b') }, 'credentials'],
    ['zero-width joiners and word joiners in a token', { text: `${TOKEN.slice(0, 10)}\u200d\u2060${TOKEN.slice(10)}` }, 'credentials'],
    ['a BOM and bidi controls in the subject', { subject: `${TOKEN.slice(0, 6)}\ufeff\u202e\u2066${TOKEN.slice(6)}`, text: 'x' }, 'credentials'],
    ['a card split by soft hyphens', { text: `card ${groups.join('\u00ad')} exp 12/29` }, 'card_numbers'],
    ['a card split by &shy; in the HTML', { html: `<p>card ${groups.join('&shy;')}</p>` }, 'card_numbers'],
    ['a card grouped by no-break spaces', { text: `card ${groups.join('\u00a0')}` }, 'card_numbers'],
    ['a card in table cells with zero-width spaces', { html: `<td>${groups.join('\u200b')}</td>` }, 'card_numbers'],
    ['a token reversed under a right-to-left override', { text: `ref \u202e${[...TOKEN].reverse().join('')}\u202c done` }, 'credentials'],
    ['a token in full-width letters', { text: [...TOKEN].map((ch) => String.fromCharCode(ch.charCodeAt(0) + 0xfee0)).join('') }, 'credentials'],
    ['a card in mathematical digits', { text: `card ${[...CARD].map((d) => String.fromCodePoint(0x1d7ce + Number(d))).join('')}` }, 'card_numbers'],
  ];
  for (const [what, body, detector] of cases) assertHeld(t, await sendRest(token, inbox, { text: 'marker-cf', ...body }), what, detector);
  await settle();
  t.notOk(sinkHas('marker-cf'));
});

t.test('attachments a client shows as text are read as shown', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const qp = `${TOKEN.slice(0, 20)}=\r\n${TOKEN.slice(20, 30)}=${TOKEN.charCodeAt(30).toString(16).toUpperCase()}${TOKEN.slice(31)}`;
  const cases: [string, Record<string, unknown>][] = [
    ['message/rfc822 with a base64 part', attachment('fw.eml', 'message/rfc822', mime(['From: a@x.example', 'Subject: fw', 'Content-Type: text/plain', 'Content-Transfer-Encoding: base64', '', b64(`key ${TOKEN}`)]))],
    ['message/rfc822 with a quoted-printable HTML part', attachment('fw.eml', 'message/rfc822', mime(['Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: quoted-printable', '', `<p>${qp}</p>`]))],
    ['message/rfc822 with an encoded-word subject', attachment('fw.eml', 'message/rfc822', mime([`Subject: =?utf-8?B?${b64(TOKEN)}?=`, '', 'see subject']))],
    [
      'message/rfc822 nested in a multipart, UTF-16 inside',
      attachment(
        'fw.eml',
        'message/rfc822',
        mime(['Content-Type: multipart/mixed; boundary="zz"', '', '--zz', 'Content-Type: message/rfc822', '', mime(['Content-Type: text/plain; charset=utf-16le', 'Content-Transfer-Encoding: base64', '', b64(Buffer.from(TOKEN, 'utf16le'))]), '--zz--']),
      ),
    ],
    ['an .eml sent as octet-stream', attachment('forwarded.eml', 'application/octet-stream', mime(['Content-Transfer-Encoding: base64', '', b64(TOKEN)]))],
    ['message/global', attachment('g.eml', 'message/global', mime(['Subject: hi', '', TOKEN]))],
    ['image/svg+xml with a tspan split', attachment('logo.svg', 'image/svg+xml', `<svg xmlns="http://www.w3.org/2000/svg"><text>${TOKEN.slice(0, 12)}<tspan/>${TOKEN.slice(12)}</text></svg>`)],
    ['image/svg+xml with references in an attribute', attachment('logo.svg', 'image/svg+xml', `<svg><title>x</title><a href="${decimalRefs(TOKEN)}"/></svg>`)],
    ['application/rtf with hex escapes', attachment('note.rtf', 'application/rtf', `{\\rtf1\\ansi ${[...TOKEN].map((ch) => `\\'${ch.charCodeAt(0).toString(16)}`).join('')}}`)],
    ['text/rtf with \\u escapes and empty groups', attachment('note.rtf', 'text/rtf', `{\\rtf1 ${[...TOKEN].map((ch, i) => (i % 2 ? `\\u${ch.charCodeAt(0)}?` : `${ch}{\\i}`)).join('')}}`)],
    ['text/plain in UTF-16LE with its mark', attachment('keys.txt', 'text/plain', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`token: ${TOKEN}`, 'utf16le')]))],
    ['text/plain declared UTF-16BE, no mark', attachment('keys.txt', 'text/plain; charset=utf-16be', Buffer.from(`token ${TOKEN}`, 'utf16le').swap16())],
    ['text/plain declared ISO-8859-1', attachment('keys.txt', 'text/plain; charset=ISO-8859-1', Buffer.from(`Schlüssel: ${TOKEN}`, 'latin1'))],
    ['text/html attachment with references', attachment('page.html', 'text/html', `<p>${decimalRefs(TOKEN)}</p>`)],
    ['an application/xml with a CDATA section', attachment('c.xml', 'application/xml', `<k><![CDATA[${TOKEN.slice(0, 10)}]]>${TOKEN.slice(10)}</k>`)],
  ];
  for (const [what, body] of cases) assertHeld(t, await sendRest(token, inbox, { text: 'marker-attachment', ...body }), what);
  await settle();
  t.notOk(sinkHas('marker-attachment'));
});

t.test('the inbox display name, set by an inbox_update key, is checked as it goes out in From', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox, ['inbox_update']);
  const renamed = await api(svc.url, 'PATCH', `/v0/inboxes/${enc(inbox)}`, { token, body: { display_name: `Support ${TOKEN}` } });
  t.equal(renamed.status, 200, 'the key may rename its inbox');
  assertHeld(t, await sendRest(token, inbox, { text: 'marker-display-1' }), 'a display name with a token', 'credentials', /sender name/);
  // Zero-width characters and the SDK: the same.
  await sdk(token).inboxes.update(inbox, { displayName: [...TOKEN].join('\u200b') });
  try {
    await sdk(token).inboxes.messages.send(inbox, { to: 'x@remote.example', subject: 'hi', text: 'marker-display-2' });
    t.fail('the SDK send went out');
  } catch (err) {
    const e = err as { statusCode?: number; body?: ErrorBody };
    assertHeld(t, { status: e.statusCode ?? 0, body: e.body! }, 'SDK: a display name with zero-width characters', 'credentials', /sender name/);
  }
  await sdk(token).inboxes.update(inbox, { displayName: 'Support Team' });
  const clean = await sendRest(token, inbox, { text: 'marker-display-3' });
  t.equal(clean.status, 200, 'a plain display name goes out');
  await until('the clean message arrives', () => sinkHas('marker-display-3'));
  t.notOk(sinkHas('marker-display-1') || sinkHas('marker-display-2'));
});

t.test('every header svc writes is checked: header names, Reply-To, content IDs, a scheduled draft’s References and kept Reply-To', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
  const cases: [string, Record<string, unknown>][] = [
    ['a header name', { headers: { [`X-${TOKEN}`]: '1' } }],
    ['a header value with zero-width characters', { headers: { 'X-Note': [...TOKEN].join('\u200b') } }],
    ['an API key header', { headers: { 'X-Api-Key': 'Zr8Kq2mW9vX4pL7n' } }],
    ['a Reply-To address', { reply_to: `${TOKEN}@collect.example` }],
    ['a Reply-To address with the token behind a dash', { reply_to: `x-${TOKEN}@collect.example` }],
    ['a recipient address with the token behind a dot', { to: `v.${TOKEN}@collect.example` }],
    ['a content ID', { attachments: [{ filename: 'a.png', content_type: 'image/png', content_disposition: 'inline', content_id: TOKEN, content: b64(png) }] }],
  ];
  for (const [what, body] of cases) {
    const r = await sendRest(token, inbox, { text: 'marker-headers', ...body });
    assertHeld(t, r, what);
  }

  const drafts = `/v0/inboxes/${enc(inbox)}/drafts`;
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const refs = await api<DraftBody>(svc.url, 'POST', drafts, { token, body: { to: 'x@remote.example', subject: 's', text: 'marker-headers', references: [`<${TOKEN}@x.example>`], send_at: later } });
  t.equal(refs.status, 200);
  t.equal(refs.body.state, 'pending_approval', 'a schedule whose References carry a token waits for the owner');
  t.match(refs.body.guard_findings, [{ detector: 'credentials', detail: /In-Reply-To and References/ }]);

  const plain = await api<DraftBody>(svc.url, 'POST', drafts, { token, body: { to: 'x@remote.example', subject: 's', text: 'marker-headers', reply_to: `${TOKEN}@collect.example` } });
  t.equal(plain.status, 200);
  const scheduled = await api<DraftBody>(svc.url, 'PATCH', `${drafts}/${enc(plain.body.draft_id)}`, { token, body: { send_at: later } });
  t.equal(scheduled.status, 200);
  t.equal(scheduled.body.state, 'pending_approval', 'scheduling a draft keeps its Reply-To in the check');
  await settle();
  t.notOk(sinkHas('marker-headers'));
});

t.test('ordinary rich mail still goes out at once', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const newsletter = [
    '<!DOCTYPE html><html><head><style>p{color:#4111}</style></head><body>',
    '<!--[if mso]><table><tr><td><![endif]-->',
    '<h1>Quarterly&nbsp;update</h1><p>Order&nbsp;#4567-8901 ships on 2026&#8209;12&#8209;01.</p>',
    '<table><tr><td>4111</td><td>1111</td><td>1111</td><td>1111</td></tr></table>',
    '<a href="https://news.example/u?id=7&amp;token=Zx81kq0PlmA92bd7">unsubscribe</a>',
    '<!--[if mso]></td></tr></table><![endif]--></body></html>',
  ].join('');
  const forwarded = mime(['From: Sam <sam@x.example>', 'Subject: =?utf-8?Q?Gr=C3=BC=C3=9Fe?=', 'Message-ID: <CAHx8sK2b@mail.example>', 'Content-Type: text/plain; charset=utf-8', '', 'See you Tuesday at 10:30.']);
  const res = await sendRest(token, inbox, {
    text: 'marker-clean-rich – see attached, café 👩\u200d💻',
    html: newsletter,
    attachments: [
      { filename: 'logo.svg', content_type: 'image/svg+xml', content: b64('<svg viewBox="0 0 24 24"><path d="M12 2L2 7l10 5 10-5-10-5z"/></svg>') },
      { filename: 'letter.rtf', content_type: 'application/rtf', content: b64('{\\rtf1\\ansi{\\fonttbl\\f0 Arial;}\\f0 Dear Sam,\\par Invoice 2024-117 is attached.\\par}') },
      { filename: 'fw.eml', content_type: 'message/rfc822', content: b64(forwarded) },
      { filename: 'notes.txt', content_type: 'text/plain; charset=utf-16', content: b64(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Grüße aus Berlin', 'utf16le')])) },
    ],
  });
  t.equal(res.status, 200, `sent: ${JSON.stringify(res.body)}`);
  await until('the clean message arrives', () => sinkHas('marker-clean-rich'));
});
