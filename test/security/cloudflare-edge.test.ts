/**
 * The Cloudflare Email Worker edge against an attacker (workerd through `svc edge cloudflare dev`):
 * the API without, with a wrong, or with a near-miss token; path and body tricks; and mail
 * authentication, which for this edge happens at the home from the message itself: DKIM verified
 * against a loopback DNS server, SPF only from an ARC set that validates and is sealed by the
 * trusted sealer (here a test domain, SVC_TEST_ARC_SEALER; in production Cloudflare's).
 */
import t from 'tap';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import path from 'node:path';
import { dkimSign, sealMessage } from 'mailauth';
import { api, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { edgeCall, NO_CLOUDFLARE_CALLS, sendToWorker, startCloudflareDev, type CloudflareDev } from '../helpers/cloudflare-edge.js';

const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DOMAIN = 'cfsec.test';
const SEALER = 'arc-sealer.test';

const keyPair = () => {
  const k = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey: k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), dns: `v=DKIM1; k=rsa; p=${k.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}` };
};
const senderKey = keyPair();
const sealerKey = keyPair();
const rogueSealerKey = keyPair();

let dns: LoopbackDns;
let edge: CloudflareDev;
let svc: RunningSvc;
let inbox: string;

t.before(async () => {
  dns = await startLoopbackDns({
    'sender.test': { TXT: ['v=spf1 ip4:192.0.2.10 -all'] },
    'sel._domainkey.sender.test': { TXT: [senderKey.dns] },
    '_dmarc.sender.test': { TXT: ['v=DMARC1; p=reject'] },
    'bank.test': { TXT: ['v=spf1 ip4:192.0.2.1 -all'] },
    '_dmarc.bank.test': { TXT: ['v=DMARC1; p=reject'] },
    'spfonly.test': { TXT: ['v=spf1 ip4:192.0.2.20 -all'] },
    '_dmarc.spfonly.test': { TXT: ['v=DMARC1; p=reject'] },
    [`cf._domainkey.${SEALER}`]: { TXT: [sealerKey.dns] },
    'cf._domainkey.rogue-sealer.test': { TXT: [rogueSealerKey.dns] },
  });
  edge = await startCloudflareDev(path.join(tempDir('svc-cf-sec-'), 'edge'));
  svc = await startSvc({ args: ['--dns', dns.server], env: { ...NO_CLOUDFLARE_CALLS, SVC_TEST_ARC_SEALER: SEALER } });
  const paired = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { edge: { url: edge.url, token: edge.token } } });
  if (paired.status !== 200) throw new Error(paired.text);
  inbox = (await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'sec', domain: DOMAIN } })).body.inbox_id;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(200)) {
    const r = await edgeCall<{ addresses?: string[] }>(edge.url, edge.token, 'GET', '/routing');
    if (r.status === 200 && r.body.addresses?.includes(inbox)) return;
  }
  throw new Error('the home never pushed its routing');
});
t.teardown(async () => {
  await svc?.stop();
  edge?.process.proc.kill('SIGTERM');
  await edge?.process.exited;
  dns?.close();
});

t.test('the API refuses every route without the right token: 401 with WWW-Authenticate, nothing else', async (t) => {
  const near = edge.token.slice(0, -1) + (edge.token.endsWith('A') ? 'B' : 'A');
  const variants: [string, Record<string, string>][] = [
    ['no header', {}],
    ['wrong token', { authorization: 'Bearer edge_' + randomBytes(32).toString('base64url') }],
    ['one character off', { authorization: `Bearer ${near}` }],
    ['a prefix', { authorization: `Bearer ${edge.token.slice(0, 20)}` }],
    ['with a suffix', { authorization: `Bearer ${edge.token}x` }],
    ['basic scheme', { authorization: `Basic ${Buffer.from(`x:${edge.token}`).toString('base64')}` }],
    ['token without scheme', { authorization: edge.token }],
    ['empty bearer', { authorization: 'Bearer ' }],
  ];
  for (const [name, headers] of variants) {
    for (const [method, route] of [['GET', '/objects'], ['GET', '/routing'], ['PUT', '/routing'], ['POST', '/objects/delete'], ['GET', '/nope'], ['GET', '/wait?timeout_ms=0']]) {
      const res = await fetch(edge.url + route, { method, headers: { ...headers, 'content-type': 'application/json' }, body: method === 'GET' ? undefined : '{}' });
      const body = (await res.json()) as { error: string };
      t.equal(res.status, 401, `${name}: ${method} ${route}`);
      t.equal(body.error, 'unauthorized');
      t.equal(res.headers.get('www-authenticate'), 'Bearer realm="svc-edge"');
    }
  }
});

t.test('with the token, malformed keys, queries and bodies get the documented 4xx, never a 500', async (t) => {
  const cases: [string, string, unknown, number, string][] = [
    ['GET', '/objects/../routing.json', undefined, 404, 'not_found'],
    ['GET', '/objects/not-a-key', undefined, 400, 'validation_error'],
    ['GET', '/objects/%2e%2e%2frouting.json', undefined, 400, 'validation_error'],
    ['GET', '/objects?after=routing.json', undefined, 400, 'validation_error'],
    ['GET', '/objects?limit=0', undefined, 400, 'validation_error'],
    ['GET', '/objects?limit=1001', undefined, 400, 'validation_error'],
    ['GET', '/objects?prefix=', undefined, 400, 'validation_error'],
    ['POST', '/objects/fetch', { keys: [] }, 400, 'validation_error'],
    ['POST', '/objects/fetch', { keys: ['../routing.json'] }, 400, 'validation_error'],
    ['POST', '/objects/fetch', { keys: ['01a22443-9383-7000-8727-e63f45ae89e7', '01a22443-9383-7000-8727-e63f45ae89e7'] }, 400, 'validation_error'],
    ['POST', '/objects/delete', { keys: ['01a22443-9383-7000-8727-e63f45ae89e7'], extra: 1 }, 400, 'validation_error'],
    ['PUT', '/routing', { recipient_public_key: { kty: 'OKP', crv: 'X25519', x: 'a'.repeat(43), d: 'b'.repeat(43) }, domains: [], addresses: [] }, 400, 'validation_error'],
    ['PUT', '/routing', { recipient_public_key: { kty: 'EC', crv: 'P-256', x: 'a'.repeat(43) }, domains: [], addresses: [] }, 400, 'validation_error'],
    ['GET', '/queue/routing.json', undefined, 400, 'validation_error'],
  ];
  for (const [method, route, body, status, code] of cases) {
    const r = await edgeCall<{ error: string; message: string }>(edge.url, edge.token, method, route, body);
    t.equal(r.status, status, `${method} ${route}`);
    t.equal(r.body.error, code);
  }
  const notJson = await fetch(`${edge.url}/objects/fetch`, { method: 'POST', headers: { authorization: `Bearer ${edge.token}`, 'content-type': 'application/json' }, body: '{"keys":' });
  t.equal(notJson.status, 400);
  const wrongType = await fetch(`${edge.url}/objects/fetch`, { method: 'POST', headers: { authorization: `Bearer ${edge.token}`, 'content-type': 'text/plain' }, body: '{}' });
  t.equal(wrongType.status, 415);
  // The routing the home pushed is still in place.
  t.ok((await edgeCall<{ addresses: string[] }>(edge.url, edge.token, 'GET', '/routing')).body.addresses.includes(inbox));
});

t.test('recipients the routing does not name are rejected, whatever their spelling', async (t) => {
  const raw = (to: string) => `From: a@sender.test\r\nTo: ${to}\r\nSubject: x\r\nMessage-ID: <${randomBytes(6).toString('hex')}@sender.test>\r\n\r\nx\r\n`;
  for (const to of [`other@${DOMAIN}`, `svc-bounce+x@${DOMAIN}`, `svc-feedback@${DOMAIN}`, `${inbox.split('@')[0]}@evil.test`, `${inbox}.evil.test`]) {
    const r = await sendToWorker(edge.url, 'a@sender.test', to, raw(to));
    t.equal(r.status, 400, to);
    t.match(r.text, '550 5.1.1');
  }
  const upper = inbox.toUpperCase();
  t.equal((await sendToWorker(edge.url, 'a@sender.test', upper, raw(upper))).status, 200, 'the routed address in other case is accepted');
});

function message(from: string, subject: string): string {
  return [`From: <${from}>`, `To: ${inbox}`, `Subject: ${subject}`, `Message-ID: <${randomBytes(8).toString('hex')}@x.test>`, 'Date: Thu, 02 Jan 2025 03:04:05 +0000', 'MIME-Version: 1.0', 'Content-Type: text/plain', '', `Body of ${subject}`, ''].join('\r\n');
}

async function dkimSigned(raw: string, domain: string, privateKey: string): Promise<string> {
  const { signatures } = await dkimSign(raw, { signatureData: [{ signingDomain: domain, selector: 'sel', privateKey }] } as Parameters<typeof dkimSign>[1]);
  return signatures + raw;
}

async function arcSealed(raw: string, sealer: string, privateKey: string, authResults: string): Promise<string> {
  const headers = await sealMessage(raw, { signingDomain: sealer, selector: 'cf', privateKey, authResults, cv: 'none' } as Parameters<typeof sealMessage>[1]);
  return headers.toString() + raw;
}

/** Delivers through the Worker and answers the labels the home gave the message. */
async function labelsAt(raw: string, mailFrom: string): Promise<string[]> {
  const id = /Message-ID: (<[^>]+>)/.exec(raw)![1];
  const sent = await sendToWorker(edge.url, mailFrom, inbox, raw);
  if (sent.status !== 200) throw new Error(sent.text);
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(200)) {
    const res = await api<{ labels: string[] }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(id)}`, { token: svc.ownerToken });
    if (res.status === 200) return res.body.labels;
  }
  throw new Error('the message never arrived at the home');
}

t.test('DKIM and DMARC are checked at the home from the message', async (t) => {
  const signed = await labelsAt(await dkimSigned(message('alice@sender.test', 'signed'), 'sender.test', senderKey.privateKey), 'alice@sender.test');
  t.notOk(signed.includes('unauthenticated'), 'a valid aligned DKIM signature: DMARC passes');

  const tampered = (await dkimSigned(message('alice@sender.test', 'tampered'), 'sender.test', senderKey.privateKey)).replace('Body of tampered', 'Body of something else');
  t.ok((await labelsAt(tampered, 'alice@sender.test')).includes('unauthenticated'), 'a signature over another body fails');

  const forged = message('ceo@bank.test', 'forged bank');
  t.ok((await labelsAt(forged, 'ceo@bank.test')).includes('unauthenticated'), 'From a p=reject domain without a signature');

  const wrongKey = await dkimSigned(message('ceo@bank.test', 'signed by another'), 'bank.test', keyPair().privateKey);
  t.ok((await labelsAt(wrongKey.replace('s=sel', 's=sel'), 'ceo@bank.test')).includes('unauthenticated'), 'a signature with a key DNS does not hold');

  const misaligned = await dkimSigned(message('ceo@bank.test', 'misaligned'), 'sender.test', senderKey.privateKey);
  t.ok((await labelsAt(misaligned, 'ceo@bank.test')).includes('unauthenticated'), 'a valid signature of another domain does not vouch for From');
});

t.test('SPF comes only from an ARC set that validates and is sealed by the trusted sealer', async (t) => {
  const claim = `mx.${SEALER}; spf=pass smtp.mailfrom=bob@spfonly.test`;
  const trusted = await arcSealed(message('bob@spfonly.test', 'arc trusted'), SEALER, sealerKey.privateKey, claim);
  t.notOk((await labelsAt(trusted, 'bob@spfonly.test')).includes('unauthenticated'), 'SPF pass from the trusted, valid ARC set aligns: DMARC passes');

  const rogue = await arcSealed(message('bob@spfonly.test', 'arc rogue'), 'rogue-sealer.test', rogueSealerKey.privateKey, claim);
  t.ok((await labelsAt(rogue, 'bob@spfonly.test')).includes('unauthenticated'), 'a valid chain by another sealer is not believed');

  const broken = (await arcSealed(message('bob@spfonly.test', 'arc broken'), SEALER, sealerKey.privateKey, claim)).replace('Body of arc broken', 'Body changed after sealing');
  t.ok((await labelsAt(broken, 'bob@spfonly.test')).includes('unauthenticated'), 'a chain that no longer validates is not believed');

  const plainHeader = `Authentication-Results: mx.${SEALER}; spf=pass smtp.mailfrom=bob@spfonly.test; dmarc=pass header.from=spfonly.test\r\n` + message('bob@spfonly.test', 'plain AR');
  t.ok((await labelsAt(plainHeader, 'bob@spfonly.test')).includes('unauthenticated'), 'an Authentication-Results header the sender wrote is ignored');

  const fakeSeal = await arcSealed(message('bob@spfonly.test', 'arc fake key'), SEALER, rogueSealerKey.privateKey, claim);
  t.ok((await labelsAt(fakeSeal, 'bob@spfonly.test')).includes('unauthenticated'), 'the trusted sealer\'s name with another key fails');
});
