/**
 * Issue 16 finding 7: forged delivery reports. A real `svc serve --local-edge` sends a message to
 * two recipients at a "remote MX" (an SMTP sink found through loopback DNS); then, over real SMTP
 * into the edge, an attacker who received the message (and so knows its Message-ID and its return
 * path) sends DSNs and ARF reports: to a VERP address without a tag, with a forged tag, to the
 * feedback address naming only the Message-ID, and with the genuine tag but naming a recipient
 * that was not on the job. None may mark the message bounced or complained. A genuine DSN (the
 * real tag, a real recipient) still produces `message.bounced`; reports are applied in the order
 * the edge took them, so by then every forged one has been applied or dropped.
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import { api, startSvc } from '../helpers/svc.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { subscribe } from '../helpers/events.js';
import { arfReport, dsnReport } from '../helpers/mail.js';

const enc = encodeURIComponent;
const DOMAIN = 'home.example';
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


/** A complaint about `recipient`'s copy of `messageId`, optionally quoting a return path. */
const arf = (recipient: string, messageId: string, originalMailFrom?: string) =>
  arfReport(`svc-feedback@${DOMAIN}`, { originalMailFrom, originalRcptTo: recipient }, [`Message-ID: ${messageId}`, `To: ${recipient}`]);

t.test('forged DSN and ARF reports do not mark a sent message bounced or complained; a genuine DSN does', async (t) => {
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server, '--relay-port', String(sink.port)] });
  t.teardown(() => svc.stop());
  const events = await subscribe(svc.url, svc.ownerToken);
  t.teardown(() => events.close());
  const created = await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'alice', domain: DOMAIN } });
  const alice = created.body.inbox_id;

  const before = sink.messages.length;
  const sent = await api<{ message_id: string }>(svc.url, 'POST', `/v0/inboxes/${enc(alice)}/messages/send`, {
    token: svc.ownerToken,
    body: { to: ['carol@remote.example', 'dan@remote.example'], subject: 'Quarterly numbers', text: 'Hello' },
  });
  t.equal(sent.status, 200);
  const messageId = sent.body.message_id;
  const [copy] = (await sink.waitFor(before + 1)).slice(before);
  const returnPath = copy.from;
  await events.next('message.delivered', (e) => (e.delivery as { message_id: string }).message_id === messageId);

  const smtpPort = Number(String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp).split(':')[1]);
  const client = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true });
  const deliver = async (to: string, raw: string) => (await client.sendMail({ envelope: { from: '', to: [to] }, raw })).response;

  const at = returnPath.lastIndexOf('@');
  const local = returnPath.slice(0, at);
  const flipped = local.slice(0, -1) + (local.endsWith('0') ? '1' : '0');
  const attacks: [string, string, string][] = [
    ['a DSN to a VERP address without a tag, naming the sent Message-ID', `svc-bounce+x@${DOMAIN}`, dsnReport(`svc-bounce+x@${DOMAIN}`, 'carol@remote.example', messageId)],
    ['a DSN to a VERP address with a forged tag', `${flipped}@${DOMAIN}`, dsnReport(`${flipped}@${DOMAIN}`, 'carol@remote.example', messageId)],
    ['a DSN to the feedback address naming only the Message-ID', `svc-feedback@${DOMAIN}`, dsnReport(`svc-feedback@${DOMAIN}`, 'carol@remote.example', messageId)],
    ['a DSN with the genuine tag naming a recipient not on the job', returnPath, dsnReport(returnPath, 'mallory@remote.example', messageId)],
    ['an ARF report naming only the Message-ID', `svc-feedback@${DOMAIN}`, arf('carol@remote.example', messageId)],
    ['an ARF report with a forged tag in Original-Mail-From', `svc-feedback@${DOMAIN}`, arf('carol@remote.example', messageId, `${flipped}@${DOMAIN}`)],
    ['an ARF report with the genuine tag naming a recipient not on the job', `svc-feedback@${DOMAIN}`, arf('mallory@remote.example', messageId, returnPath)],
  ];
  for (const [name, to, raw] of attacks) t.match(await deliver(to, raw), /^250 /, `${name}: accepted at SMTP (a sender learns nothing)`);

  // The genuine report, taken after every forged one: when its bounce shows, the others were handled.
  await deliver(returnPath, dsnReport(returnPath, 'carol@remote.example', messageId));
  await events.next('message.bounced', (e) => (e.bounce as { message_id: string }).message_id === messageId);

  const bounces = events.all('message.bounced').filter((e) => (e.bounce as { message_id: string }).message_id === messageId);
  t.same(
    bounces.flatMap((e) => (e.bounce as { recipients: { address: string }[] }).recipients.map((r) => r.address)),
    ['carol@remote.example'],
    'exactly one bounce: the genuine one, for the real recipient',
  );
  t.same(events.all('message.complained'), [], 'no complaint was accepted');
  const message = await api<{ labels: string[] }>(svc.url, 'GET', `/v0/inboxes/${enc(alice)}/messages/${enc(messageId)}`, { token: svc.ownerToken });
  t.notOk(message.body.labels.includes('complained'), 'not labelled complained');
  t.ok(message.body.labels.includes('bounced'), 'labelled bounced by the genuine DSN');
});

t.test('a genuine ARF report (the tag in Original-Mail-From, a real recipient) still becomes a complaint', async (t) => {
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server, '--relay-port', String(sink.port)] });
  t.teardown(() => svc.stop());
  const events = await subscribe(svc.url, svc.ownerToken);
  t.teardown(() => events.close());
  const created = await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'bob', domain: DOMAIN } });
  const bob = created.body.inbox_id;
  const before = sink.messages.length;
  const sent = await api<{ message_id: string }>(svc.url, 'POST', `/v0/inboxes/${enc(bob)}/messages/send`, { token: svc.ownerToken, body: { to: 'erin@remote.example', subject: 'Offer', text: 'Hi' } });
  const [copy] = (await sink.waitFor(before + 1)).slice(before);
  const smtpPort = Number(String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp).split(':')[1]);
  const client = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true });
  await client.sendMail({ envelope: { from: 'fbl@remote.example', to: [`svc-feedback@${DOMAIN}`] }, raw: arf('erin@remote.example', sent.body.message_id, copy.from) });
  const complaint = await events.next('message.complained', (e) => (e.complaint as { message_id: string }).message_id === sent.body.message_id);
  t.same((complaint.complaint as { recipients: string[] }).recipients, ['erin@remote.example']);
});
