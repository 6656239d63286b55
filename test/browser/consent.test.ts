/**
 * The OAuth consent screen (issue 8, flow 5; spec §5.3) driven by the MCP SDK's own OAuth client:
 * the signed-out owner's browser goes to login and back to the consent request; the screen marks
 * the client name and redirect host unverified, starts with full permissions, policy `approval`
 * and no inbox, and keeps Approve disabled until an inbox is chosen. Approving hands the code to
 * the client, which then lists only that inbox through /mcp; Deny returns access_denied; the
 * grant shows in OAuth apps and revoking it there ends the client's access.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { api, OWNER_PASSWORD, setupOwner, startSvc } from '../helpers/svc.js';
import { launchBrowser, newPage, screenshot } from '../helpers/browser.js';
import { MemoryOAuthProvider, REDIRECT } from '../helpers/oauth.js';

class MemoryProvider extends MemoryOAuthProvider {
  constructor() {
    super('Browser Test Agent', 'browser-state');
  }
}

const svc = await startSvc();
t.teardown(() => svc.stop());
await setupOwner(svc);
for (const username of ['agent', 'private']) await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username, domain: 'consent.test' } });
const browser = await launchBrowser();
t.teardown(() => browser.close());
const page = await newPage(browser);

// The client's redirect target: the browser lands here with the code; the test reads the URL.
const callbacks: URL[] = [];
await page.route(`${REDIRECT}**`, async (route) => {
  callbacks.push(new URL(route.request().url()));
  await route.fulfill({ status: 200, contentType: 'text/plain', body: 'You can close this window.' });
});

/** Starts the SDK's flow against /mcp; resolves with the transport once it asked for the browser. */
async function startFlow(provider: MemoryProvider): Promise<StreamableHTTPClientTransport> {
  const transport = new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { authProvider: provider });
  await new Client({ name: 'consent-test', version: '1.0.0' }).connect(transport).catch(() => undefined);
  if (!provider.authorizationUrl) throw new Error('the SDK did not ask to authorize');
  return transport;
}

const provider = new MemoryProvider();
let transport: StreamableHTTPClientTransport;

t.test('a signed-out owner signs in and comes back to the consent screen', async (t) => {
  transport = await startFlow(provider);
  await page.goto(provider.authorizationUrl!.href);
  await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
  t.ok(await page.getByText('svc open').isVisible(), 'the sign-in hint names the command, not an API route');
  t.equal(await page.getByText('/v0/owner/login-links').count(), 0);
  t.match(new URL(page.url()).searchParams.get('return_to'), /^\/oauth\/authorize\?/, 'return_to is the authorize request');
  await page.getByLabel('Owner password').fill(OWNER_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('consent').waitFor();
  t.equal(new URL(page.url()).pathname, '/consent');
});

t.test('the consent screen marks name and host unverified and starts with the spec defaults', async (t) => {
  const consent = page.getByTestId('consent');
  t.equal(await page.getByTestId('client-name').textContent(), 'Browser Test Agent');
  t.equal(await page.getByTestId('redirect-host').textContent(), '127.0.0.1:53682');
  t.equal(await consent.locator('.badge', { hasText: 'unverified' }).count(), 2, 'both marked unverified');
  t.equal(await consent.locator('input[name="inbox"]:checked').count(), 0, 'no inbox selected');
  const perms = consent.locator('input[name="perm"]');
  t.ok((await perms.count()) >= 21, 'the permission checklist');
  t.ok(await consent.getByRole('checkbox', { name: /Send new mail and forward mail/ }).isVisible(), 'each permission says what it lets the client do');
  t.ok(await consent.getByRole('checkbox', { name: /Delete inboxes with all their mail/ }).isVisible());
  t.equal(await consent.locator('input[name="perm"]:not(:checked)').count(), 0, 'full permissions by default');
  t.equal(await consent.getByLabel('Send policy').inputValue(), 'approval');
  t.ok(await consent.getByRole('button', { name: 'Approve' }).isDisabled(), 'approve disabled without an inbox');
  await screenshot(page, 'consent');
  await consent.getByRole('checkbox', { name: 'agent@consent.test' }).check();
  t.ok(await consent.getByRole('button', { name: 'Approve' }).isEnabled(), 'approve enabled once an inbox is chosen');
});

t.test('approving hands the code to the client, which sees only the chosen inbox through /mcp', async (t) => {
  await page.getByTestId('consent').getByRole('button', { name: 'Approve' }).click();
  await page.waitForURL(`${REDIRECT}**`);
  const callback = callbacks.at(-1)!;
  t.equal(callback.searchParams.get('state'), 'browser-state');
  await transport.finishAuth(callback.searchParams.get('code')!);
  const client = new Client({ name: 'consent-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { authProvider: provider }));
  t.teardown(() => client.close());
  const result = await client.callTool({ name: 'list_inboxes', arguments: {} });
  const body = JSON.parse((result.content as { text: string }[])[0].text) as { inboxes: { inbox_id: string }[] };
  t.same(body.inboxes.map((i) => i.inbox_id), ['agent@consent.test']);
});

t.test('deny sends the browser back with access_denied', async (t) => {
  const other = new MemoryProvider();
  await startFlow(other);
  await page.goto(other.authorizationUrl!.href);
  await page.getByTestId('consent').getByRole('button', { name: 'Deny' }).click();
  await page.waitForURL(`${REDIRECT}**`);
  t.equal(callbacks.at(-1)!.searchParams.get('error'), 'access_denied');
  t.equal(callbacks.at(-1)!.searchParams.get('code'), null);
});

t.test('the grant is listed in OAuth apps and revoking it ends the client access', async (t) => {
  await page.goto(svc.url + '/apps');
  const grant = page.locator('[data-grant]').first();
  await grant.waitFor();
  t.match(await grant.textContent(), /agent@consent\.test/);
  await screenshot(page, 'oauth-apps');
  page.once('dialog', (d) => void d.accept());
  await grant.getByRole('button', { name: 'Revoke' }).click();
  await grant.waitFor({ state: 'detached' });
  const res = await fetch(`${svc.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${provider.saved!.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  t.equal(res.status, 401, 'the token stopped working');
  t.same(page.problems, [], 'no script errors');
});
