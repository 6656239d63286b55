/**
 * The Pods page (docs/pods.md, issue 35 §2): the owner creates a pod, sees which inboxes it holds
 * (one made in the pod through the API), is refused deleting it while it owns an inbox (the
 * service's own message on the page), and deletes it once empty; the pod is gone from the API.
 */
import t from 'tap';
import { api, setupOwner, startSvc } from '../helpers/svc.js';
import { launchBrowser, newPage, signIn } from '../helpers/browser.js';

const svc = await startSvc();
t.teardown(() => svc.stop());
const session = await setupOwner(svc);
const owner = { token: svc.ownerToken };
const browser = await launchBrowser();
t.teardown(() => browser.close());
await signIn(browser, svc.url, session);
const page = await newPage(browser);
page.on('dialog', (d) => void d.accept());

t.test('create a pod, see its inbox, deletion refused while it holds one, then deleted', async (t) => {
  await page.goto(`${svc.url}/pods`);
  await page.getByRole('link', { name: 'Pods' }).waitFor();
  const table = page.getByTestId('pods');
  await table.getByText('default', { exact: true }).first().waitFor();
  await page.getByLabel('Name').fill('acme');
  await page.getByLabel('Your reference (optional)').fill('customer-42');
  await page.getByRole('button', { name: 'Create pod' }).click();
  const row = table.locator('tr', { hasText: 'acme' });
  await row.waitFor();
  t.match(await row.textContent(), /customer-42/, 'the reference is shown');

  const pods = await api<{ pods: { pod_id: string; name: string; client_id?: string }[] }>(svc.url, 'GET', '/v0/pods', owner);
  const acme = pods.body.pods.find((p) => p.name === 'acme');
  t.match(acme, { client_id: 'customer-42' }, 'made through the API the page calls');
  const inbox = await api<{ inbox_id: string; pod_id: string }>(svc.url, 'POST', `/v0/pods/${acme!.pod_id}/inboxes`, { ...owner, body: { username: 'billing', domain: 'acme.test' } });
  t.equal(inbox.body.pod_id, acme!.pod_id);
  await page.reload();
  await row.getByRole('link', { name: 'billing@acme.test' }).waitFor();
  t.pass('the pod lists its inbox');

  await row.getByRole('button', { name: 'Delete pod acme' }).click();
  await page.getByText(/inbox/i).locator('xpath=ancestor-or-self::*[contains(@class,"error")]').first().waitFor();
  t.equal((await api(svc.url, 'GET', `/v0/pods/${acme!.pod_id}`, owner)).status, 200, 'a pod that owns an inbox is not deleted');

  t.equal((await api(svc.url, 'DELETE', `/v0/inboxes/${encodeURIComponent(inbox.body.inbox_id)}`, owner)).status < 300, true);
  await page.reload();
  await table.locator('tr', { hasText: 'acme' }).getByRole('button', { name: 'Delete pod acme' }).click();
  await table.locator('tr', { hasText: 'acme' }).waitFor({ state: 'detached' });
  t.equal((await api(svc.url, 'GET', `/v0/pods/${acme!.pod_id}`, owner)).status, 404, 'gone from the API');
  t.same(page.problems.filter((p) => !/status of 409/.test(p)), [], 'no page errors but the refusal asked for');
});
