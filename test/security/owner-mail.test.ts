/**
 * The owner's mail list routes (`/v0/owner/mail/...`, docs/web-app.md "Mail") attacked: they
 * list every inbox's mail, so an agent key (even one with every permission, even naming only its
 * own inbox), a cookie without its CSRF token, a page on another origin or port, and a
 * DNS-rebinding Host must all get an error and no mail. Hidden mail never appears in them.
 */
import t from 'tap';
import { api, startSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { seedPrincipals } from '../helpers/principals.js';
import { wireRequest } from '../helpers/wire.js';

const svc = await startSvc();
t.teardown(() => svc.stop());
const who = await seedPrincipals(svc);
const port = Number(new URL(svc.url).port);
const db = openHomeDb(svc.home);
t.teardown(() => db.close());
await seedMail(db, simpleMail({ from: 'x@far.test', to: who.inbox, subject: 'Secret plans', body: 'the secret word', messageId: '<secret-1@far.test>' }), { inboxId: who.inbox });
await seedMail(db, simpleMail({ from: 'x@far.test', to: who.otherInbox, subject: 'Other secret', body: 'the secret word' }), { inboxId: who.otherInbox });
await seedMail(db, simpleMail({ from: 'spam@far.test', to: who.inbox, subject: 'Hidden spam', body: 'the secret word' }), { inboxId: who.inbox, hiddenLabels: ['spam'] });

const enc = encodeURIComponent;
const PATHS = [
  '/v0/owner/mail/threads',
  `/v0/owner/mail/threads?inbox_ids=${enc(who.inbox)}`,
  `/v0/owner/mail/threads?inbox_ids=${enc(who.otherInbox)}&include_spam=true`,
  `/v0/owner/mail/threads/search?q=secret&inbox_ids=${enc(who.inbox)}`,
  '/v0/owner/mail/unread',
  `/v0/owner/mail/inboxes/${enc(who.inbox)}/messages/${enc('<secret-1@far.test>')}/authentication`,
  `/v0/owner/mail/inboxes/${enc(who.otherInbox)}/messages/${enc('<secret-1@far.test>')}/authentication`,
];

const noMail = (text: string) => !/Secret plans|Other secret|Hidden spam|unread_threads|authentication"/.test(text);

t.test('agent keys, a bad bearer, no credential and a bare cookie get an error and no mail', async (t) => {
  for (const kind of ['none', 'bad_bearer', 'key_in_scope', 'key_other_inbox', 'cookie_only'] as const) {
    for (const path of PATHS) {
      const res = await api(svc.url, 'GET', path, { headers: who.headers(kind) });
      t.ok(res.status === 401 || res.status === 403, `${kind} ${path}: ${res.status}`);
      t.ok(noMail(res.text), `${kind} ${path}: nothing listed`);
      t.type((res.body as { code?: unknown }).code, 'string', 'a documented error body');
    }
  }
});

t.test('an agent cannot reach the same lists through the agent routes with owner parameters', async (t) => {
  const res = await api(svc.url, 'GET', `/v0/threads?inbox_ids=${enc(who.otherInbox)}&has_attachment=true`, { headers: who.headers('key_in_scope') });
  t.equal(res.status, 400, 'unknown parameters are refused, not ignored');
  t.ok(noMail(res.text));
});

t.test('the owner session and the owner bearer see mail; hidden mail only when asked', async (t) => {
  const session = await api<{ threads: { subject: string }[] }>(svc.url, 'GET', '/v0/owner/mail/threads', { headers: who.headers('session') });
  t.equal(session.status, 200);
  t.same(session.body.threads.map((x) => x.subject).sort(), ['Other secret', 'Secret plans']);
  const search = await api<{ threads: { subject: string }[] }>(svc.url, 'GET', '/v0/owner/mail/threads/search?q=secret', { headers: who.headers('owner_bearer') });
  t.notOk(search.body.threads.some((x) => x.subject === 'Hidden spam'), 'search never includes hidden mail');
  const spam = await api<{ threads: { subject: string }[] }>(svc.url, 'GET', `/v0/owner/mail/threads?inbox_ids=${enc(who.inbox)}&include_spam=true`, { headers: who.headers('session') });
  t.ok(spam.body.threads.some((x) => x.subject === 'Hidden spam'), 'the owner may ask for spam');
});

t.test('a foreign Origin, a cross-site fetch or another local port is refused with the session', async (t) => {
  for (const path of PATHS) {
    for (const extra of [{ origin: 'http://evil.example' }, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' }, { origin: `http://127.0.0.1:${port === 65535 ? port - 1 : port + 1}` }, { origin: 'null' }]) {
      const res = await api(svc.url, 'GET', path, { headers: { ...who.headers('session'), ...extra } });
      t.equal(res.status, 403, `${path} with ${JSON.stringify(extra)}`);
      t.ok(noMail(res.text));
    }
  }
});

t.test('a DNS-rebinding Host is refused before authentication', async (t) => {
  for (const host of ['evil.example', `evil.example:${port}`, `2130706433:${port}`, `127.0.0.1.evil.example:${port}`]) {
    const answer = await wireRequest({ port, method: 'GET', target: '/v0/owner/mail/unread', host, headers: who.headers('session') });
    t.ok(answer.status >= 400 && answer.status < 500, `Host ${host}: ${answer.status}`);
    t.ok(noMail(answer.text), `Host ${host}: nothing listed`);
  }
});
