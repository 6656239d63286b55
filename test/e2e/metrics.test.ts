/**
 * Usage metrics (issue 20 §5, docs/metrics.md) through the official AgentMail SDK against a real
 * `svc serve --local-edge`: mail received over SMTP, mail sent to a remote MX (a real SMTP sink)
 * that is delivered, bounced by a 5xx and complained about with an ARF report, and mail between
 * two inboxes of the home — counted by `metrics.queryEvents`, `inboxes.metrics.queryEvents`,
 * `metrics.queryUsage` and `inboxes.metrics.queryUsage`, with buckets, order and limits.
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import { AgentMailClient } from 'agentmail';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { startSink } from '../helpers/sink.js';
import { subscribe } from '../helpers/events.js';
import { arfReport } from '../helpers/mail.js';

const enc = encodeURIComponent;
type Buckets = { timestamp: Date; count: number }[] | undefined;
const total = (b: Buckets) => (b ?? []).reduce((n, x) => n + x.count, 0);

function smtpPort(svc: RunningSvc): number {
  return Number(String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp).split(':')[1]);
}

t.test('the SDK reads sent, delivered, bounced, complained and received counts computed from real mail', async (t) => {
  const sink = await startSink();
  t.teardown(() => sink.close());
  const dns = await startLoopbackDns({ 'remote.example': { MX: [{ exchange: 'mx.remote.example', priority: 10 }] }, 'mx.remote.example': { A: ['127.0.0.1'] } });
  t.teardown(() => dns.close());
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server, '--relay-port', String(sink.port)] });
  t.teardown(() => svc.stop());
  const owner = svc.ownerToken;
  const events = await subscribe(svc.url, owner);
  t.teardown(() => events.close());
  for (const username of ['alice', 'bob']) t.equal((await api(svc.url, 'POST', '/v0/inboxes', { token: owner, body: { username, domain: 'home.example' } })).status, 200);
  const alice = 'alice@home.example';
  const bob = 'bob@home.example';
  const send = async (inbox: string, body: Record<string, unknown>) => {
    const res = await api<{ message_id: string }>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token: owner, body });
    t.equal(res.status, 200, res.text);
    return res.body.message_id;
  };
  const began = new Date(Date.now() - 1000);

  // Received over SMTP from outside: two into bob.
  const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort(svc), secure: false, ignoreTLS: true });
  for (const subject of ['outside one', 'outside two']) {
    for (let tries = 0; ; tries++) {
      try {
        await smtp.sendMail({ from: 'someone@elsewhere.test', to: bob, subject, text: 'hello' });
        break;
      } catch (err) {
        if ((err as { responseCode?: number }).responseCode !== 451 || tries > 100) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await events.next('message.received', (e) => (e.message as { subject: string }).subject === subject);
  }
  // Sent by alice: delivered to the remote MX, then complained about; refused with a 5xx (bounced); to bob (delivered, received).
  const before = sink.messages.length;
  const delivered = await send(alice, { to: 'carol@remote.example', subject: 'Delivered', text: 'x' });
  const [copy] = (await sink.waitFor(before + 1)).slice(before);
  await events.next('message.delivered', (e) => (e.delivery as { message_id: string }).message_id === delivered);
  sink.mode = 'reject';
  const refused = await send(alice, { to: 'dave@remote.example', subject: 'Refused', text: 'x' });
  await events.next('message.bounced', (e) => (e.bounce as { message_id: string }).message_id === refused);
  sink.mode = 'accept';
  const arf = arfReport('svc-feedback@home.example', { originalMailFrom: copy.from }, [`From: ${alice}`, 'To: carol@remote.example', `Message-ID: ${delivered}`, 'Subject: Delivered']);
  await smtp.sendMail({ envelope: { from: 'fbl@remote.example', to: ['svc-feedback@home.example'] }, raw: arf });
  await events.next('message.complained', (e) => (e.complaint as { message_id: string }).message_id === delivered);
  const local = await send(alice, { to: bob, subject: 'Local', text: 'x' });
  await events.next('message.received', (e) => (e.message as { message_id: string; inbox_id: string }).message_id === local && (e.message as { inbox_id: string }).inbox_id === bob);
  await events.next('message.delivered', (e) => (e.delivery as { message_id: string }).message_id === local);

  const client = new AgentMailClient({ apiKey: owner, baseUrl: svc.url, maxRetries: 0, timeoutInSeconds: 20 });

  await t.test('metrics.queryEvents: every type over the owner\'s whole home, the last 24 hours by default', async (t) => {
    const all = await client.metrics.queryEvents();
    t.equal(total(all['message.received']), 3, 'two from outside and one from alice, into bob');
    t.equal(total(all['message.sent']), 3);
    t.equal(total(all['message.delivered']), 2, 'carol and bob');
    t.equal(total(all['message.bounced']), 1);
    t.equal(total(all['message.complained']), 1);
    t.equal(total(all['message.rejected']), 0);
    t.same(all['message.received.spam'], [], 'asked-for types with nothing to count are empty lists');
    t.ok(Array.isArray(all['domain.verified']), 'the owner\'s instance-wide answer carries domain.verified');
    for (const b of all['message.sent']!) t.ok(b.timestamp instanceof Date && b.timestamp >= began, 'individual event times, parsed by the SDK');
  });

  await t.test('inboxes.metrics.queryEvents: one inbox, chosen types, hourly buckets aligned to UTC hours', async (t) => {
    const res = await client.inboxes.metrics.queryEvents(alice, { eventTypes: ['message.sent', 'message.received'], period: 3600, start: began, end: new Date(Date.now() + 60_000) });
    t.same(Object.keys(res).sort(), ['message.received', 'message.sent']);
    t.equal(total(res['message.sent']), 3);
    t.equal(total(res['message.received']), 0, 'alice received nothing');
    for (const b of res['message.sent']!) t.equal(b.timestamp.getTime() % 3_600_000, 0, 'a bucket starts on the hour (UTC)');
    const bobs = await client.inboxes.metrics.queryEvents(bob, { eventTypes: ['message.received'], period: 86_400 });
    t.equal(total(bobs['message.received']), 3);
    t.equal(bobs['message.received']![0]!.timestamp.getUTCHours(), 0, 'a day bucket starts at midnight UTC');
  });

  await t.test('descending and limit pick the newest buckets', async (t) => {
    const res = await client.metrics.queryEvents({ eventTypes: ['message.received'], descending: true, limit: 1 });
    t.equal(res['message.received']!.length, 1);
    const asc = await client.metrics.queryEvents({ eventTypes: ['message.received'] });
    const newest = asc['message.received']!.at(-1)!;
    t.equal(res['message.received']![0]!.timestamp.getTime(), newest.timestamp.getTime());
  });

  await t.test('queryUsage: running totals, the newest point the current total', async (t) => {
    const home = await client.metrics.queryUsage({ period: 3600 });
    t.same(Object.keys(home).sort(), ['domain_count', 'inbox_count', 'message_count', 'storage_bytes', 'thread_count']);
    t.equal(home.message_count!.length, 25, 'the last 24 hours in hourly points (the first one partial)');
    t.equal(home.message_count!.at(-1)!.value, 6, '3 received + 3 sent');
    t.equal(home.inbox_count!.at(-1)!.value, 2);
    t.ok(home.storage_bytes!.at(-1)!.value > 0);
    const values = home.message_count!.map((p) => p.value);
    t.same(values, [...values].sort((a, b) => a - b), 'cumulative: never decreasing');
    const inbox = await client.inboxes.metrics.queryUsage(bob, { usageTypes: ['message_count', 'thread_count', 'pod_count'], period: 600, descending: true, limit: 3 });
    t.same(Object.keys(inbox).sort(), ['message_count', 'thread_count'], 'pod_count does not apply and is ignored');
    t.equal(inbox.message_count!.length, 3);
    t.equal(inbox.message_count![0]!.value, 3, 'newest first: bob holds 3 messages');
  });

  await t.test('an agent key sees only its inbox, instance-wide too', async (t) => {
    const key = await api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', { token: owner, body: { name: 'm', inbox_ids: [alice], permissions: ['message_read'] } });
    const agent = new AgentMailClient({ apiKey: key.body.api_key, baseUrl: svc.url, maxRetries: 0 });
    const res = await agent.metrics.queryEvents();
    t.equal(total(res['message.received']), 0, 'bob\'s mail is not counted');
    t.equal(total(res['message.sent']), 3);
    t.notOk('domain.verified' in res, 'domains are the owner\'s');
    t.notOk('message.received.spam' in res, 'hidden variants need label_spam_read');
    const usage = await agent.metrics.queryUsage();
    t.equal(usage.inbox_count!.at(-1)!.value, 1);
    t.equal(usage.message_count!.at(-1)!.value, 3);
  });

  await t.test('live counts: unread per inbox and drafts awaiting approval', async (t) => {
    const counts = await api<{ unread: number; pending_approval: number; inboxes: { inbox_id: string; unread: number }[] }>(svc.url, 'GET', '/v0/metrics/counts', { token: owner });
    t.equal(counts.status, 200);
    t.equal(counts.body.unread, 3);
    t.equal(counts.body.pending_approval, 0);
    t.same(counts.body.inboxes, [{ inbox_id: bob, unread: 3, pending_approval: 0 }]);
  });
});
