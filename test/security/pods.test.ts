/**
 * Pods are tenants (issue 35 §2, docs/pods.md), attacked: a key created under pod A, and the owner
 * on pod A's routes, aim at pod B's resources with B's real ids on every route under
 * `/v0/pods/{pod_id}` (read from the served route table, so a new pod route is attacked too),
 * through pod B's own path, through hostile spellings of the path, and through the home's routes
 * without a pod. Each answer must be exactly what a made-up id gets (404 before any permission
 * check, or the same refusal the route gives any id), and B's resources must be untouched after.
 * Then the ways around: a pod key's pod deleted under it, an inbox created while its pod is being
 * deleted, another pod's domain, ids guessed from the default pod's name.
 */
import t from 'tap';
import type { Test } from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../helpers/until.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { servedRouteTable, type RouteEntry } from '../helpers/fuzz.js';
import { HOSTILE_SPELLINGS, segmentsOf } from '../helpers/spellings.js';
import { eachLimited, wireRequest } from '../helpers/wire.js';
import { PERMISSIONS } from '../../src/auth/permissions.js';

const CONCURRENCY = 8;
/** Made-up ids, shaped like real ones: what "does not exist" answers. */
const MADE_UP: Record<string, string> = {
  inbox_id: encodeURIComponent('nobody@pods-b.test'),
  thread_id: '01900000-0000-7000-8000-000000000001',
  message_id: encodeURIComponent('<made-up@pods.test>'),
  draft_id: '01900000-0000-7000-8000-000000000002',
  attachment_id: 'att_000000000000000000000000',
  api_key_id: '01900000-0000-7000-8000-000000000003',
  domain_id: '01900000-0000-7000-8000-000000000004',
  webhook_id: '01900000-0000-7000-8000-000000000005',
  entry: encodeURIComponent('made-up@elsewhere.test'),
};
const POD_PREFIX = '/v0/pods/:pod_id/';

let svc: RunningSvc;
let podA = '';
let podB = '';
let keyA = '';
let keyAId = '';
/** Pod B's real ids, percent-encoded for a path. */
const b: Record<string, string> = {};
let inboxA = '';
let podRoutes: RouteEntry[] = [];

const owner = () => ({ token: svc.ownerToken });
const as = <T = Record<string, unknown>>(token: string, method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token, body });

async function must<T>(what: string, res: Promise<{ status: number; body: T; text: string }>): Promise<T> {
  const r = await res;
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${r.text}`);
  return r.body;
}

t.before(async () => {
  podRoutes = (await servedRouteTable()).filter((r) => r.url.startsWith(POD_PREFIX));
  svc = await startSvc();
  podA = (await must('pod A', as<{ pod_id: string }>(svc.ownerToken, 'POST', '/v0/pods', { name: 'A' }))).pod_id;
  podB = (await must('pod B', as<{ pod_id: string }>(svc.ownerToken, 'POST', '/v0/pods', { name: 'B' }))).pod_id;
  inboxA = (await must('inbox A', as<{ inbox_id: string }>(svc.ownerToken, 'POST', `/v0/pods/${podA}/inboxes`, { username: 'alice', domain: 'pods-a.test' }))).inbox_id;
  const inboxB = (await must('inbox B', as<{ inbox_id: string }>(svc.ownerToken, 'POST', `/v0/pods/${podB}/inboxes`, { username: 'bob', domain: 'pods-b.test' }))).inbox_id;
  const key = await must('key A', as<{ api_key: string; api_key_id: string }>(svc.ownerToken, 'POST', `/v0/pods/${podA}/api-keys`, { name: 'pod A', permissions: [...PERMISSIONS] }));
  keyA = key.api_key;
  keyAId = key.api_key_id;
  const db = openHomeDb(svc.home);
  let mail;
  try {
    mail = await seedMail(db, simpleMail({ to: inboxB, subject: 'B only', messageId: '<b-only@pods.test>' }), { inboxId: inboxB });
  } finally {
    db.close();
  }
  const inboxPath = `/v0/inboxes/${encodeURIComponent(inboxB)}`;
  const draft = await must('draft B', as<{ draft_id: string }>(svc.ownerToken, 'POST', `${inboxPath}/drafts`, { to: ['someone@example.org'], subject: 'B draft', text: 't' }));
  const keyB = await must('key B', as<{ api_key_id: string }>(svc.ownerToken, 'POST', `/v0/pods/${podB}/api-keys`, { name: 'pod B' }));
  const domain = await must('domain B', as<{ domain_id: string }>(svc.ownerToken, 'POST', `/v0/pods/${podB}/domains`, { domain: 'owned-by-b.test' }));
  const hook = await must('webhook B', as<{ webhook_id: string }>(svc.ownerToken, 'POST', `/v0/pods/${podB}/webhooks`, { url: 'https://hooks.example/b', event_types: ['message.received'] }));
  await must('list entry B', as(svc.ownerToken, 'POST', `/v0/pods/${podB}/lists/receive/block`, { entry: 'spam@b-list.test' }));
  Object.assign(b, {
    inbox_id: encodeURIComponent(inboxB),
    thread_id: mail.threadId,
    message_id: encodeURIComponent(mail.messageId),
    draft_id: draft.draft_id,
    attachment_id: MADE_UP.attachment_id,
    api_key_id: keyB.api_key_id,
    domain_id: domain.domain_id,
    webhook_id: hook.webhook_id,
    entry: encodeURIComponent('spam@b-list.test'),
  });
});
t.teardown(() => svc?.stop());

const pathOf = (route: RouteEntry, pod: string, ids: Record<string, string>) =>
  '/' + segmentsOf(route.url, (param) => (param === 'pod_id' ? pod : (ids[param] ?? MADE_UP[param] ?? 'x'))).join('/');
/** Routes that name a resource besides the pod: the ones another pod's id can be put in. */
const namesResource = (route: RouteEntry) => /:(?!pod_id)\w+/.test(route.url);
const timeoutFor = (route: RouteEntry) => (route.url.endsWith('/messages/wait') ? '?timeout=0' : '');

interface Answer {
  status: number;
  code: string | undefined;
  message: string | undefined;
  text: string;
}
async function ask(token: string, route: RouteEntry, path: string): Promise<Answer> {
  const res = await api<{ code?: string; message?: string }>(svc.url, route.method, path + timeoutFor(route), { token, body: route.method === 'GET' || route.method === 'DELETE' ? undefined : {} });
  return { status: res.status, code: res.body?.code, message: res.body?.message, text: res.text };
}

t.test('the pod routes exist for every pod resource the AgentMail SDK names', async (t) => {
  const urls = new Set(podRoutes.map((r) => `${r.method} ${r.url.slice(POD_PREFIX.length - 1)}`));
  for (const route of ['GET /inboxes', 'POST /inboxes', 'GET /inboxes/search', 'GET /inboxes/:inbox_id', 'PATCH /inboxes/:inbox_id', 'DELETE /inboxes/:inbox_id', 'GET /threads', 'GET /threads/:thread_id', 'GET /drafts/:draft_id', 'GET /api-keys', 'POST /api-keys', 'GET /metrics/events', 'GET /domains/:domain_id', 'GET /domains/:domain_id/zone-file', 'GET /lists/receive/allow', 'GET /webhooks/:webhook_id/headers']) {
    t.ok(urls.has(route), `${route} is served under /v0/pods/{pod_id}`);
  }
});

t.test("another pod's ids on every pod route answer exactly as made-up ids, for the pod key and the owner", async (t) => {
  const targets = podRoutes.filter(namesResource);
  t.ok(targets.length > 40, `${targets.length} pod routes name a resource`);
  const mismatches: string[] = [];
  const leaks: string[] = [];
  const probes = targets.flatMap((route) => [
    { route, who: 'pod A key', token: keyA },
    { route, who: 'owner on pod A', token: svc.ownerToken },
  ]);
  await eachLimited(probes, CONCURRENCY, async ({ route, who, token }) => {
    const theirs = await ask(token, route, pathOf(route, podA, b));
    const madeUp = await ask(token, route, pathOf(route, podA, {}));
    const line = `${route.method} ${route.url} as ${who}: B's ids ${theirs.status} ${theirs.code}, made-up ${madeUp.status} ${madeUp.code}`;
    if (theirs.status < 400 || theirs.status !== madeUp.status || theirs.code !== madeUp.code) mismatches.push(line);
    if (theirs.text.includes(podB) || theirs.text.includes('bob@pods-b.test')) leaks.push(`${route.method} ${route.url} as ${who}: ${theirs.text.slice(0, 200)}`);
  });
  t.same(mismatches, [], "no pod route tells another pod's resource from a missing one");
  t.same(leaks, [], "no answer names pod B or its inbox");
});

t.test("pod B's own path answers the pod key exactly as a pod that does not exist", async (t) => {
  const mismatches: string[] = [];
  await eachLimited(podRoutes, CONCURRENCY, async (route) => {
    const theirs = await ask(keyA, route, pathOf(route, podB, b));
    const none = await ask(keyA, route, pathOf(route, '01900000-0000-7000-8000-00000000beef', b));
    if (theirs.status < 400 || theirs.status !== none.status || theirs.code !== none.code || theirs.message !== none.message) {
      mismatches.push(`${route.method} ${route.url}: pod B ${theirs.status} ${theirs.code}, no pod ${none.status} ${none.code}`);
    }
  });
  t.same(mismatches, [], 'every pod route: 404 (or the same refusal) for pod B and for no pod');
  const me = await as(keyA, 'GET', `/v0/pods/${podB}`);
  t.equal(me.status, 404, 'pods.get of pod B: 404');
  t.equal(me.text, (await as(keyA, 'GET', '/v0/pods/01900000-0000-7000-8000-00000000beef')).text, 'the same body as a pod that does not exist');
});

t.test("pod B's resources are all still there after every write above", async (t) => {
  const o = owner();
  for (const path of [
    `/v0/inboxes/${b.inbox_id}`,
    `/v0/threads/${b.thread_id}`,
    `/v0/drafts/${b.draft_id}`,
    `/v0/api-keys/${b.api_key_id}`,
    `/v0/domains/${b.domain_id}`,
    `/v0/webhooks/${b.webhook_id}`,
    `/v0/pods/${podB}/lists/receive/block/${b.entry}`,
  ]) {
    t.equal((await api(svc.url, 'GET', path, o)).status, 200, `${path} still answers the owner`);
  }
});

t.test('other spellings of the pod path never get the pod key into pod B', async (t) => {
  const port = new URL(svc.url).port;
  const sample = podRoutes.filter((r) => r.method === 'GET' && /\/(inboxes\/:inbox_id|threads\/:thread_id|drafts\/:draft_id|webhooks\/:webhook_id)$/.test(r.url));
  t.ok(sample.length >= 4, 'sampled the reads of one resource of each kind');
  // Unknown paths get the web app's shell (the owner app draws its own "not found"): the one 2xx allowed.
  const shell = (await wireRequest({ port: Number(port), method: 'GET', target: '/' })).text;
  const got: string[] = [];
  for (const route of sample) {
    const segments = segmentsOf(route.url, (param) => (param === 'pod_id' ? podB : b[param]));
    for (const spelling of HOSTILE_SPELLINGS) {
      const target = spelling.target(segments, `127.0.0.1:${port}`);
      const answer = await wireRequest({ port: Number(port), method: 'GET', target, headers: { Authorization: `Bearer ${keyA}` } });
      if ((answer.status < 400 && answer.text !== shell) || answer.text.includes('bob@pods-b.test')) got.push(`${spelling.name} ${target}: ${answer.status}`);
    }
  }
  t.same(got, [], 'every spelling is refused or finds nothing');
  // The pod's id in other spellings: the pod id is compared exactly, never folded.
  for (const spelled of [podB.toUpperCase(), `${podB}%20`, encodeURIComponent(` ${podB}`), `${podB}%00`]) {
    const res = await as(keyA, 'GET', `/v0/pods/${spelled}/inboxes/${b.inbox_id}`);
    t.ok(res.status >= 400 && !res.text.includes('bob@pods-b.test'), `/v0/pods/${spelled}/...: ${res.status}`);
  }
});

t.test('a pod key on the home routes sees and touches only its pod', async (t) => {
  const leaks: string[] = [];
  for (const path of ['/v0/inboxes', '/v0/inboxes/search?q=pods', '/v0/threads', '/v0/drafts', '/v0/webhooks', '/v0/lists/receive/block', '/v0/pods', '/v0/metrics/usage', '/v0/metrics/events']) {
    const res = await as(keyA, 'GET', path);
    t.equal(res.status, 200, `${path}: 200`);
    for (const id of ['bob@pods-b.test', decodeURIComponent(b.thread_id), b.draft_id, b.webhook_id, 'spam@b-list.test', podB]) if (res.text.includes(id)) leaks.push(`${path} shows ${id}`);
  }
  t.same(leaks, [], "no list shows pod B's resources");
  const inboxes = await as<{ inboxes: { inbox_id: string; pod_id: string }[] }>(keyA, 'GET', '/v0/inboxes');
  t.same(inboxes.body.inboxes.map((i) => i.inbox_id), [inboxA], "the pod's inbox, nothing else (not the default pod's)");
  for (const path of [`/v0/inboxes/${b.inbox_id}`, `/v0/threads/${b.thread_id}`, `/v0/drafts/${b.draft_id}`, `/v0/webhooks/${b.webhook_id}`, `/v0/inboxes/${b.inbox_id}/messages/${b.message_id}`]) {
    const theirs = await as(keyA, 'GET', path);
    t.equal(theirs.status, 404, `${path}: 404`);
  }
  t.equal((await as(keyA, 'DELETE', `/v0/inboxes/${b.inbox_id}`)).status, 404, "deleting pod B's inbox: 404");
  t.equal((await as(keyA, 'POST', '/v0/webhooks', { url: 'https://hooks.example/a', event_types: ['message.received'], inbox_ids: [decodeURIComponent(b.inbox_id)] })).status, 404, "a webhook naming pod B's inbox: 404");
  t.equal((await as(keyA, 'POST', '/v0/lists/receive/block', { entry: 'x@y.test' })).status, 200, "the home's list route is the pod's list for a pod key");
  const podList = await as<{ entries: { entry: string; pod_id?: string }[] }>(svc.ownerToken, 'GET', `/v0/pods/${podA}/lists/receive/block`);
  t.same(podList.body.entries.map((e) => [e.entry, e.pod_id]), [['x@y.test', podA]], "the entry landed in pod A's list");
  const global = await as<{ entries: unknown[] }>(svc.ownerToken, 'GET', '/v0/lists/receive/block');
  t.equal(global.body.entries.length, 0, "the home's global list is untouched");
  // Owner routes stay the owner's: a pod key is refused the same way on any pod's.
  for (const [method, path] of [['GET', '/v0/api-keys'], ['GET', `/v0/pods/${podA}/api-keys`], ['GET', '/v0/domains'], ['POST', '/v0/pods'], ['DELETE', `/v0/pods/${podA}`]] as const) {
    t.equal((await as(keyA, method, path, method === 'POST' ? { name: 'x' } : undefined)).status, 403, `${method} ${path}: 403 for a pod key`);
  }
  const me = await as<{ scope_type: string; pod_id: string }>(keyA, 'GET', '/v0/auth/me');
  t.same([me.body.scope_type, me.body.pod_id], ['pod', podA], 'auth.me: the pod');
});

t.test("a pod key's inboxes go into its pod; another pod's domain is not found", async (t) => {
  const made = await as<{ inbox_id: string; pod_id: string }>(keyA, 'POST', '/v0/inboxes', { username: 'made-by-key', domain: 'pods-a.test' });
  t.equal(made.status, 200);
  t.equal(made.body.pod_id, podA, "created on the home route, it is the key's pod's");
  const onB = await as(keyA, 'POST', '/v0/inboxes', { username: 'squat', domain: 'owned-by-b.test' });
  t.equal(onB.status, 404, "an inbox on pod B's domain: 404");
  const ownerOnB = await as(svc.ownerToken, 'POST', `/v0/pods/${podA}/inboxes`, { username: 'squat', domain: 'owned-by-b.test' });
  t.equal(ownerOnB.status, 404, "the owner cannot put pod A's inbox on pod B's domain either");
  t.equal((await as(svc.ownerToken, 'POST', `/v0/pods/${podB}/inboxes`, { username: 'fine', domain: 'owned-by-b.test' })).status, 200, "pod B's own inbox on it is fine");
  t.equal((await as(keyA, 'DELETE', `/v0/inboxes/${encodeURIComponent(made.body.inbox_id)}`)).status < 300, true, 'the key deletes its own');
});

t.test('404 comes before the permission check', async (t) => {
  const bare = await must('bare key', as<{ api_key: string }>(svc.ownerToken, 'POST', `/v0/pods/${podA}/api-keys`, { name: 'bare', permissions: [] }));
  t.equal((await as(bare.api_key, 'GET', `/v0/inboxes/${b.inbox_id}`)).status, 404, "pod B's inbox: 404, not 403");
  t.equal((await as(bare.api_key, 'GET', `/v0/pods/${podA}/inboxes/${b.inbox_id}`)).status, 404, 'the same on the pod route');
  t.equal((await as(bare.api_key, 'GET', `/v0/inboxes/${encodeURIComponent(inboxA)}`)).status, 403, 'its own pod inbox: 403 (no inbox_read)');
});

t.test("the default pod's name is no way in: the old home's inboxes are pod default, a pod key is not", async (t) => {
  t.equal((await as(keyA, 'GET', '/v0/pods/default/inboxes')).status, 404, 'pod default: 404 for pod A\'s key');
  const wide = await must('unscoped key', as<{ api_key: string }>(svc.ownerToken, 'POST', '/v0/api-keys', { name: 'wide', permissions: ['inbox_read'] }));
  const all = await as<{ inboxes: { pod_id: string }[] }>(wide.api_key, 'GET', '/v0/inboxes');
  t.same([...new Set(all.body.inboxes.map((i) => i.pod_id))].sort(), [podA, podB].sort(), 'a key made the old way still sees every pod');
});

/** A webhook receiver on loopback for one test: the bodies it got, and its URL at `path`. */
async function hookReceiver(t: Test, path: string): Promise<{ bodies: string[]; url: string }> {
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return { bodies, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}` };
}

t.test("a pod's webhook hears its own pod's events only", async (t) => {
  const { bodies, url } = await hookReceiver(t, '/a');
  await must('webhook A', as(svc.ownerToken, 'POST', `/v0/pods/${podA}/webhooks`, { url, event_types: ['message.received'] }));
  // Pod B's mail first: a filter that let it through would deliver it before pod A's.
  const db = openHomeDb(svc.home);
  try {
    await seedMail(db, simpleMail({ to: 'bob@pods-b.test', subject: 'for pod B', messageId: '<hook-b@pods.test>' }), { inboxId: 'bob@pods-b.test' });
    await seedMail(db, simpleMail({ to: inboxA, subject: 'for pod A', messageId: '<hook-a@pods.test>' }), { inboxId: inboxA });
  } finally {
    db.close();
  }
  await until("pod A's event delivered", () => bodies.some((b) => b.includes('for pod A')));
  t.notOk(bodies.some((b) => b.includes('for pod B') || b.includes('bob@pods-b.test')), "pod B's event never reached pod A's webhook");
});

t.test("a home webhook's pod filter: only the named pods' events; another tenant's pod is 404 for a pod key", async (t) => {
  const { bodies, url } = await hookReceiver(t, '/filtered');
  const hook = await must('filtered webhook', as<{ webhook_id: string; pod_ids?: string[] }>(svc.ownerToken, 'POST', '/v0/webhooks', { url, event_types: ['message.received'], pod_ids: [podB] }));
  t.same(hook.pod_ids, [podB], 'the filter is answered as pod_ids');
  const db = openHomeDb(svc.home);
  try {
    // Pod A's mail first: a filter that let it through would deliver it before pod B's.
    await seedMail(db, simpleMail({ to: inboxA, subject: 'filter: pod A', messageId: '<filter-a@pods.test>' }), { inboxId: inboxA });
    await seedMail(db, simpleMail({ to: 'bob@pods-b.test', subject: 'filter: pod B', messageId: '<filter-b@pods.test>' }), { inboxId: 'bob@pods-b.test' });
  } finally {
    db.close();
  }
  await until("pod B's event delivered", () => bodies.some((b) => b.includes('filter: pod B')));
  t.notOk(bodies.some((b) => b.includes('filter: pod A')), "pod A's event never reached a webhook filtered to pod B");

  const own = await as<{ webhook_id: string; pod_ids?: string[] }>(keyA, 'POST', '/v0/webhooks', { url: 'https://hooks.example/a', event_types: ['message.received'], pod_ids: [podA] });
  t.equal(own.status, 200, 'a pod key may name its own pod');
  t.same(own.body.pod_ids, [podA]);
  for (const pods of [[podB], [podA, podB], ['default']]) {
    const theirs = await as<{ code: string }>(keyA, 'POST', '/v0/webhooks', { url: 'https://hooks.example/a', event_types: ['message.received'], pod_ids: pods });
    t.same([theirs.status, theirs.body.code], [404, 'not_found'], `pod_ids ${JSON.stringify(pods)}: 404, as a pod that does not exist`);
  }
  const widen = await as<{ code: string }>(keyA, 'PATCH', `/v0/webhooks/${own.body.webhook_id}`, { add_pod_ids: [podB] });
  t.same([widen.status, widen.body.code], [404, 'not_found'], "adding pod B to the key's webhook: 404");
  const onPodRoute = await as<{ code: string }>(keyA, 'POST', `/v0/pods/${podA}/webhooks`, { url: 'https://hooks.example/a', event_types: ['message.received'], pod_ids: [podB] });
  t.equal(onPodRoute.status, 404, 'the same on the pod route');
  const after = await as<{ pod_ids?: string[] }>(keyA, 'GET', `/v0/webhooks/${own.body.webhook_id}`);
  t.same(after.body.pod_ids, [podA], 'the refused change left the filter as it was');
});

t.test('an inbox created while its pod is deleted: one of the two wins, never an inbox in no pod', async (t) => {
  const outcomes = new Set<string>();
  for (let i = 0; i < 12; i++) {
    const pod = (await must('race pod', as<{ pod_id: string }>(svc.ownerToken, 'POST', '/v0/pods', { name: `race ${i}` }))).pod_id;
    const create = () => as(svc.ownerToken, 'POST', `/v0/pods/${pod}/inboxes`, { username: `race${i}`, domain: 'race.test' });
    const remove = () => as(svc.ownerToken, 'DELETE', `/v0/pods/${pod}`);
    // Sent together, in turn one first and then the other.
    const [created, removed] = i % 2 === 0 ? await Promise.all([create(), remove()]) : (await Promise.all([remove(), create()])).reverse();
    const podLeft = (await as(svc.ownerToken, 'GET', `/v0/pods/${pod}`)).status;
    const inbox = (await as(svc.ownerToken, 'GET', `/v0/inboxes/race${i}%40race.test`)).status;
    const outcome = `create ${created.status}, delete ${removed.status}, pod ${podLeft}, inbox ${inbox}`;
    outcomes.add(outcome);
    const inboxWon = created.status === 200 && removed.status === 409 && podLeft === 200 && inbox === 200;
    const deleteWon = created.status === 404 && removed.status < 300 && podLeft === 404 && inbox === 404;
    t.ok(inboxWon || deleteWon, outcome);
  }
  const db = openHomeDb(svc.home);
  try {
    t.equal(db.prepare('SELECT COUNT(*) FROM inboxes WHERE pod_id NOT IN (SELECT pod_id FROM pods)').pluck().get(), 0, 'no inbox belongs to a deleted pod');
  } finally {
    db.close();
  }
  t.ok(outcomes.size >= 1, [...outcomes].join('; '));
});

t.test("deleting a pod: refused while it owns inboxes or domains; its keys die with it", async (t) => {
  const refused = await as<{ code: string; fix: string }>(svc.ownerToken, 'DELETE', `/v0/pods/${podA}`);
  t.equal(refused.status, 409, 'pod A still has an inbox: 409');
  t.equal(refused.body.code, 'conflict');
  t.match(refused.body.fix, /inboxes/, 'the fix says what to delete first');
  const empty = (await must('empty pod', as<{ pod_id: string }>(svc.ownerToken, 'POST', '/v0/pods', { name: 'empty' }))).pod_id;
  const key = await must('key', as<{ api_key: string }>(svc.ownerToken, 'POST', `/v0/pods/${empty}/api-keys`, { name: 'doomed' }));
  t.equal((await as(key.api_key, 'GET', '/v0/inboxes')).status, 200, 'the key works while its pod exists');
  t.ok((await as(svc.ownerToken, 'DELETE', `/v0/pods/${empty}`)).status < 300, 'an empty pod is deleted');
  t.equal((await as(key.api_key, 'GET', '/v0/inboxes')).status, 401, "its key is revoked with it: 401, never the home's scope");
  t.equal((await as(svc.ownerToken, 'GET', `/v0/pods/${empty}`)).status, 404, 'the pod is gone');
  t.equal((await as(keyA, 'GET', `/v0/api-keys/${keyAId}`)).status, 403, 'a pod key cannot read itself on the owner route');
});
