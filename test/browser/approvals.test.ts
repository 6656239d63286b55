/**
 * The Approvals card shows what the recipient gets (issue 32, item 4): an owner approved "see you
 * Tuesday" while the HTML part said "wire EUR 48,000 to DE89…" and replies went to the agent's
 * address. The card now shows the From line, Reply-To, custom headers, attachments, the HTML part
 * rendered in a sandboxed frame that loads nothing remote, and a flag when the parts disagree.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { api, setupOwner, startSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { launchBrowser, signIn, newPage, screenshot } from '../helpers/browser.js';

const dns = await startLoopbackDns({});
t.teardown(() => dns.close());
const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
t.teardown(() => svc.stop());
const session = await setupOwner(svc);
const owner = { token: svc.ownerToken };
await api(svc.url, 'POST', '/v0/inboxes', { ...owner, body: { username: 'agent', domain: 'local.test', display_name: 'Agent Smith' } });
await api(svc.url, 'POST', '/v0/inboxes', { ...owner, body: { username: 'boss', domain: 'local.test' } });
const key = await api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', {
  ...owner,
  body: { name: 'careful agent', inbox_id: 'agent@local.test', permissions: ['message_send', 'message_read', 'draft_read'], send_policy: 'approval' },
});
const agent = { token: key.body.api_key };

// A loopback server standing in for the agent's image host: the card must never ask it for anything.
const remoteHits: string[] = [];
const imageHost = http.createServer((req, res) => {
  remoteHits.push(req.url ?? '');
  res.end();
});
await new Promise<void>((resolve) => imageHost.listen(0, '127.0.0.1', resolve));
t.teardown(() => imageHost.close());
const imageUrl = `http://127.0.0.1:${(imageHost.address() as AddressInfo).port}/pixel.png`;

const browser = await launchBrowser();
t.teardown(() => browser.close());
await signIn(browser, svc.url, session);
const page = await newPage(browser);

async function agentSend(body: Record<string, unknown>): Promise<string> {
  const res = await api<{ code: string; draft_id: string }>(svc.url, 'POST', '/v0/inboxes/agent%40local.test/messages/send', { ...agent, body: { to: 'boss@local.test', ...body } });
  if (res.status !== 403 || res.body.code !== 'approval_required') throw new Error(`expected approval_required, got ${res.status} ${res.text}`);
  return res.body.draft_id;
}

const WIRE = 'wire EUR 48,000 to DE89 3704 0044 0532 0130 00';

t.test('the card shows the HTML part rendered, Reply-To, headers, attachments and the mismatch flag', async (t) => {
  const draftId = await agentSend({
    subject: 'Tuesday',
    text: 'see you Tuesday',
    html: `<p>${WIRE}</p><img src="${imageUrl}" alt=""><script>document.body.setAttribute('data-ran', 'yes')</script>`,
    reply_to: 'payments@evil.example',
    headers: { 'X-Campaign': 'tuesday-note' },
    attachments: [{ filename: 'invoice.pdf', content_type: 'application/pdf', content: Buffer.from('%PDF-1.4 not really').toString('base64') }],
  });
  await page.goto(svc.url + '/approvals');
  const card = page.locator(`[data-draft="${draftId}"]`);
  await card.locator('[data-testid="draft-content"]').waitFor();

  t.match(await card.locator('[data-testid="draft-from"]').textContent(), /Agent Smith <agent@local\.test>/, 'the From line with its display name');
  t.match(await card.locator('[data-testid="draft-reply-to"]').textContent(), /payments@evil\.example/, 'Reply-To is shown');
  t.match(await card.locator('[data-testid="draft-headers"]').textContent(), /X-Campaign: tuesday-note/, 'the custom header is shown');
  t.match(await card.locator('[data-testid="draft-attachments"]').textContent(), /invoice\.pdf.*application\/pdf/, 'the attachment with its type');
  t.match(await card.locator('[data-testid="draft-text"]').textContent(), /see you Tuesday/, 'the text part is shown');

  const frame = card.frameLocator('iframe[data-testid="draft-html"]');
  await frame.locator('p').waitFor();
  t.equal((await frame.locator('p').textContent())?.trim(), WIRE, 'the HTML part is rendered inside the frame');
  t.equal(await card.locator('iframe[data-testid="draft-html"]').getAttribute('sandbox'), '', 'the frame is sandboxed');
  t.equal(await frame.locator('body').getAttribute('data-ran'), null, 'no script of the HTML ran');

  const flag = card.locator('[data-testid="part-mismatch"]');
  const flagText = (await flag.textContent()) ?? '';
  t.match(flagText, /html_only/, 'the mismatch is flagged');
  t.match(flagText, /DE89 3704 0044 0532 0130 00/, 'the flag names the IBAN the text lacks');
  t.match(flagText, /48,000/, 'and the amount');
  t.match(flagText, /unseen_images/, 'and the image the card does not load');
  await screenshot(page, 'approvals-mismatch');
  t.same(remoteHits, [], 'the card loaded nothing from the remote image host');
});

t.test('a draft whose text and HTML agree is not flagged', async (t) => {
  const draftId = await agentSend({ subject: 'Agreeing parts', text: 'See you Tuesday at 10:30.', html: '<p>See you <b>Tuesday</b> at 10:30.</p>' });
  await page.goto(svc.url + '/approvals');
  const card = page.locator(`[data-draft="${draftId}"]`);
  await card.locator('[data-testid="draft-content"]').waitFor();
  await card.frameLocator('iframe[data-testid="draft-html"]').locator('p').waitFor();
  t.equal(await card.locator('[data-testid="part-mismatch"]').count(), 0, 'no mismatch flag');
  t.equal(await card.locator('[data-testid="draft-reply-to"]').count(), 0, 'no Reply-To line when there is none');
  t.ok(await card.getByRole('button', { name: 'Approve' }).isEnabled(), 'the draft can be approved once shown');
});
