/**
 * A crash mid-send (ARCHITECTURE §2, §6): the process is killed with SIGKILL right after the
 * transport took the message and before the outcome was recorded. With an SMTP smart host the
 * home cannot ask what happened, so after the restart the message is `send_unknown` for the
 * owner — never sent a second time.
 */
import t from 'tap';
import { api, startSvc } from '../helpers/svc.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { startSink } from '../helpers/sink.js';

const enc = encodeURIComponent;

t.test('SMTP smart host: killed after the handover → send_unknown after restart, one copy at the sink', async (t) => {
  const sink = await startSink();
  t.teardown(() => sink.close());
  const first = await startSvc({ env: { SVC_TEST_FAULT: 'outbox-kill-after-handover' } });
  const inbox = await createInbox(first, 'crash@home.example');
  const token = (await createApiKey(first, { permissions: ['message_send', 'message_read'], inboxIds: [inbox] })).secret;
  await api(first.url, 'PUT', '/v0/owner/transport', { token: first.ownerToken, body: { smtp: { host: '127.0.0.1', port: sink.port } } });
  const sent = await api<{ message_id: string }>(first.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body: { to: 'bob@remote.example', subject: 'Crash', text: 'x' } });
  t.equal(sent.status, 200);
  const code = await first.exited;
  t.equal(first.proc.signalCode, 'SIGKILL', 'the process died by SIGKILL');
  t.equal(code, null);
  t.equal(sink.messages.length, 1, 'the smart host got the message before the crash');

  const second = await startSvc({ home: first.home, init: false });
  t.teardown(() => second.stop());
  let m: Record<string, unknown> = {};
  for (let i = 0; i < 100; i++) {
    m = (await api(second.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(sent.body.message_id)}`, { token: second.ownerToken })).body;
    if (m.send_status !== 'queued') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(m.send_status, 'send_unknown');
  t.equal(m.send_reason, 'interrupted_during_handover');
  t.same(m.labels, ['send_unknown']);
  await new Promise((r) => setTimeout(r, 500));
  t.equal(sink.messages.length, 1, 'never sent twice');
});

t.test('a scheduled draft that fell due while the service was stopped is sent after the restart', async (t) => {
  const sink = await startSink();
  t.teardown(() => sink.close());
  const first = await startSvc();
  const inbox = await createInbox(first, 'scheduler@home.example');
  await api(first.url, 'PUT', '/v0/owner/transport', { token: first.ownerToken, body: { smtp: { host: '127.0.0.1', port: sink.port } } });
  const sendAt = new Date(Date.now() + 2_000).toISOString();
  const draft = await api<{ draft_id: string; state: string }>(first.url, 'POST', `/v0/inboxes/${enc(inbox)}/drafts`, {
    token: first.ownerToken,
    body: { to: ['bob@remote.example'], subject: 'Due during the outage', text: 'x', send_at: sendAt },
  });
  t.equal(draft.status, 200);
  t.equal(draft.body.state, 'scheduled');
  t.equal(await first.stop(), 0);
  await new Promise((r) => setTimeout(r, 2_500));
  t.equal(sink.messages.length, 0, 'nothing was sent while stopped');

  const second = await startSvc({ home: first.home, init: false });
  t.teardown(() => second.stop());
  await sink.waitFor(1, 20_000);
  let status = '';
  for (let i = 0; i < 100 && status !== 'sent'; i++) {
    status = (await api<{ state: string }>(second.url, 'GET', `/v0/inboxes/${enc(inbox)}/drafts/${draft.body.draft_id}`, { token: second.ownerToken })).body.state;
    if (status !== 'sent') await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(status, 'sent');
  t.match(sink.messages[0].raw.toString(), /Subject: Due during the outage/);
});
