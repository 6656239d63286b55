/**
 * The principal model on every agent route (spec §4, §5.2; ARCHITECTURE §7): for an API key,
 * a resource outside its inbox scope is 404 (before any permission check), a missing permission
 * is 403 missing_permission, and the right permission is allowed. Owner-only routes reject keys.
 */
import t from 'tap';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { expireApiKey, openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { seedMail } from '../helpers/mail.js';

const IN = 'agent@matrix.test';
const OUT = 'other@matrix.test';

interface Target {
  inboxId: string;
  threadId: string;
  messageId: string;
  attachmentId: string;
}

interface Route {
  method: string;
  /** Path for the resource in the given inbox. */
  path: (x: Target) => string;
  permission: string[];
  body?: (x: Target) => unknown;
}

const enc = encodeURIComponent;
const inbox = (x: Target) => `/v0/inboxes/${enc(x.inboxId)}`;
const msg = (x: Target) => `${inbox(x)}/messages/${enc(x.messageId)}`;

/** Every agent route that names a resource in an inbox, read-only ones first so the resources survive. */
const ROUTES: Route[] = [
  { method: 'GET', path: inbox, permission: ['inbox_read'] },
  { method: 'PATCH', path: inbox, permission: ['inbox_update'], body: () => ({ display_name: 'Agent' }) },
  { method: 'GET', path: (x) => `${inbox(x)}/threads`, permission: ['message_read'] },
  { method: 'GET', path: (x) => `${inbox(x)}/threads/search?q=matrix`, permission: ['message_read'] },
  { method: 'GET', path: (x) => `${inbox(x)}/threads/${x.threadId}`, permission: ['message_read'] },
  { method: 'GET', path: (x) => `/v0/threads/${x.threadId}`, permission: ['message_read'] },
  { method: 'GET', path: (x) => `${inbox(x)}/threads/${x.threadId}/attachments/${enc(x.attachmentId)}`, permission: ['message_read'] },
  { method: 'GET', path: (x) => `/v0/threads/${x.threadId}/attachments/${enc(x.attachmentId)}`, permission: ['message_read'] },
  { method: 'PATCH', path: (x) => `${inbox(x)}/threads/${x.threadId}`, permission: ['message_update'], body: () => ({ add_labels: ['matrix'] }) },
  { method: 'PATCH', path: (x) => `/v0/threads/${x.threadId}`, permission: ['message_update'], body: () => ({ remove_labels: ['matrix'] }) },
  { method: 'GET', path: (x) => `${inbox(x)}/messages`, permission: ['message_read'] },
  { method: 'GET', path: (x) => `${inbox(x)}/messages/search?q=matrix`, permission: ['message_read'] },
  { method: 'GET', path: msg, permission: ['message_read'] },
  { method: 'GET', path: (x) => `${msg(x)}/raw`, permission: ['message_read'] },
  { method: 'GET', path: (x) => `${msg(x)}/attachments/${enc(x.attachmentId)}`, permission: ['message_read'] },
  { method: 'POST', path: (x) => `${inbox(x)}/messages/batch-get`, permission: ['message_read'], body: (x) => ({ message_ids: [x.messageId] }) },
  { method: 'PATCH', path: msg, permission: ['message_update'], body: () => ({ add_labels: ['seen-by-matrix'] }) },
  { method: 'POST', path: (x) => `${inbox(x)}/messages/batch-update`, permission: ['message_update'], body: (x) => ({ message_ids: [x.messageId], add_labels: ['batch'] }) },
  { method: 'GET', path: (x) => `${inbox(x)}/lists/receive/block`, permission: ['list_entry_read'] },
  { method: 'POST', path: (x) => `${inbox(x)}/lists/receive/block`, permission: ['list_entry_create'], body: () => ({ entry: 'spam@bad.test' }) },
  { method: 'GET', path: (x) => `${inbox(x)}/lists/receive/block/${enc('spam@bad.test')}`, permission: ['list_entry_read'] },
  { method: 'DELETE', path: (x) => `${inbox(x)}/lists/receive/block/${enc('spam@bad.test')}`, permission: ['list_entry_delete'] },
  { method: 'DELETE', path: msg, permission: ['message_delete'] },
  { method: 'DELETE', path: (x) => `${inbox(x)}/threads/${x.threadId}`, permission: ['message_delete'] },
  { method: 'DELETE', path: inbox, permission: ['inbox_delete'] },
];

const ALL = ['inbox_read', 'inbox_create', 'inbox_update', 'inbox_delete', 'message_read', 'message_update', 'message_delete', 'list_entry_read', 'list_entry_create', 'list_entry_delete'];

const ATTACHMENT_MAIL = (to: string, id: string) =>
  [
    'From: Sender <sender@example.org>',
    `To: ${to}`,
    'Subject: matrix check',
    `Message-ID: <${id}@example.org>`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b"',
    '',
    '--b',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'matrix body',
    '--b',
    'Content-Type: text/plain; name="note.txt"',
    'Content-Disposition: attachment; filename="note.txt"',
    '',
    'attached',
    '--b--',
    '',
  ].join('\r\n');

/** Creates the inbox unless it exists: the delete routes in ROUTES remove it again. */
async function ensureInbox(svc: RunningSvc, inboxId: string): Promise<void> {
  if ((await api(svc.url, 'GET', `/v0/inboxes/${encodeURIComponent(inboxId)}`, { token: svc.ownerToken })).status === 404) await createInbox(svc, inboxId);
}

async function seed(svc: RunningSvc, inboxId: string, n: number): Promise<Target> {
  await ensureInbox(svc, inboxId);
  // Received mail has no route: it is committed the way the inbound pipeline commits it.
  const db = openHomeDb(svc.home);
  try {
    const committed = await seedMail(db, ATTACHMENT_MAIL(inboxId, `m${n}-${Date.now()}`), { inboxId });
    const att = db.prepare('SELECT attachment_id FROM attachments WHERE message_rowid = ?').get(committed.messageRowid) as { attachment_id: string };
    return { inboxId, threadId: committed.threadId, messageId: committed.messageId, attachmentId: att.attachment_id };
  } finally {
    db.close();
  }
}

let svc: RunningSvc;
t.before(async () => {
  svc = await startSvc();
  // Keys are scoped to IN, and a scope may only name inboxes that exist.
  await ensureInbox(svc, IN);
});
t.teardown(() => svc.stop());

t.test('out of scope is 404 even with every permission, and even without any', async (t) => {
  let n = 0;
  for (const route of ROUTES) {
    const target = await seed(svc, OUT, n++);
    const none = await createApiKey(svc, { permissions: [], inboxIds: [IN] });
    const all = await createApiKey(svc, { permissions: ALL, inboxIds: [IN] });
    for (const key of [none, all]) {
      const res = await api(svc.url, route.method, route.path(target), { token: key.secret, body: route.body?.(target) });
      t.equal(res.status, 404, `${route.method} ${route.path(target)} (${key === none ? 'no' : 'all'} permissions)`);
      t.equal((res.body as { code?: string })?.code, 'not_found');
    }
  }
});

t.test('in scope without the permission is 403 missing_permission', async (t) => {
  let n = 100;
  for (const route of ROUTES) {
    const target = await seed(svc, IN, n++);
    const others = ALL.filter((p) => !route.permission.includes(p));
    const key = await createApiKey(svc, { permissions: others, inboxIds: [IN] });
    const res = await api(svc.url, route.method, route.path(target), { token: key.secret, body: route.body?.(target) });
    t.equal(res.status, 403, `${route.method} ${route.path(target)} without ${route.permission}`);
    t.match(res.body, { code: 'missing_permission', message: new RegExp(route.permission[0]) });
  }
});

t.test('in scope with the permission is allowed', async (t) => {
  let n = 200;
  for (const route of ROUTES) {
    const target = await seed(svc, IN, n++);
    const key = await createApiKey(svc, { permissions: route.permission, inboxIds: [IN] });
    const res = await api(svc.url, route.method, route.path(target), { token: key.secret, body: route.body?.(target) });
    t.ok(res.status >= 200 && res.status < 300, `${route.method} ${route.path(target)} → ${res.status} ${res.status >= 300 ? res.text : ''}`);
  }
});

t.test('instance-wide lists and creates need scope, permission, and no inbox restriction', async (t) => {
  await ensureInbox(svc, IN);
  const restricted = await createApiKey(svc, { permissions: ALL, inboxIds: [IN] });
  const unrestrictedNone = await createApiKey(svc, { permissions: [] });
  const unrestrictedAll = await createApiKey(svc, { permissions: ALL });
  const globalList = await api(svc.url, 'GET', '/v0/lists/receive/block', { token: restricted.secret });
  t.equal(globalList.status, 403, 'an inbox-restricted key cannot use global lists');
  t.equal((await api(svc.url, 'GET', '/v0/lists/receive/block', { token: unrestrictedNone.secret })).status, 403);
  t.equal((await api(svc.url, 'GET', '/v0/lists/receive/block', { token: unrestrictedAll.secret })).status, 200);
  const createOutside = await api(svc.url, 'POST', '/v0/inboxes', { token: restricted.secret, body: { username: 'elsewhere', domain: 'matrix.test' } });
  t.equal(createOutside.status, 404, 'creating an address outside the scope is 404');
  t.equal((await api(svc.url, 'POST', '/v0/inboxes', { token: unrestrictedNone.secret, body: { username: 'new1', domain: 'matrix.test' } })).status, 403);
  t.equal((await api(svc.url, 'POST', '/v0/inboxes', { token: unrestrictedAll.secret, body: { username: 'new1', domain: 'matrix.test' } })).status, 200);
  for (const [path, perm] of [['/v0/inboxes', 'inbox_read'], ['/v0/threads', 'message_read']] as const) {
    t.equal((await api(svc.url, 'GET', path, { token: unrestrictedNone.secret })).status, 403, `${path} needs ${perm}`);
    t.equal((await api(svc.url, 'GET', path, { token: unrestrictedAll.secret })).status, 200);
  }
});

t.test('owner-only routes reject every API key', async (t) => {
  const key = await createApiKey(svc, { permissions: ALL });
  for (const [method, path] of [
    ['GET', '/v0/api-keys'],
    ['POST', '/v0/api-keys'],
    ['GET', `/v0/inboxes/${enc(IN)}/api-keys`],
    ['GET', '/v0/owner/sessions'],
    ['GET', '/v0/owner/transport'],
    ['POST', '/v0/owner/login-links'],
  ] as const) {
    const res = await api(svc.url, method, path, { token: key.secret, body: method === 'POST' ? {} : undefined });
    t.equal(res.status, 403, `${method} ${path}`);
    t.equal((res.body as { code: string }).code, 'missing_permission');
  }
});

t.test('an expired key is 401 everywhere', async (t) => {
  const key = await createApiKey(svc, { permissions: ALL });
  // SQL: no route makes a key that has already expired (`expires_at` must lie ahead).
  const db = openHomeDb(svc.home);
  expireApiKey(db, key.id);
  db.close();
  const res = await api(svc.url, 'GET', '/v0/inboxes', { token: key.secret });
  t.equal(res.status, 401);
  t.equal((res.body as { code: string }).code, 'unauthorized');
});
