/**
 * Waiting for the next message (issue 20 §1, docs/waiting.md): real mail over SMTP into the
 * built-in edge answers a request that was already waiting; filters, `after`, the timeout (204),
 * the instance-wide form over a key's scope, and the stored-mail answer.
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';

const enc = encodeURIComponent;

async function smtpSender(svc: RunningSvc) {
  const ready = svc.stdoutLines.find((l) => l.event === 'server.ready')!;
  const port = Number(String(ready.smtp).split(':')[1]);
  const client = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
  return async (mail: { from: string; to: string; subject: string; text: string }) => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        return await client.sendMail(mail);
      } catch (err) {
        // 451 until the edge has the new inbox's routing.
        if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  };
}

t.test('a wait is answered by mail that arrives over SMTP while it waits', async (t) => {
  const dns = await startLoopbackDns({});
  t.teardown(() => dns.close());
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  t.teardown(() => svc.stop());
  const owner = svc.ownerToken;
  for (const username of ['signup', 'other']) t.equal((await api(svc.url, 'POST', '/v0/inboxes', { token: owner, body: { username, domain: 'wait.test' } })).status, 200);
  const key = await api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', { token: owner, body: { name: 'waiter', inbox_ids: ['signup@wait.test'], permissions: ['message_read'] } });
  t.equal(key.status, 200);
  const agent = key.body.api_key;
  const send = await smtpSender(svc);
  // Routing warm-up: the first message proves the edge knows both inboxes.
  await send({ from: 'warm@elsewhere.test', to: 'signup@wait.test', subject: 'warm-up', text: 'x' });
  await send({ from: 'warm@elsewhere.test', to: 'other@wait.test', subject: 'warm-up', text: 'x' });

  await t.test('the matching message answers; others do not', async (t) => {
    const started = new Date().toISOString();
    const waiting = api<{ message_id: string; subject: string; text: string }>(svc.url, 'GET', `/v0/inboxes/${enc('signup@wait.test')}/messages/wait?from=noreply%40service.test&subject=verify&timeout=30&after=${enc(started)}`, { token: agent });
    await new Promise((r) => setTimeout(r, 300));
    await send({ from: 'friend@elsewhere.test', to: 'signup@wait.test', subject: 'Please verify lunch', text: 'wrong sender' });
    await send({ from: 'noreply@service.test', to: 'other@wait.test', subject: 'Verify your account', text: 'wrong inbox' });
    await send({ from: 'Service <noreply@service.test>', to: 'signup@wait.test', subject: 'Verify your account', text: 'Your code is 482913' });
    const res = await waiting;
    t.equal(res.status, 200);
    t.equal(res.body.subject, 'Verify your account');
    t.match(res.body.text, /482913/, 'the full message with its text');
  });

  await t.test('after=<message_id> answers with the next message at once when it is stored already', async (t) => {
    const list = await api<{ messages: { message_id: string; subject: string }[] }>(svc.url, 'GET', `/v0/inboxes/${enc('signup@wait.test')}/messages?ascending=true`, { token: agent });
    const first = list.body.messages[0]!;
    const res = await api<{ subject: string }>(svc.url, 'GET', `/v0/inboxes/${enc('signup@wait.test')}/messages/wait?after=${enc(first.message_id)}&timeout=0`, { token: agent });
    t.equal(res.status, 200);
    t.equal(res.body.subject, list.body.messages[1]!.subject, 'the oldest message after it');
  });

  await t.test('the timeout answers 204 with no body', async (t) => {
    const began = Date.now();
    const res = await api(svc.url, 'GET', `/v0/inboxes/${enc('signup@wait.test')}/messages/wait?subject=never-sent&timeout=1`, { token: agent });
    t.equal(res.status, 204);
    t.equal(res.text, '');
    t.ok(Date.now() - began >= 900, 'it waited');
  });

  await t.test('the instance-wide form covers exactly the key\'s scope', async (t) => {
    const waiting = api<{ subject: string; inbox_id: string }>(svc.url, 'GET', `/v0/messages/wait?subject=scope-check&timeout=20`, { token: agent });
    await new Promise((r) => setTimeout(r, 300));
    await send({ from: 'a@elsewhere.test', to: 'other@wait.test', subject: 'scope-check outside', text: 'not for this key' });
    await send({ from: 'a@elsewhere.test', to: 'signup@wait.test', subject: 'scope-check inside', text: 'for this key' });
    const res = await waiting;
    t.equal(res.status, 200);
    t.equal(res.body.subject, 'scope-check inside');
    t.equal(res.body.inbox_id, 'signup@wait.test');
  });

  await t.test('many waiters on one inbox are all answered by one message', async (t) => {
    const waits = Array.from({ length: 50 }, () => api<{ subject: string }>(svc.url, 'GET', `/v0/inboxes/${enc('signup@wait.test')}/messages/wait?subject=broadcast&timeout=30`, { token: agent }));
    await new Promise((r) => setTimeout(r, 500));
    await send({ from: 'a@elsewhere.test', to: 'signup@wait.test', subject: 'broadcast', text: 'everyone' });
    const answers = await Promise.all(waits);
    t.same(new Set(answers.map((a) => `${a.status} ${a.body.subject}`)), new Set(['200 broadcast']));
  });
});
