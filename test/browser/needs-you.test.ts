/**
 * "Needs you" (issue 36 §3): the four queues that wait for the owner on one page, each item
 * settled in place, with their total in the navigation. Every item is real: a send under the
 * approval policy, a send the outbound guard held, an owner's send whose answer a real SMTP smart
 * host never gave (send unknown), and an object at a real edge that does not decrypt with the
 * home's key (quarantine), pulled by the running service.
 */
import t from 'tap';
import path from 'node:path';
import { Edge } from '../../src/edge/edge.js';
import { SealedBuffer } from '../../src/edge/buffer.js';
import { api, setupOwner, startSvc, tempDir } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { startSink } from '../helpers/sink.js';
import { launchBrowser, signIn, newPage, screenshot } from '../helpers/browser.js';

const TOKEN = 'edge-test-token-0123456789abcdef';
const dns = await startLoopbackDns({});
const edgeDir = path.join(tempDir('svc-edge-'), 'edge');
const edgeOptions = (apiPort: number) => ({ dataDir: edgeDir, smtp: { host: '127.0.0.1', port: 0 }, api: { host: '127.0.0.1', port: apiPort }, apiToken: TOKEN, hostname: 'mx.test', resolver: dns.resolver });
let edge = new Edge(edgeOptions(0));
const bound = await edge.start();
// The smart host takes each message and hangs up before answering: the outcome is unknown.
const sink = await startSink('hangup');
const svc = await startSvc();
t.teardown(async () => {
  await svc.stop();
  await edge.stop();
  await sink.close();
  await dns.close();
});
const session = await setupOwner(svc);
const owner = { token: svc.ownerToken };
await api(svc.url, 'PUT', '/v0/owner/transport', { ...owner, body: { edge: { url: bound.api.url, token: TOKEN }, smtp: { host: '127.0.0.1', port: sink.port } } });
for (const username of ['agent', 'boss']) await api(svc.url, 'POST', '/v0/inboxes', { ...owner, body: { username, domain: 'q.test' } });
const keyFor = async (send_policy: string) =>
  (
    await api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', {
      ...owner,
      body: { name: `${send_policy} agent`, inbox_id: 'agent@q.test', permissions: ['message_send', 'message_read', 'draft_read'], send_policy },
    })
  ).body.api_key;
const careful = await keyFor('approval');
const guarded = await keyFor('guarded');

const browser = await launchBrowser();
t.teardown(() => browser.close());
await signIn(browser, svc.url, session);
const page = await newPage(browser);
const count = page.getByTestId('needs-you-count');

async function agentSend(token: string, subject: string, text: string): Promise<string> {
  const res = await api<{ code: string; draft_id: string }>(svc.url, 'POST', '/v0/inboxes/agent%40q.test/messages/send', { token, body: { to: 'boss@q.test', subject, text } });
  if (res.status !== 403 || res.body.code !== 'approval_required') throw new Error(`expected approval_required, got ${res.status} ${res.text}`);
  return res.body.draft_id;
}

let approvalId = '';
let heldId = '';
let unknownId = '';

t.test('an approval, a held draft, a send-unknown message and a quarantined message are listed together, counted in the navigation', async (t) => {
  await page.goto(svc.url + '/needs-you');
  await page.locator('[data-live="live"]').waitFor();
  await page.getByText('Nothing is waiting for approval.').waitFor();
  t.equal(await count.count(), 0, 'no count while nothing waits');

  approvalId = await agentSend(careful, 'Quarterly numbers', 'Here are the numbers you asked for.');
  heldId = await agentSend(guarded, 'Deploy keys', 'The key is AKIAZ7QF3XK2MPLW4NRD, keep it safe.');
  unknownId = (await api<{ message_id: string }>(svc.url, 'POST', '/v0/inboxes/boss%40q.test/messages/send', { ...owner, body: { to: 'someone@remote.test', subject: 'Did it go?', text: 'x' } })).body.message_id;
  // An object not sealed to this home's key lands at the edge (restarted on the same port).
  await edge.stop();
  const buffer = new SealedBuffer(edgeDir);
  buffer.open();
  await buffer.commit('eyJhbGciOiJFQ0RILUVTIn0.AAAA.AAAA.AAAA.AAAA', { receivedAt: new Date().toISOString(), recipients: ['agent@q.test'], keyId: 'another-home' });
  await buffer.settle();
  edge = new Edge(edgeOptions(bound.api.port));
  await edge.start();

  await page.locator('[data-testid="approvals"] li', { hasText: 'Quarterly numbers' }).waitFor();
  await page.locator(`[data-testid="held"] [data-draft="${heldId}"] [data-testid="guard-findings"]`).waitFor();
  await page.locator('[data-testid="send-unknown"] li', { hasText: 'Did it go?' }).waitFor({ timeout: 45_000 });
  await page.locator('[data-testid="quarantine"] li', { hasText: 'Could not be decrypted' }).waitFor({ timeout: 30_000 });
  await page.locator('[data-testid="needs-you-count"]', { hasText: '4' }).waitFor();
  t.equal(await count.textContent(), '4', 'the navigation counts all four, without a reload');
  t.equal(await page.locator(`[data-testid="approvals"] [data-draft="${heldId}"]`).count(), 0, 'a held draft is not also listed as an ordinary approval');
  const approval = page.locator(`[data-draft="${approvalId}"]`);
  t.match(await approval.getByTestId('draft-text').textContent(), 'Here are the numbers you asked for.', 'the approval shows what will be sent');
  for (const [id, n] of [['approvals', '1'], ['held', '1'], ['send-unknown', '1'], ['quarantine', '1']]) t.equal(await page.getByTestId(`${id}-count`).textContent(), n, `${id} counted in its heading`);
  await screenshot(page, 'needs-you');
});

t.test('each item is settled in place and the count follows', async (t) => {
  // Later sends are answered, so approving below really sends.
  sink.mode = 'accept';

  const held = page.locator(`[data-draft="${heldId}"]`);
  await held.getByLabel('Reason for rejecting').fill('no keys in mail');
  await held.getByRole('button', { name: 'Reject' }).click();
  await held.waitFor({ state: 'detached' });
  await page.locator('[data-testid="approval-result"]', { hasText: /Deploy keys.*rejected/ }).waitFor();
  const rejected = await api<{ state: string }>(svc.url, 'GET', `/v0/inboxes/agent%40q.test/drafts/${heldId}`, owner);
  t.equal(rejected.body.state, 'rejected', 'the held draft is rejected');
  await page.locator('[data-testid="needs-you-count"]', { hasText: '3' }).waitFor();

  const approval = page.locator(`[data-draft="${approvalId}"]`);
  await approval.getByRole('button', { name: 'Approve' }).click();
  await approval.waitFor({ state: 'detached' });
  await page.locator('[data-testid="approval-result"]', { hasText: /Quarterly numbers.*approved and sent/ }).waitFor();
  await page.locator('[data-testid="needs-you-count"]', { hasText: '2' }).waitFor();
  await t.resolves(sink.waitFor(1, 30_000), 'the approved message went out through the smart host');

  const unknown = page.locator(`[data-testid="send-unknown"] [data-message="${unknownId}"]`);
  await unknown.getByRole('button', { name: 'It was not sent' }).click();
  await unknown.waitFor({ state: 'detached' });
  const m = await api<{ send_status: string }>(svc.url, 'GET', `/v0/inboxes/boss%40q.test/messages/${encodeURIComponent(unknownId)}`, owner);
  t.equal(m.body.send_status, 'failed', 'recorded as not sent');
  await page.locator('[data-testid="needs-you-count"]', { hasText: '1' }).waitFor();

  const stuck = page.locator('[data-testid="quarantine"] li').first();
  await stuck.getByRole('button', { name: 'Retry' }).click();
  await page.getByRole('status').filter({ hasText: 'it still fails' }).waitFor();
  t.equal(await page.locator('[data-testid="quarantine"] li').count(), 1, 'a retry that fails keeps the item');
  page.once('dialog', (d) => void d.accept());
  await stuck.getByRole('button', { name: 'Delete' }).click();
  await page.getByText('No incoming mail is stuck.').waitFor();
  await count.waitFor({ state: 'detached' });
  const listed = await api<{ total: number }>(svc.url, 'GET', '/v0/owner/quarantine', owner);
  t.equal(listed.body.total, 0, 'deleted');
  t.same(page.problems, [], 'no script errors');
});

t.test('the old queue addresses open their section of Needs you', async (t) => {
  for (const [old, section] of [
    ['/approvals', 'approvals'],
    ['/send-unknown', 'send-unknown'],
    ['/quarantine', 'quarantine'],
  ]) {
    await page.goto(svc.url + old);
    await page.waitForURL(new RegExp(`/needs-you#${section}$`));
    await page.locator(`section#${section}`).waitFor();
    t.ok(await page.locator(`section#${section}`).isVisible(), `${old} shows its section`);
    t.equal(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: /Needs you/ }).getAttribute('aria-current'), 'page', 'the navigation marks Needs you');
  }
});
