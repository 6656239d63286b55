/**
 * Control in the browser (issue 8, flow 3): drafts an agent sent under the approval policy appear
 * live in Approvals, can be read, edited, approved or rejected with a reason; scheduled drafts are
 * listed and can be unscheduled.
 */
import t from 'tap';
import { api, setupOwner, startSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { startSink } from '../helpers/sink.js';
import { launchBrowser, signIn, newPage, screenshot } from '../helpers/browser.js';

const dns = await startLoopbackDns({});
t.teardown(() => dns.close());
const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
t.teardown(() => svc.stop());
const session = await setupOwner(svc);
const owner = { token: svc.ownerToken };
for (const username of ['agent', 'boss']) await api(svc.url, 'POST', '/v0/inboxes', { ...owner, body: { username, domain: 'local.test' } });
const key = await api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', {
  ...owner,
  body: { name: 'careful agent', inbox_id: 'agent@local.test', permissions: ['message_send', 'message_read', 'draft_read'], send_policy: 'approval' },
});
const agent = { token: key.body.api_key };

const browser = await launchBrowser();
t.teardown(() => browser.close());
await signIn(browser, svc.url, session);
const page = await newPage(browser);

async function agentSend(subject: string): Promise<string> {
  const res = await api<{ code: string; draft_id: string }>(svc.url, 'POST', '/v0/inboxes/agent%40local.test/messages/send', { ...agent, body: { to: 'boss@local.test', subject, text: `Body of ${subject}` } });
  if (res.status !== 403 || res.body.code !== 'approval_required') throw new Error(`expected approval_required, got ${res.status} ${res.text}`);
  return res.body.draft_id;
}

t.test('a send under the approval policy appears in Approvals without a reload', async (t) => {
  await page.goto(svc.url + '/approvals');
  await page.locator('[data-live="live"]').waitFor();
  await page.getByText('Nothing is waiting for approval.').waitFor();
  const draftId = await agentSend('Please approve me');
  await page.locator(`[data-draft="${draftId}"]`).waitFor();
  t.match(await page.locator(`[data-draft="${draftId}"]`).textContent(), /Please approve me/);
});

t.test('the owner reads and edits the draft, then approves it and it is sent as edited', async (t) => {
  const item = page.locator('[data-testid="approvals"] li', { hasText: 'Please approve me' });
  await item.getByRole('button', { name: 'Edit' }).click();
  await item.getByLabel('Text').waitFor();
  t.equal(await item.getByLabel('Text').inputValue(), 'Body of Please approve me', 'the draft body is shown');
  await item.getByLabel('Subject').fill('Approved subject');
  await item.getByRole('button', { name: 'Save changes' }).click();
  await page.locator('[data-testid="approvals"] li', { hasText: 'Approved subject' }).waitFor();
  await screenshot(page, 'approvals');
  await page.locator('[data-testid="approvals"] li', { hasText: 'Approved subject' }).getByRole('button', { name: 'Approve' }).click();
  await page.getByText('Nothing is waiting for approval.').waitFor();
  // The list has refreshed (the draft left it); the confirmation is still there to read.
  const confirmation = page.locator('[data-testid="approval-result"]');
  await confirmation.waitFor();
  t.match(await confirmation.textContent(), /Approved subject.*approved and sent/, 'the approval is confirmed after the list refreshed');
  const deadline = Date.now() + 45_000;
  let subjects: string[] = [];
  while (!subjects.includes('Approved subject') && Date.now() < deadline) {
    const res = await api<{ messages: { subject: string }[] }>(svc.url, 'GET', '/v0/inboxes/boss%40local.test/messages', owner);
    subjects = res.body.messages.map((m) => m.subject);
    await new Promise((r) => setTimeout(r, 200));
  }
  t.ok(subjects.includes('Approved subject'), 'the edited message arrived');
});

t.test('rejecting with a reason makes the draft final', async (t) => {
  const draftId = await agentSend('Do not send this');
  const item = page.locator(`[data-draft="${draftId}"]`);
  await item.waitFor();
  await item.getByLabel('Reason for rejecting').fill('not today');
  await item.getByRole('button', { name: 'Reject' }).click();
  await item.waitFor({ state: 'detached' });
  // The next decision replaces the confirmation of the previous one.
  await page.locator('[data-testid="approval-result"]', { hasText: 'Do not send this' }).waitFor();
  t.match(await page.locator('[data-testid="approval-result"]').textContent(), /Do not send this.*rejected/);
  const draft = await api<{ state: string; send_reason: string | null }>(svc.url, 'GET', `/v0/inboxes/agent%40local.test/drafts/${draftId}`, owner);
  t.equal(draft.body.state, 'rejected');
  t.match(draft.body.send_reason ?? '', /not today/);
});

t.test('a scheduled draft is listed and can be unscheduled', async (t) => {
  const sendAt = new Date(Date.now() + 3600_000).toISOString();
  const created = await api<{ draft_id: string; state: string }>(svc.url, 'POST', '/v0/inboxes/boss%40local.test/drafts', {
    ...owner,
    body: { to: ['agent@local.test'], subject: 'Later', text: 'in an hour', send_at: sendAt },
  });
  t.equal(created.body.state, 'scheduled');
  await page.goto(svc.url + '/scheduled');
  const item = page.locator(`[data-draft="${created.body.draft_id}"]`);
  await item.waitFor();
  await screenshot(page, 'scheduled');
  await item.getByRole('button', { name: 'Cancel schedule' }).click();
  await item.waitFor({ state: 'detached' });
  const draft = await api<{ state: string; send_at: string | null }>(svc.url, 'GET', `/v0/inboxes/boss%40local.test/drafts/${created.body.draft_id}`, owner);
  t.match(draft.body, { state: 'draft', send_at: null });
});

t.test('a send held by the outbound guard shows its reasons in Approvals (issue 20 §4)', async (t) => {
  const guarded = await api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', {
    ...owner,
    body: { name: 'guarded agent', inbox_id: 'agent@local.test', permissions: ['message_send', 'message_read', 'draft_read'], send_policy: 'guarded' },
  });
  await page.goto(svc.url + '/approvals');
  await page.locator('[data-live="live"]').waitFor();
  const res = await api<{ code: string; draft_id: string }>(svc.url, 'POST', '/v0/inboxes/agent%40local.test/messages/send', {
    token: guarded.body.api_key,
    body: { to: 'boss@local.test', subject: 'Deploy keys', text: 'The key is AKIAZ7QF3XK2MPLW4NRD, keep it safe.' },
  });
  t.equal(res.body.code, 'approval_required');
  const warning = page.locator(`[data-draft="${res.body.draft_id}"] [data-testid="guard-findings"]`);
  await warning.waitFor();
  t.match(await warning.textContent(), /Held by the outbound guard.*credentials.*AWS access key/i);
  t.notMatch(await warning.textContent(), /AKIAZ7QF3XK2MPLW4NRD/, 'the reason names the kind of secret, not the secret');
  await screenshot(page, 'approvals-guarded');
});

t.test('the owner tunes the outbound guard on the API keys page', async (t) => {
  await page.goto(svc.url + '/guard');
  const section = page.locator('[data-testid="guard-settings"]');
  const credentials = section.getByRole('checkbox', { name: /API keys, access tokens and passwords/ });
  await credentials.waitFor();
  t.ok(await credentials.isChecked(), 'every check starts on');
  // The box follows the stored setting: it turns off once svc has stored the change.
  await credentials.click();
  await section.locator('input[name="guard-credentials"]:not(:checked)').waitFor();
  const readGuard = async () => (await api<{ checks: { name: string; enabled: boolean }[]; secrets: { hint: string }[] }>(svc.url, 'GET', '/v0/owner/guard', owner)).body;
  const deadline = Date.now() + 10_000;
  while ((await readGuard()).checks.find((c) => c.name === 'credentials')!.enabled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  t.equal((await readGuard()).checks.find((c) => c.name === 'credentials')!.enabled, false, 'stored');
  await section.getByLabel('Secret to guard').fill('my-bank-pin-and-password-7781');
  await section.getByRole('button', { name: 'Add secret' }).click();
  await section.locator('[data-testid="guard-secrets"] li', { hasText: '…7781' }).waitFor();
  t.notMatch(await section.textContent(), /my-bank-pin/, 'the page shows the last 4 characters only');
  t.match((await readGuard()).secrets, [{ hint: '…7781' }]);
  await screenshot(page, 'guard-settings');
  await credentials.click();
  await section.locator('input[name="guard-credentials"]:checked').waitFor();
  t.same(page.problems, [], 'no script errors');
});

t.test('a send whose answer was lost is resolved from the send-unknown queue', async (t) => {
  await page.goto(svc.url + '/send-unknown');
  await page.getByText('No message has an unknown outcome.').waitFor();
  // An SMTP smart host that takes the message and hangs up before answering: the outcome is unknown.
  const sink = await startSink('hangup');
  t.teardown(() => sink.close());
  const put = await api(svc.url, 'PUT', '/v0/owner/transport', { ...owner, body: { smtp: { host: '127.0.0.1', port: sink.port } } });
  t.equal(put.status, 200);
  const sent = await api<{ message_id: string }>(svc.url, 'POST', '/v0/inboxes/boss%40local.test/messages/send', { ...owner, body: { to: 'someone@remote.test', subject: 'Did it go?', text: 'x' } });
  const item = page.locator('[data-testid="send-unknown"] li', { hasText: 'Did it go?' });
  await item.waitFor({ timeout: 45_000 });
  await screenshot(page, 'send-unknown');
  await item.getByRole('button', { name: 'It was sent' }).click();
  await item.waitFor({ state: 'detached' });
  const m = await api<{ send_status: string }>(svc.url, 'GET', `/v0/inboxes/boss%40local.test/messages/${encodeURIComponent(sent.body.message_id)}`, owner);
  t.equal(m.body.send_status, 'sent', 'recorded as sent by the owner');
  t.same(page.problems, [], 'no script errors');
});
