/**
 * Issue 17 §1: an inbox receives mail from the moment its create call has answered. With the
 * built-in edge, a message sent to an inbox in the same tick as its create answer must arrive —
 * never be treated as remote and bounced because the edge had not learned the address yet.
 *
 * The provisioning loop (which pushes routing every pass) is kept busy the way a real home can
 * be: a registered domain whose DNS checks wait on a name server that never answers. Routing
 * pushed only by that loop then reaches the edge seconds after the create answered.
 *
 * With the built-in edge the create answer waits for the routing push; a standalone edge
 * (`svc edge`) instead holds the home's mail for an unknown address of a routed domain until the
 * routing arrives.
 */
import t from 'tap';
import dgram from 'node:dgram';
import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { api, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { startEdgeProcess } from '../helpers/edge.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { subscribe } from '../helpers/events.js';

const enc = encodeURIComponent;
/** Fresh inboxes raced against their first message. */
const FRESH_INBOXES = 30;
/** Fewer for the standalone edge: each waits for the busy loop's next push. */
const STANDALONE_FRESH_INBOXES = 5;
const DOMAIN = 'race.example';
/** Bounds the wait for the edge's delivery reports (a stuck message fails the test, not hangs it). */
const OUTCOME_WAIT_MS = 90_000;
/** Bounds the wait for the slow domain to reach `verifying` (its checks then run on every pass). */
const VERIFYING_WAIT_MS = 30_000;

async function createInbox(svc: RunningSvc, username: string): Promise<string> {
  const res = await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username, domain: DOMAIN } });
  if (res.status !== 200) throw new Error(`inbox: ${res.status} ${res.text}`);
  return res.body.inbox_id;
}

async function send(svc: RunningSvc, from: string, to: string, subject: string): Promise<string> {
  const res = await api<{ message_id: string }>(svc.url, 'POST', `/v0/inboxes/${enc(from)}/messages/send`, { token: svc.ownerToken, body: { to, subject, text: 'First mail to a brand-new inbox.' } });
  if (res.status !== 200) throw new Error(`send: ${res.status} ${res.text}`);
  return res.body.message_id;
}

async function subjectsIn(svc: RunningSvc, inbox: string): Promise<string[]> {
  const res = await api<{ messages: { subject: string }[] }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages`, { token: svc.ownerToken });
  return res.body.messages.map((m) => m.subject);
}

/** A UDP "name server" on loopback that swallows every query. */
async function silentNameServer(): Promise<{ server: string; close(): Promise<void> }> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { server: `127.0.0.1:${socket.address().port}`, close: () => new Promise((resolve) => socket.close(() => resolve())) };
}

type Events = Awaited<ReturnType<typeof subscribe>>;

/** Registers and applies a domain, then waits until the provisioning loop runs its (slow) checks. */
async function keepProvisioningBusy(t: Tap.Test, svc: RunningSvc): Promise<void> {
  const registered = await api<{ domain_id: string }>(svc.url, 'POST', '/v0/domains', { token: svc.ownerToken, body: { domain: 'slow.example' } });
  t.equal(registered.status, 200, 'a domain is registered');
  const applied = await api(svc.url, 'POST', `/v0/domains/${registered.body.domain_id}/apply`, { token: svc.ownerToken });
  t.equal(applied.status, 202, 'and applied');
  const verifyingBy = Date.now() + VERIFYING_WAIT_MS;
  let status = '';
  while (status !== 'verifying' && Date.now() < verifyingBy) {
    status = (await api<{ state: string }>(svc.url, 'GET', `/v0/domains/${registered.body.domain_id}`, { token: svc.ownerToken })).body.state;
    if (status !== 'verifying') await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(status, 'verifying', 'the provisioning loop is now busy with its DNS checks');
}

/** Creates `count` inboxes, each sent a message in the same tick as its create answer. */
async function raceFreshInboxes(svc: RunningSvc, sender: string, count: number): Promise<{ inbox: string; subject: string; messageId: string }[]> {
  const sent: { inbox: string; subject: string; messageId: string }[] = [];
  for (let i = 0; i < count; i++) {
    const subject = `Welcome ${i}`;
    const inbox = await createInbox(svc, `fresh${i}`);
    sent.push({ inbox, subject, messageId: await send(svc, sender, inbox, subject) });
  }
  return sent;
}

/** Waits for every message's final outcome (the edge reports it back), then checks all of them. */
async function expectAllDelivered(t: Tap.Test, svc: RunningSvc, events: Events, sent: { inbox: string; subject: string; messageId: string }[]): Promise<void> {
  const outcomeOf = (messageId: string) =>
    events.events.find((e) => {
      const body = (e.delivery ?? e.bounce ?? e.failure) as { message_id?: string } | undefined;
      return ['message.delivered', 'message.bounced', 'message.failed'].includes(e.event_type as string) && body?.message_id === messageId;
    });
  const deadline = Date.now() + OUTCOME_WAIT_MS;
  while (sent.some((s) => !outcomeOf(s.messageId)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const { messageId } of sent) t.equal(outcomeOf(messageId)?.event_type, 'message.delivered', `${messageId} was delivered`);
  // Delivered means stored in the edge's buffer; the home pulls it from there a moment later.
  for (const { inbox, subject } of sent) {
    let subjects = await subjectsIn(svc, inbox);
    while (subjects.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      subjects = await subjectsIn(svc, inbox);
    }
    t.same(subjects, [subject], `${inbox} received its first message`);
  }
  t.same(events.all('message.bounced'), [], 'no message bounced');
  t.same(events.all('message.failed'), [], 'no message failed');
}

t.test('built-in edge: mail sent the moment an inbox is created arrives, none bounces', async (t) => {
  // The edge's DNS holds no records: a recipient it does not host is looked up, not found, bounced.
  const edgeDns = await startLoopbackDns({});
  t.teardown(() => edgeDns.close());
  const silent = await silentNameServer();
  t.teardown(() => silent.close());
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', edgeDns.server, '--dns', silent.server] });
  t.teardown(() => svc.stop());
  const events = await subscribe(svc.url, svc.ownerToken);
  t.teardown(() => events.close());
  await keepProvisioningBusy(t, svc);

  const sender = await createInbox(svc, 'sender');
  await expectAllDelivered(t, svc, events, await raceFreshInboxes(svc, sender, FRESH_INBOXES));
});

t.test('standalone edge: mail for an address it does not route yet is held, not bounced', async (t) => {
  const edgeDns = await startLoopbackDns({});
  t.teardown(() => edgeDns.close());
  const silent = await silentNameServer();
  t.teardown(() => silent.close());
  const dataDir = path.join(tempDir('svc-edge-hold-'), 'edge');
  const edge = await startEdgeProcess(['--data', dataDir, '--smtp-port', '0', '--api-port', '0', '--hostname', 'mx.race.example', '--dns', edgeDns.server]);
  t.teardown(() => edge.proc.kill('SIGKILL'));
  const { ready } = edge;
  const svc = await startSvc({ args: ['--dns', silent.server] });
  t.teardown(() => svc.stop());
  const token = fs.readFileSync(ready.token_file, 'utf8').trim();
  const paired = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { edge: { url: ready.api.url, token } } });
  t.equal(paired.status, 200, 'the home is paired with the edge');
  const events = await subscribe(svc.url, svc.ownerToken);
  t.teardown(() => events.close());
  await keepProvisioningBusy(t, svc);

  // The domain is routed once the sender's address is: delivered to it over SMTP (a sender retries a refusal).
  const sender = await createInbox(svc, 'sender');
  const client = nodemailer.createTransport({ host: ready.smtp.host, port: ready.smtp.port, secure: false, ignoreTLS: true });
  const routedBy = Date.now() + VERIFYING_WAIT_MS;
  for (;;) {
    try {
      await client.sendMail({ from: 'peer@elsewhere.test', to: sender, subject: 'routed', text: 'x' });
      break;
    } catch (err) {
      if (Date.now() > routedBy) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const raced = await raceFreshInboxes(svc, sender, STANDALONE_FRESH_INBOXES);

  // The edge surely sees this mail before the routing: it is handed over before the inbox exists.
  const early = { inbox: `early@${DOMAIN}`, subject: 'Sent before the routing' };
  const earlyId = await send(svc, sender, early.inbox, early.subject);
  await events.next('message.sent', (e) => (e.send as { message_id: string }).message_id === earlyId, OUTCOME_WAIT_MS);
  t.equal(await createInbox(svc, 'early'), early.inbox, 'the inbox is created after the edge took the message');
  await expectAllDelivered(t, svc, events, [...raced, { ...early, messageId: earlyId }]);
});
