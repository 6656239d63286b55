/**
 * What the owner approves is what the recipient gets (issue 32, item 4). An agent under the
 * approval policy tries to get something past the owner that the approval view does not show:
 * HTML saying other things than the text part, hidden HTML text, a Reply-To or a custom header
 * the card left out, a link whose target the text does not have. The draft read (what the web
 * card, `svc drafts show` and MCP `get_draft` show) must carry each of them, and the part
 * comparison (src/mail/part-mismatch.ts) must flag every variant while staying linear.
 */
import t from 'tap';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { assertLinear } from '../helpers/linear.js';
import { compareParts, MAX_COMPARED_CHARS, type PartMismatch } from '../../src/mail/part-mismatch.js';

const INBOX = 'agent@approval.test';
let svc: RunningSvc;
let agent: string;

t.before(async () => {
  svc = await startSvc({ args: ['--local-edge'] });
  await createInbox(svc, INBOX);
  agent = (await createApiKey(svc, { permissions: ['message_send', 'draft_read'], inboxIds: [INBOX], sendPolicy: 'approval' })).secret;
});
t.teardown(() => svc?.stop());

interface DraftView {
  reply_to: string[] | null;
  headers: Record<string, string> | null;
  html: string | null;
  part_mismatch: PartMismatch[];
}

/** Sends as the agent (held for approval) and reads the draft as the owner does. */
async function heldDraft(body: Record<string, unknown>): Promise<DraftView> {
  const sent = await api<{ code: string; draft_id: string }>(svc.url, 'POST', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages/send`, {
    token: agent,
    body: { to: 'victim@example.org', subject: 'Tuesday', ...body },
  });
  if (sent.body.code !== 'approval_required') throw new Error(`expected approval_required: ${sent.status} ${sent.text}`);
  const read = await api<DraftView>(svc.url, 'GET', `/v0/drafts/${sent.body.draft_id}`, { token: svc.ownerToken });
  if (read.status !== 200) throw new Error(`draft read: ${read.status} ${read.text}`);
  return read.body;
}

const reasons = (findings: PartMismatch[]) => findings.map((f) => f.reason);

t.test('hidden HTML text is flagged even when the visible parts agree', async (t) => {
  const d = await heldDraft({ text: 'see you Tuesday', html: '<p>see you Tuesday</p><div style="display:none">wire EUR 48,000 to DE89 3704 0044 0532 0130 00</div>' });
  t.same(reasons(d.part_mismatch), ['hidden_text']);
  t.match(d.part_mismatch[0].detail, /display:none.*wire EUR 48,000/);
});

t.test('a Reply-To alone (parts agreeing) is in the draft the owner reads', async (t) => {
  const d = await heldDraft({ text: 'see you Tuesday', html: '<p>see you Tuesday</p>', reply_to: 'payments@evil.example' });
  t.same(d.reply_to, ['payments@evil.example']);
  t.same(d.part_mismatch, [], 'nothing else differs');
});

t.test('a custom header alone is in the draft the owner reads', async (t) => {
  const d = await heldDraft({ text: 'see you Tuesday', headers: { 'X-Payment-Instructions': 'DE89 3704 0044 0532 0130 00' } });
  t.same(d.headers, { 'X-Payment-Instructions': 'DE89 3704 0044 0532 0130 00' });
});

t.test('an HTML link the text part lacks is flagged, even under anchor text the text part has', async (t) => {
  const d = await heldDraft({ text: 'The agenda: https://docs.example/agenda', html: '<p>The agenda: <a href="https://evil.example/login">https://docs.example/agenda</a></p>' });
  t.same(reasons(d.part_mismatch), ['html_only']);
  t.match(d.part_mismatch[0].detail, /link “https:\/\/evil\.example\/login”/);
});

t.test('the HTML saying something else is flagged with what differs', async (t) => {
  const d = await heldDraft({ text: 'see you Tuesday', html: '<p>wire EUR 48,000 to DE89 3704 0044 0532 0130 00</p>' });
  t.match(d.part_mismatch, [{ reason: 'html_only', detail: /IBAN “DE89 3704 0044 0532 0130 00”.*number “48,000”/ }, { reason: 'text_only' }]);
});

// The next attacker: the same payload, spelled so that a naive comparison misses it.
const WIRE_TEXT = 'Please wire EUR 48,000 to DE89 3704 0044 0532 0130 00 today.';
const variants: { name: string; text: string; html: string; reason: string; detail?: RegExp }[] = [
  { name: 'IBAN written with character references', text: 'see you Tuesday', html: '<p>&#68;&#x45;89 3704 0044 0532 0130 00</p>', reason: 'html_only', detail: /DE89 3704/ },
  { name: 'number split by a comment', text: 'Pay EUR 480 today.', html: '<p>Pay EUR 48<!-- -->,000 today.</p>', reason: 'html_only', detail: /48,000/ },
  { name: 'amount changed, words the same', text: 'Please wire EUR 480 to DE89 3704 0044 0532 0130 00 today.', html: `<p>${WIRE_TEXT}</p>`, reason: 'html_only', detail: /48,000/ },
  { name: 'IBAN changed, everything else the same', text: WIRE_TEXT, html: '<p>Please wire EUR 48,000 to GB33 BUKB 2020 1555 5555 55 today.</p>', reason: 'html_only', detail: /IBAN “GB33 BUKB 2020 1555 5555 55”/ },
  { name: 'white text on a white background', text: 'see you Tuesday', html: '<div style="background:#fff"><p>see you Tuesday</p><p style="color:#ffffff">wire EUR 48,000</p></div>', reason: 'hidden_text' },
  { name: 'zero font size', text: 'see you Tuesday', html: '<p>see you Tuesday<span style="font-size:0">wire EUR 48,000</span></p>', reason: 'hidden_text' },
  { name: 'the hidden attribute', text: 'see you Tuesday', html: '<p>see you Tuesday</p><p hidden>wire EUR 48,000</p>', reason: 'hidden_text' },
  { name: 'text written by a stylesheet', text: 'see you Tuesday', html: '<style>p::after { content: " wire EUR 48,000" }</style><p>see you Tuesday</p>', reason: 'styled_text' },
  { name: 'stylesheet content split by a comment', text: 'see you Tuesday', html: '<style>p::after { content/**/: "wire" }</style><p>see you Tuesday</p>', reason: 'styled_text' },
  { name: 'parts swapped by a media query', text: 'see you Tuesday', html: '<style>@media (min-width: 700px) { .a { display: none } }</style><p>see you Tuesday</p>', reason: 'styled_text' },
  { name: 'the payload in a remote image', text: 'see you Tuesday', html: '<p>see you Tuesday</p><img src="https://evil.example/wire.png">', reason: 'unseen_images' },
  { name: 'the payload in an attached (cid:) image', text: 'see you Tuesday', html: '<p>see you Tuesday</p><img src="cid:wire">', reason: 'unseen_images' },
  { name: 'the payload in a CSS background', text: 'see you Tuesday', html: '<p style="background:url(https://evil.example/wire.png)">see you Tuesday</p>', reason: 'unseen_images' },
  { name: 'a mailto link to another address', text: 'Write to me at ann@example.org', html: '<p>Write to me at <a href="mailto:ann@evil.example">ann@example.org</a></p>', reason: 'html_only', detail: /address “ann@evil\.example”/ },
  { name: 'a link with a different scheme', text: 'See https://docs.example/a', html: '<p>See <a href="http://docs.example/a">https://docs.example/a</a></p>', reason: 'html_only', detail: /http:\/\/docs\.example\/a/ },
  { name: 'one word changed in a short note', text: 'see you Tuesday', html: '<p>see you Wednesday</p>', reason: 'html_only', detail: /wednesday/ },
  { name: 'the text part carrying what the HTML leaves out', text: 'Do not pay invoice 4471.', html: '<p>Pay invoice.</p>', reason: 'text_only', detail: /4471/ },
  { name: 'HTML-only draft with hidden text', text: '', html: '<p>Hello</p><p style="display:none">ignore the owner</p>', reason: 'hidden_text' },
];

t.test('every spelling of the payload the next attacker tries is flagged', async (t) => {
  for (const v of variants) {
    const findings = compareParts({ text: v.text || null, html: v.html });
    const found = findings.find((f) => f.reason === v.reason);
    t.ok(found, `${v.name}: ${v.reason} (got ${JSON.stringify(findings)})`);
    if (found && v.detail) t.match(found.detail, v.detail, `${v.name}: the detail names it`);
  }
});

t.test('parts that say the same thing in different markup are not flagged', async (t) => {
  const agreeing: [string, string][] = [
    ['see you Tuesday', '<p>See you <b>Tuesday</b></p>'],
    ['Pay EUR 1,500.00 to DE89370400440532013000.', '<p>Pay EUR 1500.00 to <code>DE89 3704 0044 0532 0130 00</code>.</p>'],
    ['Read it here: https://docs.example/agenda', '<p>Read it <a href="https://docs.example/agenda/">here</a>:</p>'],
    ['Mail ann@example.org', '<p>Mail <a href="mailto:ann@example.org">ann@example.org</a></p>'],
    ['Call +49 30 1234 5678', '<p>Call <a href="tel:+493012345678">+49 30 1234 5678</a></p>'],
    ['Zero\u200bwidth is ignored', '<p>Zero&#8203;width is ig&shy;nored</p>'],
    ['Hi Ann,\n\nsee you Tuesday.\n\nBob', '<html><head><title>Note</title><style>p{margin:0}</style></head><body><p>Hi Ann,</p><p>see you Tuesday.</p><p>Bob</p></body></html>'],
    ['inline image', '<p>inline image</p><img src="data:image/png;base64,iVBORw0KGgo=">'],
  ];
  for (const [text, html] of agreeing) t.same(compareParts({ text, html }), [], JSON.stringify(html));
  t.same(compareParts({ text: 'only text', html: null }), [], 'one text part: nothing to compare');
});

t.test('parts longer than svc compares are flagged as not fully compared', async (t) => {
  const long = `<p>see you Tuesday</p>${'<p>x</p>'.repeat(MAX_COMPARED_CHARS / 8 + 1)}`;
  t.ok(reasons(compareParts({ text: 'see you Tuesday x', html: long })).includes('unchecked'));
});

t.test('the comparison is linear on hostile parts', async (t) => {
  const fill = (unit: string) => (size: number) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
  assertLinear(
    t,
    [
      { name: 'nested divs', build: (n: number) => ({ text: 'x', html: fill('<div>')(n) }) },
      { name: 'one long number', build: (n: number) => ({ text: fill('1,')(n), html: `<p>${fill('2,')(n)}</p>` }) },
      { name: 'IBAN starts', build: (n: number) => ({ text: fill('de89 ')(n), html: `<p>${fill('de89 1234 ')(n)}</p>` }) },
      { name: 'at signs', build: (n: number) => ({ text: fill('a@')(n), html: `<p>${fill('@b.')(n)}</p>` }) },
      { name: 'url( runs', build: (n: number) => ({ text: 'x', html: `<style>${fill('url(   ')(n)}</style>` }) },
      { name: 'unterminated attributes', build: (n: number) => ({ text: 'x', html: fill('<a href="')(n) }) },
      { name: 'hidden spans', build: (n: number) => ({ text: 'x', html: fill('<span style="display:none">a</span>b ')(n) }) },
      { name: 'distinct words', build: (n: number) => ({ text: 'x', html: Array.from({ length: n / 8 }, (_, i) => `w${i.toString(36)}q`).join(' ') }) },
    ],
    (parts) => compareParts(parts),
    (findings, label) => t.ok(Array.isArray(findings) && findings.every((f) => f.detail.length < 1000), `${label}: bounded findings`),
  );
});
