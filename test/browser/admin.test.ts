/**
 * Administration in the browser (issue 8, flow 4): API keys with scope, permissions and policy
 * (secret shown once), webhooks with health, lists, domains (plan, zone file), transport, and the
 * owner-only pages that must at least load: remote access, quarantine, OAuth apps.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { api, setupOwner, startSvc } from '../helpers/svc.js';
import { launchBrowser, signIn, newPage, screenshot } from '../helpers/browser.js';

const svc = await startSvc();
t.teardown(() => svc.stop());
const session = await setupOwner(svc);
const owner = { token: svc.ownerToken };
for (const username of ['one', 'two']) await api(svc.url, 'POST', '/v0/inboxes', { ...owner, body: { username, domain: 'example.test' } });

const browser = await launchBrowser();
t.teardown(() => browser.close());
await signIn(browser, svc.url, session);
const page = await newPage(browser);

t.test('an API key is created with an inbox scope, chosen permissions and policy; its secret is shown once', async (t) => {
  await page.goto(svc.url + '/api-keys');
  await page.getByText('New API key').click();
  await page.getByLabel('Name').fill('scoped reader');
  await page.getByRole('checkbox', { name: 'one@example.test' }).check();
  await page.getByRole('radio', { name: /Read only/ }).check();
  t.equal(await page.getByLabel('Send policy').inputValue(), 'read_only', 'the Read only preset cannot send');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secret = (await page.getByTestId('new-secret').locator('code').textContent()) ?? '';
  t.ok(secret.length > 20, 'the secret is shown');
  await screenshot(page, 'api-keys');
  const listed = await api<{ inboxes: { inbox_id: string }[] }>(svc.url, 'GET', '/v0/inboxes', { token: secret });
  t.same(listed.body.inboxes.map((i) => i.inbox_id), ['one@example.test'], 'the key sees only its scope');
  const stored = await api<{ api_keys: { name: string; send_policy: string; permissions: Record<string, boolean> }[] }>(svc.url, 'GET', '/v0/api-keys', owner);
  t.match(stored.body.api_keys, [{ name: 'scoped reader', send_policy: 'read_only', permissions: { inbox_read: true, message_read: true, draft_read: true, draft_create: false } }]);
  t.equal(await page.locator('[data-testid="api-keys"] tbody tr', { hasText: 'scoped reader' }).getByTestId('key-permissions').innerText(), 'Read only', 'the preset named, not its permissions');
  await page.getByRole('button', { name: 'Done' }).click();
  await page.reload();
  await page.locator('[data-testid="api-keys"] tbody tr').first().waitFor();
  t.notOk(await page.getByText(secret).count(), 'not shown again');
  page.once('dialog', (d) => void d.accept());
  await page.locator('[data-testid="api-keys"] tbody tr', { hasText: 'scoped reader' }).getByRole('button', { name: 'Revoke' }).click();
  await page.locator('[data-testid="api-keys"] tbody tr', { hasText: 'scoped reader' }).waitFor({ state: 'detached' });
  t.equal((await api(svc.url, 'GET', '/v0/inboxes', { token: secret })).status, 401, 'revoked at once');
});

t.test('a webhook is created with its secret shown once, shows its health and can be disabled', async (t) => {
  const receiver = http.createServer((_req, res) => res.writeHead(204).end());
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  t.teardown(() => receiver.close());
  await page.goto(svc.url + '/webhooks');
  await page.getByText('New webhook').click();
  await page.getByLabel('URL').fill(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`);
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await t.resolves(page.getByTestId('new-secret').getByText(/whsec_/).waitFor(), 'secret shown');
  const row = page.locator('[data-testid="webhooks"] li').first();
  await row.getByText('no deliveries yet').waitFor();
  await screenshot(page, 'webhooks');
  await row.getByRole('button', { name: 'Disable' }).click();
  await row.getByText('disabled', { exact: true }).waitFor();
  const hooks = await api<{ webhooks: { enabled: boolean }[] }>(svc.url, 'GET', '/v0/webhooks', owner);
  t.match(hooks.body.webhooks, [{ enabled: false }]);
});

t.test('block list entries are added and removed', async (t) => {
  await page.goto(svc.url + '/lists');
  await page.getByLabel('Address or domain').fill('spammer.test');
  await page.getByLabel('Reason').fill('too much mail');
  await page.getByRole('button', { name: 'Add' }).click();
  await page.locator('[data-testid="entries"] li', { hasText: 'spammer.test' }).waitFor();
  const stored = await api<{ entries: { entry: string }[] }>(svc.url, 'GET', '/v0/lists/receive/block', owner);
  t.match(stored.body.entries, [{ entry: 'spammer.test' }]);
  await screenshot(page, 'lists');
  await page.locator('[data-testid="entries"] li', { hasText: 'spammer.test' }).getByRole('button', { name: 'Remove' }).click();
  await page.getByText('This list is empty.').waitFor();
  t.equal((await api<{ entries: unknown[] }>(svc.url, 'GET', '/v0/lists/receive/block', owner)).body.entries.length, 0);
});

t.test('a domain is registered, its plan shown and its zone file downloaded', async (t) => {
  await page.goto(svc.url + '/domains');
  await page.getByLabel('Domain').fill('mail.example.test');
  await page.getByRole('button', { name: 'Register domain' }).click();
  await page.locator('[data-domain="mail.example.test"]').waitFor();
  await page.getByRole('button', { name: 'Show plan' }).click();
  await page.getByTestId('plan').waitFor();
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download zone file' }).click()]);
  t.equal(download.suggestedFilename(), 'mail.example.test.zone');
  let zone = '';
  for await (const chunk of await download.createReadStream()) zone += chunk;
  t.match(zone, /mail\.example\.test/, 'the zone file names the domain');
  await screenshot(page, 'domains');
});

t.test("the SDK's setup link opens that domain's page, records shown, for the signed-in owner only", async (t) => {
  const d = await api<{ domain_id: string }>(svc.url, 'POST', '/v0/domains', { ...owner, body: { domain: 'setup.example.test' } });
  const link = await api<{ url: string }>(svc.url, 'GET', `/v0/domains/${d.body.domain_id}/setup-link`, owner);
  t.equal(link.status, 200, link.text);
  await page.goto(link.body.url);
  const item = page.locator('[data-domain="setup.example.test"]');
  await item.getByRole('button', { name: 'Show plan' }).waitFor();
  t.equal(await item.getByRole('button', { name: 'setup.example.test' }).getAttribute('aria-expanded'), 'true', 'the linked domain is open');
  t.match(await item.locator('table').innerText(), /MX\s+setup\.example\.test/, 'its records are listed');
  t.equal(await page.locator('[data-domain="mail.example.test"] button[aria-expanded="true"]').count(), 0, 'no other domain is open');

  const elsewhere = await launchBrowser();
  t.teardown(() => elsewhere.close());
  const stranger = await newPage(elsewhere);
  await stranger.goto(link.body.url);
  await stranger.waitForURL(/\/login\?return_to=%2Fdomains%2F/);
  t.equal(await stranger.locator('[data-domain="setup.example.test"]').count(), 0, "without the owner's sign-in the link shows nothing of the domain");
});

t.test('the domains page sets a DNS provider and never shows its secret', async (t) => {
  const secret = Buffer.from('a-tsig-secret-of-32-bytes-long!!').toString('base64');
  await page.goto(svc.url + '/domains');
  await page.getByTestId('dns-provider').locator('summary').click();
  await page.getByLabel('Server').fill('10.0.0.53');
  await page.getByLabel('Key name').fill('svc-update');
  await page.getByLabel(/TSIG secret/).fill(secret);
  await page.getByLabel(/Zones/).fill('example.test');
  await page.getByRole('button', { name: 'Save provider' }).click();
  await page.getByTestId('dns-provider').getByText('RFC 2136 10.0.0.53:53, key svc-update').waitFor();
  t.equal(await page.getByLabel(/TSIG secret/).inputValue(), '', 'the secret field is emptied once stored');
  t.notMatch(await page.content(), secret, 'the secret is nowhere on the page');
  const stored = await api(svc.url, 'GET', '/v0/owner/dns-provider', owner);
  t.match(stored.body, { provider: { kind: 'rfc2136', server: '10.0.0.53', key_name: 'svc-update', secret_set: true, zones: ['example.test'] } });
});

t.test('the domains page sets Cloudflare as the DNS provider: token write-only, zone id optional', async (t) => {
  const token = 'cf-token-0123456789abcdefghijklmnopqrstuv';
  await page.goto(svc.url + '/domains');
  await page.getByTestId('dns-provider').locator('summary').click();
  await page.getByTestId('dns-provider').getByLabel('Kind').selectOption('cloudflare');
  await page.getByLabel(/API token with Zone:DNS:Edit/).fill(token);
  await page.getByLabel(/Zones/).fill('example.test');
  await page.getByRole('button', { name: 'Save provider' }).click();
  await page.getByTestId('dns-provider').getByText('Cloudflare (zone looked up by name)').waitFor();
  t.equal(await page.getByLabel(/API token with Zone:DNS:Edit/).inputValue(), '', 'the token field is emptied once stored');
  t.match(await page.getByLabel(/API token with Zone:DNS:Edit/).getAttribute('type'), 'password');
  t.notMatch(await page.content(), token, 'the token is nowhere on the page');
  await page.getByLabel(/Zone ID/).fill('023e105f4ecef8ad9ca31a8372d0c353');
  await page.getByRole('button', { name: 'Save provider' }).click();
  await page.getByTestId('dns-provider').getByText('Cloudflare zone 023e105f4ecef8ad9ca31a8372d0c353').waitFor();
  const stored = await api(svc.url, 'GET', '/v0/owner/dns-provider', owner);
  t.notMatch(stored.text, token);
  t.match(stored.body, { provider: { kind: 'cloudflare', zone_id: '023e105f4ecef8ad9ca31a8372d0c353', api_token_set: true, zones: ['example.test'] } });
});

t.test('the transport page saves an SMTP smart host and never shows its password', async (t) => {
  await page.goto(svc.url + '/transport');
  await page.getByText('not configured').waitFor();
  await page.getByLabel('Host').fill('smtp.example.test');
  await page.getByLabel('Port', { exact: true }).fill('2525');
  await page.getByLabel('Username').fill('me');
  await page.getByLabel('Password (write-only)').fill('hunter2hunter2');
  await page.getByRole('button', { name: 'Save SMTP' }).click();
  await page.getByTestId('transport-state').getByText('smtp.example.test:2525').waitFor();
  const view = await api(svc.url, 'GET', '/v0/owner/transport', owner);
  t.match(view.body, { configured: true, smtp: { host: 'smtp.example.test', port: 2525, username: 'me', password_set: true } });
  t.notOk(await page.getByText('hunter2hunter2').count(), 'the password is not shown');
});

t.test('the transport page lists several edges with their health, adds one and removes one, and never shows a token', async (t) => {
  await page.goto(svc.url + '/transport');
  await page.getByLabel('Edge URL').fill('http://127.0.0.1:9');
  await page.getByLabel('Edge token (write-only)').fill('edge-token-first-0123456789');
  await page.getByRole('button', { name: 'Save edge' }).click();
  await page.getByTestId('edge-row').first().waitFor();
  await page.getByLabel('Edge URL').fill('http://127.0.0.1:19');
  await page.getByLabel('Edge token (write-only)').fill('edge-token-second-0123456789');
  await page.getByRole('button', { name: 'Add edge' }).click();
  await page.getByTestId('edge-row').nth(1).getByText('http://127.0.0.1:19').waitFor();
  const both = await api<{ edges: { url: string }[] }>(svc.url, 'GET', '/v0/owner/transport', owner);
  t.same(
    both.body.edges.map((e) => e.url),
    ['http://127.0.0.1:9', 'http://127.0.0.1:19'],
    'added after the first, which kept its token',
  );
  // Nothing listens on either port: the pull loop records the failure, the page shows it per edge.
  for (let i = 0; i < 50 && !(await page.getByTestId('edge-row').first().getByText(/edge_unreachable/).count()); i++) {
    await new Promise((r) => setTimeout(r, 300));
    await page.reload();
  }
  await page.getByTestId('edge-row').first().getByText(/edge_unreachable/).waitFor();
  page.once('dialog', (d) => void d.accept());
  await page.getByTestId('edge-row').first().getByRole('button', { name: 'Remove' }).click();
  await page.getByTestId('edge-row').first().getByText('http://127.0.0.1:19').waitFor();
  t.equal(await page.getByTestId('edge-row').count(), 1, 'one edge left');
  const after = await api<{ edges: { url: string }[] }>(svc.url, 'GET', '/v0/owner/transport', owner);
  t.same(
    after.body.edges.map((e) => e.url),
    ['http://127.0.0.1:19'],
  );
  t.notMatch(await page.content(), /edge-token-/, 'no token on the page');
  await api(svc.url, 'PUT', '/v0/owner/transport', { ...owner, body: { edges: [] } });
});

t.test('remote access, quarantine and OAuth pages load for the owner', async (t) => {
  await page.goto(svc.url + '/remote');
  await page.getByTestId('remote-state').waitFor();
  await page.goto(svc.url + '/quarantine');
  await page.waitForURL(/\/needs-you#quarantine$/);
  await page.getByText('No incoming mail is stuck.').waitFor();
  await page.goto(svc.url + '/apps');
  await page.getByText('No client has registered.').waitFor();
  t.same(page.problems, [], 'no script errors');
});
