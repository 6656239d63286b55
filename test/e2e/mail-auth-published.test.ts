/**
 * Mail authentication for real against records svc published itself (issue 21 §2, last part):
 * a real Knot server on loopback holds one zone; svc's domain `agents.auth.test` is published into
 * it by `apply` through the RFC 2136 provider, next to a partner's domain whose DKIM key, SPF and
 * DMARC the test writes by hand. svc and its built-in edge resolve everything through that server.
 * - Inbound over SMTP: mail DKIM-signed by the partner's key from an address its SPF allows is
 *   stored clean; a forged signature, an SPF failure on a p=reject domain, and a spoofed From of a
 *   p=reject domain each get the documented outcome: stored with the hidden `unauthenticated`
 *   label (docs/inbound.md), never shown as clean mail.
 * - Outbound: a message svc sends from the domain, caught by an SMTP sink at the partner's MX,
 *   passes DKIM, SPF and DMARC with alignment when checked by an independent verifier (mailauth)
 *   against that same DNS server.
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { authenticate } from 'mailauth';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { dnsServersMissing, startKnot, type RunningKnot } from '../helpers/dns-servers.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { until } from '../helpers/until.js';
import { dnsResolver } from '../../src/edge/auth.js';

const ZONE = 'auth.test';
const DOMAIN = `agents.${ZONE}`;
const PARTNER = `partner.${ZONE}`;
const STRICT = `strict.${ZONE}`;
const INBOX = `hello@${DOMAIN}`;

const partnerKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
const partnerPublic = partnerKey.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const partnerPrivate = partnerKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
/** A TXT value as zone-file strings of at most 200 characters. */
const txt = (value: string) => (value.match(/.{1,200}/g) ?? []).map((s) => `"${s}"`).join(' ');

const missing = dnsServersMissing();
if (missing) {
  t.fail(missing);
} else {
  let knot: RunningKnot;
  let sink: Sink;
  let svc: RunningSvc;
  const owner = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token: svc.ownerToken, body });

  t.before(async () => {
    sink = await startSink();
    knot = await startKnot({
      zone: ZONE,
      keyName: 'svc-update',
      algorithm: 'hmac-sha256',
      records: [
        // The partner: signs with sel, sends from 127.0.0.1, publishes p=reject; its MX is the sink.
        `sel._domainkey.partner TXT ${txt(`v=DKIM1; k=rsa; p=${partnerPublic}`)}`,
        'partner TXT "v=spf1 ip4:127.0.0.1 -all"',
        '_dmarc.partner TXT "v=DMARC1; p=reject"',
        'partner MX 10 mx.partner',
        'mx.partner A 127.0.0.1',
        // A domain whose SPF does not allow 127.0.0.1 and that rejects what fails DMARC.
        'strict TXT "v=spf1 ip4:192.0.2.1 -all"',
        '_dmarc.strict TXT "v=DMARC1; p=reject"',
        // The local edge's own address, which svc never plans (a loopback address never goes into
        // DNS): here the "internet" is loopback, so the owner adds it, and SPF's `mx` finds it.
        'mx.agents A 127.0.0.1',
      ],
    });
    svc = await startSvc({ args: ['--local-edge', '--dns', knot.server, '--edge-dns', knot.server, '--relay-port', String(sink.port)] });
    const put = await owner('PUT', '/v0/owner/dns-provider', { kind: 'rfc2136', server: '127.0.0.1', port: knot.port, key_name: 'svc-update', algorithm: 'hmac-sha256', secret: knot.secret, zones: [ZONE] });
    if (put.status !== 200) throw new Error(`provider: ${put.status} ${put.text}`);
    const domain = await owner<{ domain_id: string }>('POST', '/v0/domains', { domain: DOMAIN });
    await owner('POST', `/v0/domains/${domain.body.domain_id}/apply`);
    await until('the domain verified against Knot', async () => (await owner<{ state: string }>('GET', `/v0/domains/${domain.body.domain_id}`)).body.state === 'verified', 60_000);
    const inbox = await owner('POST', '/v0/inboxes', { username: 'hello', domain: DOMAIN });
    if (inbox.status !== 200) throw new Error(`inbox: ${inbox.status} ${inbox.text}`);
  });
  t.teardown(async () => {
    await svc?.stop();
    await knot?.stop();
    await sink?.close();
  });

  const smtpPort = () => Number(String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp).split(':').pop());

  async function deliver(subject: string, from: { envelope: string; header: string }, dkimKey?: string): Promise<void> {
    const raw = [`From: ${from.header}`, `To: ${INBOX}`, `Subject: ${subject}`, `Message-ID: <${randomBytes(8).toString('hex')}@${from.envelope.split('@')[1]}>`, `Date: ${new Date().toUTCString()}`, '', `Body of ${subject}.`, ''].join('\r\n');
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort(),
      secure: false,
      ignoreTLS: true,
      name: 'client.auth.test',
      ...(dkimKey ? { dkim: { domainName: PARTNER, keySelector: 'sel', privateKey: dkimKey } } : {}),
    });
    await transport.sendMail({ envelope: { from: from.envelope, to: [INBOX] }, raw });
  }

  /** The stored message with this subject, as the owner sees it with every hidden label included. */
  async function stored(subject: string): Promise<{ labels: string[] }> {
    return until(`"${subject}" stored`, async () => {
      const res = await owner<{ messages: { subject: string; labels: string[] }[] }>('GET', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages?include_spam=true&include_blocked=true&include_unauthenticated=true`);
      return res.body.messages.find((m) => m.subject === subject);
    }, 30_000);
  }

  t.test('the published records are in Knot, as apply put them', async (t) => {
    t.same(knot.dig(DOMAIN, 'MX'), [`10 mx.${DOMAIN}.`]);
    t.match(knot.dig(DOMAIN, 'TXT').join(' '), /v=spf1 mx -all/);
    t.match(knot.dig(`_dmarc.${DOMAIN}`, 'TXT').join(' '), /v=DMARC1/);
  });

  t.test('inbound: mail signed by the partner from an address its SPF allows is stored clean', async (t) => {
    await deliver('signed by the partner', { envelope: `alice@${PARTNER}`, header: `Alice <alice@${PARTNER}>` }, partnerPrivate);
    const m = await stored('signed by the partner');
    t.notOk(m.labels.includes('unauthenticated'), `labels: ${m.labels.join(',')}`);
    t.ok(m.labels.includes('received'));
  });

  t.test('inbound: a forged signature on a p=reject domain from outside its SPF is unauthenticated', async (t) => {
    const forged = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    // Envelope from the strict domain (SPF fails for 127.0.0.1), header From the partner, signed with a key the partner never published.
    await deliver('forged signature', { envelope: `mallory@${STRICT}`, header: `Alice <alice@${PARTNER}>` }, forged);
    t.ok((await stored('forged signature')).labels.includes('unauthenticated'));
  });

  t.test('inbound: an SPF failure on a p=reject domain is unauthenticated', async (t) => {
    await deliver('spf failure', { envelope: `ceo@${STRICT}`, header: `CEO <ceo@${STRICT}>` });
    t.ok((await stored('spf failure')).labels.includes('unauthenticated'));
  });

  t.test('inbound: a spoofed From of the partner (p=reject) without a signature, sent from outside its SPF, is unauthenticated', async (t) => {
    // Both domains share the organizational domain auth.test, so an SPF pass for either would align
    // under relaxed DMARC: the envelope is the strict domain, whose SPF fails for 127.0.0.1.
    await deliver('spoofed from', { envelope: `billing@${STRICT}`, header: `Alice <alice@${PARTNER}>` });
    t.ok((await stored('spoofed from')).labels.includes('unauthenticated'));
  });

  t.test('outbound: svc\u2019s own mail passes DKIM, SPF and DMARC with alignment, checked by mailauth against the same DNS', async (t) => {
    const before = sink.messages.length;
    const sent = await owner<{ message_id: string }>('POST', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages/send`, { to: `bob@${PARTNER}`, subject: 'Hello partner', text: 'Signed and aligned.' });
    t.equal(sent.status, 200, sent.text);
    const [arrived] = (await sink.waitFor(before + 1, 60_000)).slice(before);
    const result = await authenticate(arrived.raw, { ip: '127.0.0.1', helo: 'localhost', sender: arrived.from, mta: 'verifier.auth.test', resolver: dnsResolver([knot.server]) });
    t.match(result.dkim.results, [{ signingDomain: DOMAIN, status: { result: 'pass', aligned: DOMAIN } }]);
    t.equal(result.spf && result.spf.status.result, 'pass', `SPF for ${arrived.from}`);
    t.equal(result.dmarc && result.dmarc.status.result, 'pass', 'DMARC passes for the From domain');
  });
}
