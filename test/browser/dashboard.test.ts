/**
 * The dashboard (issue 20 §5, docs/metrics.md) in Chromium: the SVG chart of the home's mail and
 * the live counts follow real events without a reload — mail arriving over SMTP through the
 * built-in edge raises the unread count and the received line, a draft awaiting approval raises
 * that count — and the period and inbox pickers redraw from the metrics API.
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import { api, setupOwner, startSvc } from '../helpers/svc.js';
import { launchBrowser, newPage, screenshot, signIn } from '../helpers/browser.js';
import { startLoopbackDns } from '../helpers/dns.js';

const dns = await startLoopbackDns({});
const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
t.teardown(async () => {
  await svc.stop();
  await dns.close();
});
const session = await setupOwner(svc);
const owner = svc.ownerToken;
for (const username of ['ops', 'sales']) await api(svc.url, 'POST', '/v0/inboxes', { token: owner, body: { username, domain: 'dash.test' } });
const smtpPort = Number(String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp).split(':')[1]);
const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true });
async function mail(to: string, subject: string) {
  for (let tries = 0; ; tries++) {
    try {
      return await smtp.sendMail({ from: 'someone@elsewhere.test', to, subject, text: 'hello' });
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || tries > 100) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

const browser = await launchBrowser();
t.teardown(() => browser.close());
await signIn(browser, svc.url, session);
const page = await newPage(browser);

const text = async (testId: string) => (await page.getByTestId(testId).textContent())?.trim();
const waitText = (testId: string, value: string) =>
  page.waitForFunction(([id, v]) => document.querySelector(`[data-testid="${id}"]`)?.textContent?.trim() === v, [testId, value] as const, { timeout: 20_000 });

t.test('the chart and the counts follow live events', async (t) => {
  await page.goto(svc.url + '/dashboard');
  await page.locator('[data-live="live"]').waitFor();
  await page.getByRole('link', { name: 'Dashboard' }).waitFor();
  // Each count comes from its own request (quarantine from the owner's list): wait for each.
  await waitText('count-unread', '0');
  await waitText('count-pending', '0');
  await waitText('count-quarantine', '0');
  t.equal(await text('count-pending'), '0');
  t.equal(await text('count-quarantine'), '0', 'the quarantine count loads (it showed — until its own request answered, seen once on a loaded CI run)');
  t.ok(await page.locator('svg[data-testid="metrics-chart"] polyline[data-series="message.received"]').first().count(), 'the SVG chart is drawn');

  await mail('ops@dash.test', 'first');
  await mail('ops@dash.test', 'second');
  await waitText('count-unread', '2');
  await page.waitForFunction(() => document.querySelector('section polyline[data-series="message.received"]')?.getAttribute('data-total') === '2', undefined, { timeout: 20_000 });
  t.pass('two received messages are counted and drawn without a reload');
  const opsRow = page.locator('tr[data-inbox="ops@dash.test"]');
  await page.waitForFunction(() => document.querySelector('tr[data-inbox="ops@dash.test"] [data-col="unread"]')?.textContent === '2', undefined, { timeout: 20_000 });
  // The row's received count comes from its own metrics request: wait for it like the others.
  const cell = (inbox: string, col: string, value: string) =>
    page.waitForFunction(([i, c, v]) => document.querySelector(`tr[data-inbox="${i}"] [data-col="${c}"]`)?.textContent === v, [inbox, col, value] as const, { timeout: 20_000 });
  await cell('ops@dash.test', 'message.received', '2');
  await cell('sales@dash.test', 'message.received', '0');
  t.equal(await opsRow.locator('[data-col="message.received"]').textContent(), '2', 'the inbox row counts its own mail');
  t.equal(await page.locator('tr[data-inbox="sales@dash.test"] [data-col="message.received"]').textContent(), '0');

  // An agent with the approval policy asks to send: a draft now awaits the owner.
  const key = await api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', { token: owner, body: { name: 'asker', inbox_ids: ['sales@dash.test'], permissions: ['message_send', 'message_read', 'draft_read'], send_policy: 'approval' } });
  const asked = await api(svc.url, 'POST', `/v0/inboxes/${encodeURIComponent('sales@dash.test')}/messages/send`, { token: key.body.api_key, body: { to: 'someone@elsewhere.test', subject: 'May I?', text: 'x' } });
  t.equal(asked.status, 403, 'approval_required');
  await waitText('count-pending', '1');
  await page.waitForFunction(() => document.querySelector('tr[data-inbox="sales@dash.test"] [data-col="pending_approval"]')?.textContent === '1', undefined, { timeout: 20_000 });
  t.pass('the draft awaiting approval is counted live, on its inbox too');
  await screenshot(page, 'dashboard');

  await page.selectOption('select[name="inbox"]', 'sales@dash.test');
  await page.waitForFunction(() => document.querySelector('section polyline[data-series="message.received"]')?.getAttribute('data-total') === '0', undefined, { timeout: 10_000 });
  await page.selectOption('select[name="range"]', '30d');
  await page.selectOption('select[name="inbox"]', '');
  await page.waitForFunction(() => document.querySelector('section polyline[data-series="message.received"]')?.getAttribute('data-total') === '2', undefined, { timeout: 10_000 });
  t.pass('the pickers redraw the chart for one inbox and another period');
  t.same(page.problems, [], 'no script errors');
});
