/**
 * Outbound through the built-in edge (ARCHITECTURE §6) end to end: `svc serve --local-edge` with
 * a loopback DNS server whose MX for remote.example points at a real SMTP sink. Covers delivery
 * with `message.delivered`, a remote 5xx and an inbound DSN becoming `message.bounced`, mail
 * between two inboxes of the same home (local delivery through the buffer), and a crash right
 * after the handover: recovery asks the edge, the message is `sent`, and the sink has one copy.
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { subscribe, type EventStream } from '../helpers/events.js';
import { arfReport, dsnReport } from '../helpers/mail.js';
import { until } from '../helpers/until.js';

const enc = encodeURIComponent;
let dns: LoopbackDns;
let sink: Sink;

t.before(async () => {
  sink = await startSink();
  dns = await startLoopbackDns({ 'remote.example': { MX: [{ exchange: 'mx.remote.example', priority: 10 }] }, 'mx.remote.example': { A: ['127.0.0.1'] } });
});
t.teardown(async () => {
  await sink.close();
  await dns.close();
});

const edgeArgs = () => ['--local-edge', '--edge-dns', dns.server, '--relay-port', String(sink.port)];

async function createInbox(svc: RunningSvc, username: string): Promise<string> {
  const res = await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username, domain: 'home.example' } });
  if (res.status !== 200) throw new Error(`inbox: ${res.status} ${res.text}`);
  return res.body.inbox_id;
}

async function send(svc: RunningSvc, inbox: string, body: Record<string, unknown>): Promise<{ message_id: string; thread_id: string }> {
  const res = await api<{ message_id: string; thread_id: string }>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token: svc.ownerToken, body });
  if (res.status !== 200) throw new Error(`send: ${res.status} ${res.text}`);
  return res.body;
}

async function messageOf(svc: RunningSvc, inbox: string, id: string) {
  return (await api<Record<string, unknown>>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(id)}`, { token: svc.ownerToken })).body;
}

t.test('through the local edge: delivered to the remote MX, bounced by a 5xx and by a DSN, delivered locally', async (t) => {
  const svc = await startSvc({ args: edgeArgs() });
  t.teardown(() => svc.stop());
  const events: EventStream = await subscribe(svc.url, svc.ownerToken);
  t.teardown(() => events.close());
  const alice = await createInbox(svc, 'alice');
  const bob = await createInbox(svc, 'bob');

  // 1. Remote recipient: the edge resolves the MX and delivers to the sink.
  const before = sink.messages.length;
  const out = await send(svc, alice, { to: 'carol@remote.example', subject: 'Via the edge', text: 'Hello Carol' });
  const [arrived] = (await sink.waitFor(before + 1)).slice(before);
  t.same(arrived.to, ['carol@remote.example']);
  t.match(arrived.from, /^svc-bounce\+[0-9a-f-]+@home\.example$/);
  t.match(arrived.raw.toString(), /^DKIM-Signature: /m, 'signed');
  const delivered = await events.next('message.delivered', (e) => (e.delivery as { message_id: string }).message_id === out.message_id);
  t.same((delivered.delivery as { recipients: string[] }).recipients, ['carol@remote.example']);
  const m = await messageOf(svc, alice, out.message_id);
  t.same((m.labels as string[]).sort(), ['delivered', 'sent']);
  t.ok(dns.queries.includes('MX remote.example'), 'the MX was looked up in DNS');

  // 2. The remote MX refuses with 550: bounced, type/sub_type unknown.
  sink.mode = 'reject';
  const refused = await send(svc, alice, { to: 'dave@remote.example', subject: 'Refused', text: 'x' });
  const bounce = await events.next('message.bounced', (e) => (e.bounce as { message_id: string }).message_id === refused.message_id);
  sink.mode = 'accept';
  t.match(bounce.bounce, { type: 'unknown', sub_type: 'unknown', recipients: [{ address: 'dave@remote.example', status: '550' }] });
  t.ok(((await messageOf(svc, alice, refused.message_id)).labels as string[]).includes('bounced'));

  // 3. Accepted, then a DSN comes back to the VERP return path: bounced, and the DSN is not stored as mail.
  const before2 = sink.messages.length;
  const later = await send(svc, alice, { to: 'erin@remote.example', subject: 'Later bounce', text: 'x' });
  const [copy] = (await sink.waitFor(before2 + 1)).slice(before2);
  await events.next('message.delivered', (e) => (e.delivery as { message_id: string }).message_id === later.message_id);
  const smtpPort = Number(String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp).split(':')[1]);
  const dsn = dsnReport(copy.from, 'erin@remote.example');
  const client = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true });
  await client.sendMail({ envelope: { from: '', to: [copy.from] }, raw: dsn });
  const dsnBounce = await events.next('message.bounced', (e) => (e.bounce as { message_id: string }).message_id === later.message_id);
  t.equal((dsnBounce.bounce as { recipients: { address: string }[] }).recipients[0].address, 'erin@remote.example');
  const threads = await api<{ count: number }>(svc.url, 'GET', `/v0/inboxes/${enc(alice)}/threads?limit=100`, { token: svc.ownerToken });
  t.equal(
    (threads.body as unknown as { threads: { subject: string }[] }).threads.filter((th) => /Undelivered/.test(th.subject ?? '')).length,
    0,
    'the DSN did not become mail',
  );

  // 3b. A feedback-loop complaint (ARF) tied to the message by the VERP tag it quotes: complained.
  const arf = arfReport('svc-feedback@home.example', { originalMailFrom: copy.from }, [
    `From: ${alice}`,
    'To: erin@remote.example',
    `Message-ID: ${later.message_id}`,
    'Subject: Later bounce',
  ]);
  await client.sendMail({ envelope: { from: 'fbl@remote.example', to: ['svc-feedback@home.example'] }, raw: arf });
  const complaint = await events.next('message.complained', (e) => (e.complaint as { message_id: string }).message_id === later.message_id);
  t.match(complaint.complaint, { type: 'unknown', sub_type: 'unknown' });
  t.ok(((await messageOf(svc, alice, later.message_id)).labels as string[]).includes('complained'));

  // 4. Another inbox of this home: delivered into the buffer and received like any mail.
  const before3 = sink.messages.length;
  const local = await send(svc, alice, { to: bob, subject: 'Hi Bob', text: 'Local mail' });
  const received = await events.next('message.received', (e) => (e.message as { inbox_id: string }).inbox_id === bob);
  t.equal((received.message as { subject: string }).subject, 'Hi Bob');
  t.equal((received.message as { message_id: string }).message_id, local.message_id, 'the same Message-ID arrives');
  await events.next('message.delivered', (e) => (e.delivery as { message_id: string }).message_id === local.message_id);
  t.equal(sink.messages.length, before3, 'local mail never left the machine');
  await until('the reply to land in alice', async () => {
    const reply = await api(svc.url, 'POST', `/v0/inboxes/${enc(bob)}/messages/${enc(local.message_id)}/reply`, { token: svc.ownerToken, body: { text: 'Thanks' } });
    return reply.status === 200 ? reply : undefined;
  });
  const back = await events.next('message.received', (e) => (e.message as { inbox_id: string }).inbox_id === alice);
  t.equal((back.message as { thread_id: string }).thread_id, local.thread_id, 'the reply joins the sender’s thread');
});

t.test('a crash right after the handover to the edge: recovery asks the edge, sent once', async (t) => {
  const first = await startSvc({ args: edgeArgs(), env: { SVC_TEST_FAULT: 'outbox-kill-after-handover' } });
  const inbox = await createInbox(first, 'crashy');
  const before = sink.messages.length;
  const out = await send(first, inbox, { to: 'frank@remote.example', subject: 'Crash via edge', text: 'x' });
  await first.exited;
  t.equal(first.proc.signalCode, 'SIGKILL');

  const second = await startSvc({ home: first.home, init: false, args: edgeArgs() });
  t.teardown(() => second.stop());
  const m = await until('the message to settle', async () => {
    const msg = await messageOf(second, inbox, out.message_id);
    return msg.send_status === 'queued' ? undefined : msg;
  });
  t.not(m.send_status, 'send_unknown', 'the edge was asked instead of giving up');
  t.ok(['sent', 'delivered'].includes(m.send_status as string), `settled as ${String(m.send_status)}`);
  await sink.waitFor(before + 1);
  await new Promise((r) => setTimeout(r, 1000));
  t.equal(sink.messages.slice(before).filter((x) => x.raw.includes('Crash via edge')).length, 1, 'exactly one copy reached the MX');
});
