/**
 * The attacker's view of waiting for mail (issue 20 §1, docs/waiting.md): another inbox's id and
 * the instance-wide form never reveal mail outside the key's scope; permissions and hidden labels
 * hold while waiting; a key revoked mid-wait gets no mail; bad input is a clear 400; stopping the
 * service ends every wait at once.
 */
import t from 'tap';
import { api, startSvc } from '../helpers/svc.js';
import { seedMail, simpleMail } from '../helpers/mail.js';

const enc = encodeURIComponent;
const wait = (inbox: string, query: string) => `/v0/inboxes/${enc(inbox)}/messages/wait?${query}`;

t.test('waiting respects scope, permissions, hidden labels and revocation', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const owner = svc.ownerToken;
  for (const username of ['mine', 'theirs']) await api(svc.url, 'POST', '/v0/inboxes', { token: owner, body: { username, domain: 'waitsec.test' } });
  const newKey = async (permissions: string[]) => {
    const res = await api<{ api_key: string; api_key_id: string }>(svc.url, 'POST', '/v0/api-keys', { token: owner, body: { name: 'k', inbox_ids: ['mine@waitsec.test'], permissions } });
    return res.body;
  };
  const reader = await newKey(['message_read']);
  const noRead = await newKey(['inbox_read']);

  await t.test('another inbox is 404 before any permission check, in every spelling', async (t) => {
    for (const inbox of ['theirs@waitsec.test', 'THEIRS@waitsec.test', ' theirs@waitsec.test', 'nobody@waitsec.test']) {
      for (const token of [reader.api_key, noRead.api_key]) {
        const res = await api(svc.url, 'GET', wait(inbox, 'timeout=0'), { token });
        t.equal(res.status, 404, `${inbox}`);
        t.equal((res.body as { code: string }).code, 'not_found');
      }
    }
  });

  await t.test('message_read is required, and include_spam needs label_spam_read', async (t) => {
    t.equal((await api(svc.url, 'GET', wait('mine@waitsec.test', 'timeout=0'), { token: noRead.api_key })).status, 403);
    t.equal((await api(svc.url, 'GET', '/v0/messages/wait?timeout=0', { token: noRead.api_key })).status, 403);
    const spam = await api(svc.url, 'GET', wait('mine@waitsec.test', 'timeout=0&include_spam=true'), { token: reader.api_key });
    t.equal(spam.status, 403);
    t.equal((spam.body as { code: string }).code, 'missing_permission');
  });

  await t.test('bad input is a 400 with a fix; an unknown or out-of-scope after message is 404', async (t) => {
    for (const query of ['timeout=61', 'timeout=-1', 'timeout=abc', 'after=yesterday', 'after=2026-13-45T99:00:00Z', 'bogus=1', `from=${'x'.repeat(5000)}`]) {
      const res = await api<{ code: string; fix?: string }>(svc.url, 'GET', wait('mine@waitsec.test', query), { token: reader.api_key });
      t.equal(res.status, 400, query.slice(0, 40));
      t.equal(res.body.code, 'validation_error');
    }
    const theirs = await seedMail(svc.home, simpleMail({ from: 'x@elsewhere.test', to: 'theirs@waitsec.test', subject: 'theirs', messageId: '<theirs-1@elsewhere.test>' }), { inboxId: 'theirs@waitsec.test' });
    t.equal(theirs.duplicate, false);
    for (const after of ['<nope@elsewhere.test>', '<theirs-1@elsewhere.test>']) {
      const res = await api(svc.url, 'GET', wait('mine@waitsec.test', `after=${enc(after)}&timeout=0`), { token: reader.api_key });
      t.equal(res.status, 404, after);
    }
    const wide = await api(svc.url, 'GET', `/v0/messages/wait?after=${enc('<theirs-1@elsewhere.test>')}&timeout=0`, { token: reader.api_key });
    t.equal(wide.status, 404, 'the instance-wide form does not find a message outside the scope either');
  });

  await t.test('mail outside the scope or with a hidden label never answers; the next visible one does', async (t) => {
    const waiting = api<{ subject: string }>(svc.url, 'GET', '/v0/messages/wait?timeout=20', { token: reader.api_key });
    await new Promise((r) => setTimeout(r, 300));
    // Written by another process (the test), so only the waits' safety scan of the log finds them.
    await seedMail(svc.home, simpleMail({ from: 'x@elsewhere.test', to: 'theirs@waitsec.test', subject: 'outside the scope' }), { inboxId: 'theirs@waitsec.test' });
    await seedMail(svc.home, simpleMail({ from: 'x@elsewhere.test', to: 'mine@waitsec.test', subject: 'spam' }), { inboxId: 'mine@waitsec.test', hiddenLabels: ['spam'] });
    await new Promise((r) => setTimeout(r, 1_500));
    await seedMail(svc.home, simpleMail({ from: 'x@elsewhere.test', to: 'mine@waitsec.test', subject: 'visible' }), { inboxId: 'mine@waitsec.test' });
    const res = await waiting;
    t.equal(res.status, 200);
    t.equal(res.body.subject, 'visible');
  });

  await t.test('a key revoked while it waits gets 401, not the mail', async (t) => {
    const doomed = await newKey(['message_read']);
    const waiting = api(svc.url, 'GET', wait('mine@waitsec.test', 'subject=after-revocation&timeout=20'), { token: doomed.api_key });
    await new Promise((r) => setTimeout(r, 300));
    t.equal((await api(svc.url, 'DELETE', `/v0/api-keys/${doomed.api_key_id}`, { token: owner })).status, 200);
    await seedMail(svc.home, simpleMail({ from: 'x@elsewhere.test', to: 'mine@waitsec.test', subject: 'after-revocation' }), { inboxId: 'mine@waitsec.test' });
    const res = await waiting;
    t.equal(res.status, 401);
    t.notOk(res.text.includes('after-revocation'), 'nothing of the message in the answer');
  });

  await t.test('stopping the service ends every wait with 503 at once', async (t) => {
    const waits = Array.from({ length: 5 }, () => api(svc.url, 'GET', wait('mine@waitsec.test', 'subject=never&timeout=60'), { token: reader.api_key }));
    await new Promise((r) => setTimeout(r, 300));
    const began = Date.now();
    const exited = svc.stop();
    const answers = await Promise.all(waits);
    t.same(answers.map((a) => a.status), [503, 503, 503, 503, 503]);
    t.ok(Date.now() - began < 5_000, 'well inside the 5 s drain');
    await exited;
  });
});
