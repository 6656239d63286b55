/**
 * GET /v0/downloads/{token} against a running service (spec §4.7; docs/downloads.md). URLs are
 * minted by the service's own raw and attachment routes, since the signing key never leaves it.
 * Expiry is covered in test/unit/download-verify.test.ts on the same token code.
 */
import t from 'tap';
import { api, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';
import { expireApiKey, narrowApiKeyScope, openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { fixture, seedMail } from '../helpers/mail.js';
import { freePort } from '../helpers/ports.js';
import type { Db } from '../../src/db/open.js';

const MESSAGE_ID = '<multi-1@example.org>';
const RAW = fixture('multipart-attachment.eml');

let svc: RunningSvc;
let db: Db;
let port: number;
let inboxCount = 0;
t.before(async () => {
  port = await freePort();
  svc = await startSvc({ args: ['--port', String(port)] });
  db = openHomeDb(svc.home);
});
t.teardown(async () => {
  db.close();
  await svc.stop();
});

const enc = encodeURIComponent;
const messagePath = (inbox: string) => `/v0/inboxes/${enc(inbox)}/messages/${enc(MESSAGE_ID)}`;

/** A fresh inbox holding the multipart fixture: a PNG and a PDF attachment. */
async function seededInbox(): Promise<string> {
  const inbox = await createInbox(svc, `downloads${++inboxCount}@example.com`);
  await seedMail(db, RAW, { inboxId: inbox });
  return inbox;
}

function storedAttachment(inbox: string, filename: string): { attachment_id: string; content: Buffer } {
  return db
    .prepare('SELECT a.attachment_id, a.content FROM attachments a JOIN messages m ON m.id = a.message_rowid WHERE m.inbox_id = ? AND m.message_id = ? AND a.filename = ?')
    .get(inbox, MESSAGE_ID, filename) as { attachment_id: string; content: Buffer };
}

/** Asks the service for a download URL for the raw MIME (or an attachment) as `token` (or cookie). */
async function urlFor(inbox: string, auth: { token?: string; headers?: Record<string, string> }, attachmentId?: string): Promise<string> {
  const suffix = attachmentId ? `/attachments/${attachmentId}` : '/raw';
  const res = await api<{ download_url: string }>(svc.url, 'GET', messagePath(inbox) + suffix, auth);
  if (res.status !== 200) throw new Error(`no download URL: ${res.status} ${res.text}`);
  return res.body.download_url;
}

async function fetchUrl(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer; code?: string }> {
  const res = await fetch(url, { headers });
  const bytes = Buffer.from(await res.arrayBuffer());
  let code: string | undefined;
  if (res.headers.get('content-type')?.startsWith('application/json')) code = (JSON.parse(bytes.toString('utf8')) as { code?: string }).code;
  return { status: res.status, headers: res.headers, bytes, code };
}

/** A well-formed token (body.mac) that this service never signed. */
const forged = () => `${Buffer.from(JSON.stringify({ issuer: { kind: 'owner', id: 'owner' }, audience: null, origin: svc.url, target: { kind: 'raw', inboxId: 'a@example.org', messageId: '<x@y>' }, exp: Date.now() + 60_000 })).toString('base64url')}.${'A'.repeat(43)}`;

t.test('a download URL needs no credential and serves the exact bytes as an attachment with nosniff and no-store', async (t) => {
  const inbox = await seededInbox();
  const reader = (await createApiKey(svc, { permissions: ['message_read'], inboxIds: [inbox] })).secret;

  const raw = await fetchUrl(await urlFor(inbox, { token: reader }));
  t.equal(raw.status, 200);
  t.ok(raw.bytes.equals(RAW), 'the original MIME, byte for byte');
  t.equal(raw.headers.get('content-type'), 'message/rfc822');
  t.equal(raw.headers.get('content-disposition'), "attachment; filename=\"multi-1@example.org.eml\"; filename*=UTF-8''multi-1%40example.org.eml");
  t.equal(raw.headers.get('x-content-type-options'), 'nosniff');
  t.equal(raw.headers.get('cache-control'), 'no-store');

  for (const [filename, type] of [['photo.png', 'image/png'], ['invoice.pdf', 'application/pdf']]) {
    const stored = storedAttachment(inbox, filename);
    const res = await fetchUrl(await urlFor(inbox, { token: reader }, stored.attachment_id));
    t.equal(res.status, 200, filename);
    t.ok(res.bytes.equals(stored.content), `${filename}: the decoded bytes`);
    t.equal(res.headers.get('content-type'), type);
    t.equal(res.headers.get('content-length'), String(stored.content.length));
    t.equal(res.headers.get('content-disposition'), `attachment; filename="${filename}"; filename*=UTF-8''${filename}`, 'always an attachment, even when sent inline');
    t.equal(res.headers.get('x-content-type-options'), 'nosniff');
    t.equal(res.headers.get('cache-control'), 'no-store');
  }
  t.equal(storedAttachment(inbox, 'photo.png').content.subarray(1, 4).toString(), 'PNG');
});

t.test('an invalid or forged token is 404 not_found, with or without a credential', async (t) => {
  for (const token of ['nope', forged(), `${forged()}.extra`, 'a.b']) {
    for (const bearer of [undefined, svc.ownerToken]) {
      const res = await api(svc.url, 'GET', `/v0/downloads/${enc(token)}`, { token: bearer });
      t.equal(res.status, 404, `${token.slice(0, 12)} ${bearer ? 'with' : 'without'} bearer`);
      t.match(res.body, { code: 'not_found', message: String, fix: String });
    }
  }
});

t.test('a bearer sent with the URL must authenticate the issuing principal, else 401', async (t) => {
  const inbox = await seededInbox();
  const issuer = (await createApiKey(svc, { permissions: ['message_read'] })).secret;
  const other = (await createApiKey(svc, { permissions: ['message_read'] })).secret;
  const url = await urlFor(inbox, { token: issuer });
  t.equal((await fetchUrl(url, { authorization: `Bearer ${issuer}` })).status, 200, 'the issuer itself');
  for (const [who, bearer] of [['another key', other], ['the owner', svc.ownerToken], ['an unknown key', 'svc_key_unknown']]) {
    const res = await fetchUrl(url, { authorization: `Bearer ${bearer}` });
    t.equal(res.status, 401, who);
    t.equal(res.code, 'unauthorized');
  }
  t.equal((await fetchUrl(url)).status, 200, 'and without a bearer it still works');
});

t.test('revoking or expiring the issuing API key makes its URLs 401', async (t) => {
  const inbox = await seededInbox();
  const revoked = await createApiKey(svc, { permissions: ['message_read'] });
  const url = await urlFor(inbox, { token: revoked.secret });
  t.equal((await fetchUrl(url)).status, 200);
  const del = await api(svc.url, 'DELETE', `/v0/api-keys/${revoked.id}`, { token: svc.ownerToken });
  t.equal(del.status, 200);
  const afterRevoke = await fetchUrl(url);
  t.equal(afterRevoke.status, 401);
  t.equal(afterRevoke.code, 'unauthorized');

  const expiring = await createApiKey(svc, { permissions: ['message_read'] });
  const url2 = await urlFor(inbox, { token: expiring.secret });
  t.equal((await fetchUrl(url2)).status, 200);
  // SQL: a key's expires_at can only be set ahead of now, and waiting for it would time the test.
  expireApiKey(db, expiring.id);
  t.equal((await fetchUrl(url2)).status, 401, 'the key passed its expires_at');
});

t.test('an owner session URL works without the cookie and ends when the session does', async (t) => {
  const inbox = await seededInbox();
  const session = await setupOwner(svc);
  const url = await urlFor(inbox, { headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf } });
  t.equal((await fetchUrl(url)).status, 200, 'no cookie needed');
  const ownerUrl = await urlFor(inbox, { token: svc.ownerToken });
  const logout = await api(svc.url, 'POST', '/v0/owner/logout', { headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf } });
  t.equal(logout.status, 200);
  t.equal((await fetchUrl(url)).status, 401, 'signed out');
  t.equal((await fetchUrl(ownerUrl)).status, 200, 'the owner bearer lasts as long as the process');
});

t.test('an issuer that lost message_read gets 403', async (t) => {
  const inbox = await seededInbox();
  const reader = await createApiKey(svc, { permissions: ['message_read', 'inbox_read'] });
  const url = await urlFor(inbox, { token: reader.secret });
  const patch = await api(svc.url, 'PATCH', `/v0/api-keys/${reader.id}`, { token: svc.ownerToken, body: { permissions: ['inbox_read'] } });
  t.equal(patch.status, 200);
  const res = await fetchUrl(url);
  t.equal(res.status, 403);
  t.equal(res.code, 'missing_permission');
  await api(svc.url, 'PATCH', `/v0/api-keys/${reader.id}`, { token: svc.ownerToken, body: { permissions: ['message_read'] } });
  t.equal((await fetchUrl(url)).status, 200, 'given back, the same URL works again');
});

t.test('an inbox that left the issuer\'s scope is 404', async (t) => {
  const inbox = await seededInbox();
  const reader = await createApiKey(svc, { permissions: ['message_read'], inboxIds: [inbox] });
  const url = await urlFor(inbox, { token: reader.secret });
  // SQL: the scope cannot change through a route (spec §2.9), but it is rechecked as stored.
  narrowApiKeyScope(db, reader.id, ['elsewhere@example.com']);
  const res = await fetchUrl(url);
  t.equal(res.status, 404);
  t.equal(res.code, 'not_found');
});

t.test('a deleted or newly hidden message is 404', async (t) => {
  const inbox = await seededInbox();
  const reader = (await createApiKey(svc, { permissions: ['message_read', 'message_delete'] })).secret;
  const photo = storedAttachment(inbox, 'photo.png').attachment_id;
  const rawUrl = await urlFor(inbox, { token: reader });
  const attachmentUrl = await urlFor(inbox, { token: reader }, photo);
  const ownerUrl = await urlFor(inbox, { token: svc.ownerToken });

  const trash = await api(svc.url, 'PATCH', messagePath(inbox), { token: svc.ownerToken, body: { add_labels: ['trash'] } });
  t.equal(trash.status, 200);
  t.equal((await fetchUrl(rawUrl)).status, 404, 'trashed, without label_trash_read');
  t.equal((await fetchUrl(attachmentUrl)).status, 404);
  t.equal((await fetchUrl(ownerUrl)).status, 200, 'the owner may read every label');
  await api(svc.url, 'PATCH', messagePath(inbox), { token: svc.ownerToken, body: { remove_labels: ['trash'] } });
  t.equal((await fetchUrl(rawUrl)).status, 200, 'visible again');

  const del = await api(svc.url, 'DELETE', messagePath(inbox), { token: reader });
  t.equal(del.status, 200);
  for (const url of [rawUrl, attachmentUrl, ownerUrl]) {
    const res = await fetchUrl(url);
    t.equal(res.status, 404, 'deleted');
    t.equal(res.code, 'not_found');
  }
});

t.test('a URL only works on the origin it was issued for', async (t) => {
  const inbox = await seededInbox();
  const url = await urlFor(inbox, { token: svc.ownerToken });
  t.match(url, /^http:\/\/127\.0\.0\.1:/);
  const res = await fetchUrl(url.replace('//127.0.0.1:', '//localhost:'));
  t.equal(res.status, 404, 'localhost is another origin');
  t.equal(res.code, 'not_found');
  t.equal((await fetchUrl(url)).status, 200);
});

t.test('the route takes no cookie, and only GET /v0/downloads/{token} exists', async (t) => {
  const res = await api(svc.url, 'GET', `/v0/downloads/${forged()}`, { headers: { cookie: 'svc_session=whatever' } });
  t.equal(res.status, 404);
  for (const [method, p] of [['GET', '/v0/downloads'], ['GET', '/v0/downloads/'], ['GET', '/v0/downloads/a/b'], ['DELETE', `/v0/downloads/${forged()}`], ['POST', `/v0/downloads/${forged()}`]]) {
    const other = await api(svc.url, method, p, { token: svc.ownerToken });
    t.equal(other.status, 404, `${method} ${p.slice(0, 30)}`);
    t.equal((other.body as { code: string }).code, 'not_found');
  }
});

// Last: it replaces the running service.
t.test('a service restart invalidates every URL', async (t) => {
  const inbox = await seededInbox();
  const url = await urlFor(inbox, { token: svc.ownerToken });
  t.equal((await fetchUrl(url)).status, 200);
  db.close();
  await svc.stop();
  svc = await startSvc({ home: svc.home, init: false, args: ['--port', String(port)] });
  db = openHomeDb(svc.home);
  t.equal(new URL(url).origin, svc.url, 'same origin after the restart');
  const res = await fetchUrl(url);
  t.equal(res.status, 404);
  t.equal(res.code, 'not_found');
  t.equal((await fetchUrl(await urlFor(inbox, { token: svc.ownerToken }))).status, 200, 'a new URL works');
});
