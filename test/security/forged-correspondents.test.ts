/**
 * Forged senders must not become known correspondents (issue 32 §5). A stranger can write any
 * `From:`; if received mail made its sender "known", a guarded key could then mail those addresses
 * without the first-contact hold (docs/guarded.md). Over real SMTP into the built-in edge, against
 * a loopback DNS server holding SPF, DKIM and DMARC records: only a From address that passed
 * authentication (DMARC, or aligned DKIM or SPF) becomes known; the attacker's variants — no
 * records at all, SPF passing for another domain, a DKIM signature of another domain, a failing
 * SPF, a lookalike prefix, a display name spelling an address, several From addresses, and the Cc, Reply-To
 * and Sender of authenticated mail — each stay first contacts. The lookalike check's references
 * follow the same rule.
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import { generateKeyPairSync } from 'node:crypto';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { createApiKey } from '../helpers/seed.js';

const enc = encodeURIComponent;
const INBOX = 'agent@known.test';
const SPF_LOOPBACK = 'v=spf1 ip4:127.0.0.1 -all';

const dkimKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
const dkimPublic = dkimKey.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const dkimPrivate = dkimKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

interface Refusal {
  code?: string;
  reasons?: { detector: string; detail: string }[];
}

let dns: LoopbackDns;
let sink: Sink;
let svc: RunningSvc;
let smtp: nodemailer.Transporter;
let guarded: string;

t.before(async () => {
  dns = await startLoopbackDns({
    // SPF allows the test's address; no DMARC record.
    'partner.test': { TXT: [SPF_LOOPBACK] },
    // Signs with DKIM; no SPF, no DMARC.
    'signed.test': {},
    'sel._domainkey.signed.test': { TXT: [`v=DKIM1; k=rsa; p=${dkimPublic}`] },
    // SPF and a DMARC policy of its own.
    'dmarc.test': { TXT: [SPF_LOOPBACK] },
    '_dmarc.dmarc.test': { TXT: ['v=DMARC1; p=none'] },
    // SPF that does not allow the test's address: the mail is labelled unauthenticated.
    'strict.test': { TXT: ['v=spf1 ip4:192.0.2.1 -all'] },
  });
  sink = await startSink();
  svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  const owner = (method: string, path: string, body?: unknown) => api(svc.url, method, path, { token: svc.ownerToken, body });
  if ((await owner('POST', '/v0/inboxes', { username: 'agent', domain: 'known.test' })).status !== 200) throw new Error('inbox');
  if ((await owner('PUT', '/v0/owner/transport', { smtp: { host: '127.0.0.1', port: sink.port } })).status !== 200) throw new Error('transport');
  // Every first contact is held, so each send below says whether its recipient is known.
  if ((await owner('PATCH', '/v0/owner/guard', { new_recipients: { per_message: 0, per_day: 0 } })).status !== 200) throw new Error('guard');
  guarded = (await createApiKey(svc, { permissions: ['message_read', 'message_send'], inboxIds: [INBOX], sendPolicy: 'guarded' })).secret;
  const ready = svc.stdoutLines.find((l) => l.event === 'server.ready')!;
  smtp = nodemailer.createTransport({ host: '127.0.0.1', port: Number(String(ready.smtp).split(':').pop()), secure: false, ignoreTLS: true });
});
t.teardown(async () => {
  smtp?.close();
  await svc?.stop();
  await sink?.close();
  await dns?.close();
});

let delivered = 0;
/** Delivers over SMTP (retrying the edge's 451 while routing settles) and waits until it is stored. */
async function deliver(mail: nodemailer.SendMailOptions & { envelope?: { from: string; to: string } }): Promise<{ labels: string[]; manipulation: { findings: { reason: string }[] } | null }> {
  const subject = `probe ${++delivered}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await smtp.sendMail({ to: INBOX, subject, text: 'Hello from a correspondent.', ...mail });
      break;
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const include = 'include_spam=true&include_unauthenticated=true&include_blocked=true';
  const stored = await api<{ labels: string[]; manipulation: { findings: { reason: string }[] } | null }>(
    svc.url,
    'GET',
    `/v0/inboxes/${enc(INBOX)}/messages/wait?after=2000-01-01T00:00:00Z&subject=${enc(subject)}&timeout=20&${include}`,
    { token: svc.ownerToken },
  );
  if (stored.status !== 200) throw new Error(`${subject} was not stored: ${stored.status}`);
  return stored.body;
}

/** Whether a guarded send to `address` alone goes out (known) or is held as a first contact. */
async function isKnown(address: string): Promise<boolean> {
  const res = await api<Refusal>(svc.url, 'POST', `/v0/inboxes/${enc(INBOX)}/messages/send`, { token: guarded, body: { to: [address], subject: 'hi', text: 'Following up.' } });
  if (res.status === 200) return true;
  if (res.status === 403 && res.body.code === 'approval_required' && res.body.reasons?.some((r) => r.detector === 'new_recipients')) return false;
  throw new Error(`send to ${address}: ${res.status} ${JSON.stringify(res.body)}`);
}

const dkim = { domainName: 'signed.test', keySelector: 'sel', privateKey: dkimPrivate };

t.test('forged From addresses stay first contacts for a guarded key', async (t) => {
  const forged: [string, nodemailer.SendMailOptions & { envelope?: { from: string; to: string } }][] = [
    // No SPF, DKIM or DMARC for the domain: nothing fails, nothing passes. (Names unlike each
    // other, so that none is flagged as imitating another.)
    ...['acme', 'globex', 'initech', 'umbrella', 'hooli'].map((name): [string, nodemailer.SendMailOptions] => [`ceo@${name}.test`, { from: `CEO <ceo@${name}.test>` }]),
    // SPF passes, but for the envelope's domain, not the From's.
    ['boss@victim-spf.test', { from: 'boss@victim-spf.test', envelope: { from: 'bounce@partner.test', to: INBOX } }],
    // A valid DKIM signature, but of another domain than the From's.
    ['boss@victim-dkim.test', { from: 'boss@victim-dkim.test', envelope: { from: 'bounce@victim-dkim.test', to: INBOX }, dkim }],
    // SPF fails: labelled unauthenticated.
    ['ceo@strict.test', { from: 'ceo@strict.test' }],
    // The authenticated domain as the start of another name.
    ['ceo@partner.test.evil.test', { from: 'ceo@partner.test.evil.test', envelope: { from: 'bounce@partner.test', to: INBOX } }],
    // A display name spelling an address.
    ['boss@victim-name.test', { from: '"friend@partner.test" <boss@victim-name.test>' }],
  ];
  for (const [, mail] of forged) await deliver(mail);
  for (const [address] of forged) t.notOk(await isKnown(address), `${address} is still a first contact`);
});

t.test('only the authenticated From of a message is known; its Cc, Reply-To, Sender and second From are not', async (t) => {
  await deliver({ from: 'Friend <friend@partner.test>', cc: 'cc@victim-cc.test', replyTo: 'reply@victim-reply.test', sender: 'sender@victim-sender.test', envelope: { from: 'bounce@partner.test', to: INBOX } });
  await deliver({ from: ['first@partner.test', 'second@victim-second.test'] });
  await deliver({ from: 'aligned@signed.test', envelope: { from: 'bounce@nowhere-spf.test', to: INBOX }, dkim });
  await deliver({ from: 'sub@mail.partner.test', envelope: { from: 'bounce@partner.test', to: INBOX } });
  await deliver({ from: 'policy@dmarc.test' });
  for (const address of ['friend@partner.test', 'first@partner.test', 'aligned@signed.test', 'sub@mail.partner.test', 'policy@dmarc.test']) {
    t.ok(await isKnown(address), `${address} (authenticated) is known`);
  }
  for (const address of ['cc@victim-cc.test', 'reply@victim-reply.test', 'sender@victim-sender.test', 'second@victim-second.test']) {
    t.notOk(await isKnown(address), `${address} is still a first contact`);
  }
});

t.test('the lookalike check takes its references from authenticated mail only', async (t) => {
  // partner.test is a reference (authenticated mail above): its imitation is flagged.
  const imitation = await deliver({ from: 'friend@partmer.test' });
  t.ok(imitation.manipulation?.findings.some((f) => f.reason === 'lookalike_sender'), 'partmer.test imitates the authenticated partner.test');
  // hooli.test came only with a forged From: not a reference, so its near-namesake is not compared with it.
  const near = await deliver({ from: 'ceo@hoo1i.test' });
  t.notOk(near.manipulation?.findings.some((f) => f.reason === 'lookalike_sender'), 'a forged domain is no reference');
});
