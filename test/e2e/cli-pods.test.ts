/**
 * `svc pods` against a real service (issue 35 §2, docs/pods.md): the owner lists, creates, shows
 * and deletes pods; a pod that still owns an inbox is refused with the fix (exit 1, `conflict`);
 * a key of one pod lists only its pod and cannot create or delete pods (exit 4, owner only).
 */
import t from 'tap';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { agentEnv, svcCli } from './cli-run.js';

let svc: RunningSvc;
let owner: string[];
t.before(async () => {
  svc = await startSvc();
  owner = ['--home', svc.home];
});
t.teardown(() => svc.stop());

t.test('the owner creates, lists, shows and deletes pods; a pod with an inbox is refused with the fix', async (t) => {
  const list = await svcCli(['pods', 'list', ...owner]);
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, /^POD +NAME +CREATED\ndefault +default /, 'every home has the pod default');
  const created = await svcCli(['pods', 'create', 'Customer A', '--client-id', 'customer-a', '--json', ...owner]);
  t.equal(created.code, 0, created.stderr);
  const pod = created.json<{ pod_id: string; name: string; client_id: string }>();
  t.match(pod, { name: 'Customer A', client_id: 'customer-a' });
  const again = await svcCli(['pods', 'create', 'Customer A', '--client-id', 'customer-a', '--json', ...owner]);
  t.equal(again.json<{ pod_id: string }>().pod_id, pod.pod_id, 'the same client id: the same pod');
  t.match((await svcCli(['pods', 'show', pod.pod_id, ...owner])).stdout, new RegExp(`pod: +${pod.pod_id}\\nname: +Customer A`));
  const ids = (await svcCli(['pods', 'list', '--json', ...owner])).json<{ pods: { pod_id: string }[] }>().pods.map((p) => p.pod_id);
  t.same(ids.sort(), ['default', pod.pod_id].sort(), 'both pods listed');

  const inbox = await api(svc.url, 'POST', `/v0/pods/${pod.pod_id}/inboxes`, { token: svc.ownerToken, body: { username: 'a', domain: 'pods-cli.test' } });
  t.equal(inbox.status, 200, inbox.text);
  const refused = await svcCli(['pods', 'delete', pod.pod_id, ...owner]);
  t.equal(refused.code, 1, 'a pod with an inbox is not deleted');
  t.match(refused.stderr, /^error \(conflict\): The pod still owns 1 inbox\(es\).*\nfix: Delete them first/);
  t.equal((await api(svc.url, 'DELETE', '/v0/inboxes/a%40pods-cli.test', { token: svc.ownerToken })).status < 300, true);
  const deleted = await svcCli(['pods', 'delete', pod.pod_id, '--json', ...owner]);
  t.equal(deleted.code, 0, deleted.stderr);
  t.same(deleted.json(), { deleted: true, pod_id: pod.pod_id });
  const gone = await svcCli(['pods', 'show', pod.pod_id, ...owner]);
  t.equal(gone.code, 1);
  t.match(gone.stderr, /not_found/);
});

t.test("a pod's key sees its pod only, and pods are the owner's to create and delete", async (t) => {
  const pod = (await svcCli(['pods', 'create', 'B', '--json', ...owner])).json<{ pod_id: string }>().pod_id;
  const key = await api<{ api_key: string }>(svc.url, 'POST', `/v0/pods/${pod}/api-keys`, { token: svc.ownerToken, body: { name: 'pod b' } });
  const env = agentEnv(svc.url, key.body.api_key);
  const listed = (await svcCli(['pods', 'list', '--json'], { env })).json<{ pods: { pod_id: string }[] }>();
  t.same(listed.pods.map((p) => p.pod_id), [pod], 'only its own pod');
  t.equal((await svcCli(['pods', 'show', 'default'], { env })).code, 1, 'another pod: not found');
  t.equal((await svcCli(['pods', 'create', 'C'], { env })).code, 4, 'creating a pod is the owner\'s');
  t.equal((await svcCli(['pods', 'delete', pod], { env })).code, 4, 'deleting one too');
});
