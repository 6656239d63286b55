/**
 * A home on a Cloudflare Worker edge with its own Cloudflare DNS provider keeps Email Routing
 * itself (docs/edge.md, "Routing kept by the home"): for a domain on Cloudflare it enables Email
 * Routing — which writes Cloudflare's MX and SPF records into the zone — and sends each inbox's
 * address to the Worker, including inboxes made later, with no `svc edge cloudflare deploy`. The
 * Worker runs in workerd (`svc edge cloudflare dev`); Cloudflare's API is the local stand-in that
 * validates every request against the published schema and serves its zone over loopback DNS.
 */
import t from 'tap';
import path from 'node:path';
import { api, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { NO_CLOUDFLARE_CALLS, startCloudflareDev, type CloudflareDev } from '../helpers/cloudflare-edge.js';
import { startCloudflareApi, type FakeCloudflare } from '../helpers/cloudflare-api.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { until } from '../helpers/until.js';

const DOMAIN = 'routing.test';
/** The name `svc edge cloudflare dev` reports, as `init` names a Worker by default. */
const WORKER = 'svc-edge';

let dns: LoopbackDns;
let cf: FakeCloudflare;
let edge: CloudflareDev;
let svc: RunningSvc;

const owner = <T = Record<string, unknown>>(method: string, p: string, body?: unknown) => api<T>(svc.url, method, p, { token: svc.ownerToken, body });
type Rule = { matchers: { type: string; field?: string; value?: string }[]; actions: { type: string; value?: string[] }[] };
/** The addresses with a rule sending them to the Worker. */
const routedToWorker = () =>
  cf
    .emailRouting(DOMAIN)
    .rules.filter((r: Rule) => r.actions.some((a) => a.type === 'worker' && a.value?.includes(WORKER)))
    .flatMap((r: Rule) => r.matchers.map((m) => m.value ?? ''))
    .sort();

/** Provisioning passes this far apart instead of 10 s (SVC_TEST_PROVISIONING_MS, docs/testing.md). */
const PASS_MS = 1_000;

t.before(async () => {
  dns = await startLoopbackDns({});
  cf = await startCloudflareApi({ zones: [DOMAIN], dns: dns.zone });
  edge = await startCloudflareDev(path.join(tempDir('svc-cf-routing-'), 'edge'));
  svc = await startSvc({ env: { ...NO_CLOUDFLARE_CALLS, SVC_TEST_PROVISIONING_MS: String(PASS_MS) }, args: ['--dns', dns.server] });
  const provider = await owner('PUT', '/v0/owner/dns-provider', { kind: 'cloudflare', api_token: cf.token, api_base: cf.apiBase, zones: [DOMAIN] });
  if (provider.status !== 200) throw new Error(provider.text);
  const paired = await owner('PUT', '/v0/owner/transport', { edge: { url: edge.url, token: edge.token } });
  if (paired.status !== 200) throw new Error(paired.text);
});
t.teardown(async () => {
  await svc?.stop();
  edge?.process.proc.kill('SIGTERM');
  await edge?.process.exited;
  await cf?.close();
  await dns?.close();
});

t.test('a new domain and inbox: Email Routing enabled with Cloudflare\u2019s MX, and the address routed to the Worker', async (t) => {
  const inbox = (await owner<{ inbox_id: string }>('POST', '/v0/inboxes', { username: 'first', domain: DOMAIN })).body.inbox_id;
  const domain = (await owner<{ domain_id: string }>('POST', '/v0/domains', { domain: DOMAIN })).body;
  t.equal((await owner('POST', `/v0/domains/${domain.domain_id}/apply`)).status, 202, 'applied: svc sets up its DNS');
  await until('both addresses routed to the Worker', () => routedToWorker().length === 2);
  t.ok(cf.emailRouting(DOMAIN).enabled, 'Email Routing is enabled on the zone');
  t.same(routedToWorker(), [inbox, `svc-selftest@${DOMAIN}`].sort(), 'the inbox and the domain\u2019s self-test address, nothing else');
  t.same(cf.contents(DOMAIN, 'MX').sort(), ['13 route1.mx.cloudflare.net', '24 route3.mx.cloudflare.net', '86 route2.mx.cloudflare.net'], 'the MX records are Cloudflare\u2019s own, written by its enable call');
  t.equal(cf.records.filter((r) => r.name === DOMAIN && r.type === 'TXT' && r.content.includes('v=spf1')).length, 1, 'one SPF record: svc adds none beside Cloudflare\u2019s');

  // The DNS checks read the zone the fake serves: Cloudflare's MX and SPF are what the plan wants.
  type Domain = { state: string; records: { type: string; value: string; state: string; reason?: string }[] };
  const checked = await until('the MX and SPF checks', async () => {
    const d = (await owner<Domain>('GET', `/v0/domains/${domain.domain_id}`)).body;
    const wanted = d.records.filter((r) => r.type === 'MX' || r.value.startsWith('v=spf1'));
    return wanted.length === 4 && wanted.every((r) => r.state !== 'pending') ? wanted : undefined;
  }, 60_000).catch(async (err) => {
    const d = (await owner('GET', `/v0/domains/${domain.domain_id}`)).body;
    throw new Error(`${(err as Error).message}: ${JSON.stringify(d)} ${JSON.stringify(cf.records.map((r) => [r.type, r.name, r.content]))}`);
  });
  for (const r of checked) t.equal(r.state, 'valid', `${r.type} ${r.value}: ${r.reason ?? ''}`);
  t.same(cf.contents(DOMAIN, 'TXT'), ['"v=spf1 include:_spf.mx.cloudflare.net ~all"'], 'after publishing too: Cloudflare’s SPF record alone, svc added no second one');
  t.equal(cf.contents(`_dmarc.${DOMAIN}`, 'TXT').length, 1, 'svc published the rest of the plan (DMARC) through the same provider');
});

t.test('an inbox made later is routed by the home, with no deploy', async (t) => {
  const later = (await owner<{ inbox_id: string }>('POST', '/v0/inboxes', { username: 'later', domain: DOMAIN })).body.inbox_id;
  await until('the new address routed', () => routedToWorker().includes(later));
  t.equal(routedToWorker().filter((a) => a === later).length, 1, 'one rule for it');
  const rules = cf.emailRouting(DOMAIN).rules.length;
  await new Promise((r) => setTimeout(r, 3 * PASS_MS)); // three passes of the loop
  t.equal(cf.emailRouting(DOMAIN).rules.length, rules, 'nothing is added again while the addresses stay the same');
});

t.test('every request validated against Cloudflare\u2019s schema; the token is never in the home\u2019s output', async (t) => {
  t.same(cf.violations, []);
  t.ok(cf.requests.some((r) => r.endsWith('/email/routing/enable')), 'the enable call was made');
  t.notOk(svc.stderr().includes(cf.token) || JSON.stringify(svc.stdoutLines).includes(cf.token), 'the API token is in no log line');
});
