/**
 * Quarantine is visible in the browser (issue 17 §1): the navigation shows how many items wait,
 * updated live by `inbound.quarantined`/`inbound.deleted`, and the page explains each reason in
 * plain language. The item is real: an object at a real edge that does not decrypt with the
 * home's key (as an altered ciphertext would), pulled and quarantined by the running service.
 */
import t from 'tap';
import path from 'node:path';
import { Edge } from '../../src/edge/edge.js';
import { SealedBuffer } from '../../src/edge/buffer.js';
import { api, setupOwner, startSvc, tempDir } from '../helpers/svc.js';
import { launchBrowser, signIn, newPage, screenshot } from '../helpers/browser.js';
import { startLoopbackDns } from '../helpers/dns.js';

const TOKEN = 'edge-test-token-0123456789abcdef';
const dns = await startLoopbackDns({});
const edgeDir = path.join(tempDir('svc-edge-'), 'edge');
const edgeOptions = (apiPort: number) => ({ dataDir: edgeDir, smtp: { host: '127.0.0.1', port: 0 }, api: { host: '127.0.0.1', port: apiPort }, apiToken: TOKEN, hostname: 'mx.test', resolver: dns.resolver });
let edge = new Edge(edgeOptions(0));
const bound = await edge.start();
const svc = await startSvc();
t.teardown(async () => {
  await svc.stop();
  await edge.stop();
  await dns.close();
});
const session = await setupOwner(svc);
const owner = { token: svc.ownerToken };
await api(svc.url, 'PUT', '/v0/owner/transport', { ...owner, body: { edge: { url: bound.api.url, token: TOKEN } } });
await api(svc.url, 'POST', '/v0/inboxes', { ...owner, body: { username: 'agent', domain: 'q.test' } });

const browser = await launchBrowser();
t.teardown(() => browser.close());
await signIn(browser, svc.url, session);
const page = await newPage(browser);

t.test('the nav count appears live, the reason is explained, and deleting clears the count', async (t) => {
  await page.goto(svc.url + '/inboxes');
  await page.locator('[data-live="live"]').waitFor();
  t.equal(await page.getByTestId('needs-you-count').count(), 0, 'no count while nothing waits');

  // An object that is not sealed to this home's key lands at the edge (restarted on the same port).
  await edge.stop();
  const buffer = new SealedBuffer(edgeDir);
  buffer.open();
  await buffer.commit('eyJhbGciOiJFQ0RILUVTIn0.AAAA.AAAA.AAAA.AAAA', { receivedAt: new Date().toISOString(), recipients: ['agent@q.test'], keyId: 'another-home' });
  await buffer.settle();
  edge = new Edge(edgeOptions(bound.api.port));
  await edge.start();

  const count = page.getByTestId('needs-you-count');
  await count.waitFor();
  t.equal(await count.textContent(), '1', 'the count shows without reloading the page');
  await screenshot(page, 'quarantine-nav');

  await page.getByRole('link', { name: /Needs you/ }).click();
  await page.getByText('Could not be decrypted').waitFor();
  const reason = (await page.getByTestId('quarantine-reason').textContent()) ?? '';
  t.match(reason, /not this home's key/, 'what happened');
  t.match(reason, /Waiting will not help/, 'what the owner can do');
  await screenshot(page, 'quarantine');

  page.once('dialog', (d) => void d.accept());
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByText('No incoming mail is stuck.').waitFor();
  await count.waitFor({ state: 'detached' });
  const listed = await api<{ items: unknown[]; total: number }>(svc.url, 'GET', '/v0/owner/quarantine', owner);
  t.same([listed.body.items.length, listed.body.total], [0, 0]);
  t.same(page.problems, [], 'no script errors');
});
