/**
 * The Cloudflare DNS provider (docs/dns-providers.md), end to end with a real svc against a local
 * server that holds every request to Cloudflare's published OpenAPI schema and answers from it
 * (test/helpers/cloudflare-api.ts). Its records are mirrored into a loopback DNS server that svc's
 * domain checks ask, so apply → published → checks → self-test → `verified` runs as it would with
 * Cloudflare. Apply publishes exactly the missing planned records, never twice; the owner's own
 * records (another MX, a TXT) stay through apply and teardown; teardown removes exactly svc's.
 */
import t from 'tap';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startCloudflareApi, type FakeCloudflare } from '../helpers/cloudflare-api.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { until } from '../helpers/until.js';
import { svcCli } from './cli-run.js';

type DomainRecord = { type: string; name: string; value: string; state: string; reason?: string };
/** svc's own lifecycle is `state` (`status` speaks the AgentMail SDK's enums); A/AAAA/PTR are in `extra_records`. */
interface Domain { domain_id: string; domain: string; state: string; reason: string | null; records: DomainRecord[]; extra_records: DomainRecord[] }

const owner = <T = Record<string, unknown>>(svc: RunningSvc, method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token: svc.ownerToken, body });

async function domainIn(svc: RunningSvc, id: string, statuses: string[], timeout = 30_000): Promise<Domain> {
  let last: Domain | undefined;
  try {
    return await until(`status ${statuses.join('/')}`, async () => {
      last = (await owner<Domain>(svc, 'GET', `/v0/domains/${id}`)).body;
      return statuses.includes(last.state) ? last : undefined;
    }, timeout);
  } catch (err) {
    throw new Error(`${(err as Error).message}; last: ${JSON.stringify(last)}`);
  }
}

async function register(svc: RunningSvc, domain: string): Promise<Domain> {
  const res = await owner<Domain>(svc, 'POST', '/v0/domains', { domain });
  if (res.status !== 200) throw new Error(`register: ${res.status} ${res.text}`);
  return res.body;
}

/** Every record in the fake as `TYPE name [prio] content`, sorted. */
const snapshot = (cf: FakeCloudflare) => cf.records.map((r) => `${r.type} ${r.name} ${r.priority !== undefined ? `${r.priority} ` : ''}${r.content}`).sort();

t.test('configured through the CLI, zone looked up by name: apply publishes exactly the plan, verified; re-apply adds nothing; teardown removes exactly svc\'s records', async (t) => {
  const dns = await startLoopbackDns({});
  const cf = await startCloudflareApi({ zones: ['cf.test'], dns: dns.zone });
  const ownersTxt = cf.seed('cf.test', { name: 'cf.test', type: 'TXT', content: '"google-site-verification=abc"' });
  const ownersA = cf.seed('cf.test', { name: 'www.cf.test', type: 'A', content: '192.0.2.80' });
  const svc = await startSvc({ args: ['--local-edge', '--dns', dns.server, '--edge-dns', dns.server] });
  t.teardown(async () => {
    await svc.stop();
    await cf.close();
    await dns.close();
  });

  const set = await svcCli(['domains', 'provider-set', '--kind', 'cloudflare', '--api-token-file', '-', '--api-base', cf.apiBase, '--home', svc.home], { input: `${cf.token}\n` });
  t.equal(set.code, 0, set.stderr);
  t.match(set.stdout, /Cloudflare DNS API/);
  t.match(set.stdout, /looked up by the zone's name/);
  t.notMatch(set.stdout, cf.token);
  const got = await owner(svc, 'GET', '/v0/owner/dns-provider');
  t.same(got.body, { configured: true, provider: { kind: 'cloudflare', zone_id: null, api_base: cf.apiBase, api_token_set: true, zones: [], ttl: 3600 } });

  const d = await register(svc, 'cf.test');
  t.equal((await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`)).status, 202);
  const verified = await domainIn(svc, d.domain_id, ['verified', 'failed']);
  t.equal(verified.state, 'verified', verified.reason ?? '');
  t.ok([...verified.records, ...verified.extra_records].every((r) => r.state === 'valid'), 'every record valid, checked against the DNS the fake\'s records are served from');
  t.ok(cf.requests.includes('GET /client/v4/zones'), 'the zone was looked up by name');

  // Exactly the planned records that were missing, each once, with Cloudflare's content forms.
  const planned = [...verified.records, ...verified.extra_records].filter((r) => r.type !== 'PTR');
  const added = cf.records.filter((r) => r.id !== ownersTxt.id && r.id !== ownersA.id);
  t.equal(added.length, planned.length, 'one record per planned record');
  for (const p of planned) t.ok(added.some((r) => r.type === p.type && r.name === p.name), `${p.type} ${p.name} published`);
  t.same(cf.contents('cf.test', 'MX'), ['10 mx.cf.test']);
  t.same(cf.contents('cf.test', 'TXT').sort(), ['"google-site-verification=abc"', '"v=spf1 mx -all"']);
  t.same(cf.contents('_dmarc.cf.test', 'TXT'), ['"v=DMARC1; p=quarantine; adkim=r; aspf=r"']);
  const dkim = planned.find((r) => r.name.includes('._domainkey.'))!;
  const dkimContent = cf.contents(dkim.name, 'TXT')[0];
  t.match(dkimContent, /^"v=DKIM1; k=rsa; p=[^"]*"( "[^"]*")+$/, 'a long TXT goes as quoted strings of at most 255 bytes');
  t.ok(dkimContent.match(/"[^"]*"/g)!.every((s) => s.length - 2 <= 255));
  t.ok(added.every((r) => r.ttl === 3600 && r.comment === 'published by svc'));

  const before = snapshot(cf);
  t.equal((await owner<Domain>(svc, 'POST', `/v0/domains/${d.domain_id}/apply`)).body.state, 'verified');
  // A re-apply after a failure (the plan published, the domain not verified) is in the next test.
  t.same(snapshot(cf), before, 'apply twice: no duplicates');

  await owner(svc, 'POST', `/v0/domains/${d.domain_id}/teardown`);
  await domainIn(svc, d.domain_id, ['torn_down']);
  t.same(snapshot(cf), [`A www.cf.test 192.0.2.80`, `TXT cf.test "google-site-verification=abc"`], 'only the owner\'s records are left');
  t.same(cf.violations, [], 'every request and answer validated against Cloudflare\'s schema');
});

t.test('zone_id given, owner\'s other MX and TXT at the same names: untouched by apply, re-apply and teardown', async (t) => {
  const dns = await startLoopbackDns({});
  const cf = await startCloudflareApi({ zones: ['example.test', 'other.test'], dns: dns.zone });
  const zone = cf.zones[0];
  cf.seed('example.test', { name: 'mail.example.test', type: 'MX', content: 'mx.elsewhere.example', priority: 20 });
  cf.seed('example.test', { name: 'mail.example.test', type: 'TXT', content: 'owner-note=unquoted' });
  cf.seed('example.test', { name: '_dmarc.mail.example.test', type: 'TXT', content: '"owner-dmarc-like=1"' });
  const svc = await startSvc({ args: ['--local-edge', '--dns', dns.server, '--edge-dns', dns.server] });
  t.teardown(async () => {
    await svc.stop();
    await cf.close();
    await dns.close();
  });
  const put = await owner(svc, 'PUT', '/v0/owner/dns-provider', { kind: 'cloudflare', api_token: cf.token, zone_id: zone.id, api_base: cf.apiBase, zones: ['example.test'], ttl: 300 });
  t.equal(put.status, 200, put.text);
  t.match(put.body, { provider: { kind: 'cloudflare', zone_id: zone.id, api_token_set: true, zones: ['example.test'], ttl: 300 } });

  const d = await register(svc, 'mail.example.test');
  await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`);
  const failed = await domainIn(svc, d.domain_id, ['failed', 'verified']);
  t.equal(failed.state, 'failed', 'the owner\'s other MX makes the check fail');
  t.match(failed.records.find((r) => r.type === 'MX')!.reason, /mx\.elsewhere\.example/);
  t.notOk(cf.requests.includes('GET /client/v4/zones'), 'with zone_id no lookup by name');
  t.same(cf.contents('mail.example.test', 'MX').sort(), ['10 mx.mail.example.test', '20 mx.elsewhere.example']);
  t.same(cf.contents('mail.example.test', 'TXT').sort(), ['"v=spf1 mx -all"', 'owner-note=unquoted']);

  const before = snapshot(cf);
  await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`);
  t.equal((await domainIn(svc, d.domain_id, ['failed', 'verified'])).state, 'failed');
  t.same(snapshot(cf), before, 'a re-apply after the failure adds nothing');

  await owner(svc, 'POST', `/v0/domains/${d.domain_id}/teardown`);
  await domainIn(svc, d.domain_id, ['torn_down']);
  t.same(snapshot(cf), ['MX mail.example.test 20 mx.elsewhere.example', 'TXT _dmarc.mail.example.test "owner-dmarc-like=1"', 'TXT mail.example.test owner-note=unquoted'], 'exactly svc\'s records are gone');
  t.same(cf.violations, []);
});

t.test('a wrong token: the domain says the token needs Zone:DNS:Edit, nothing is published; the right token fixes it on the next pass', async (t) => {
  const dns = await startLoopbackDns({});
  const cf = await startCloudflareApi({ zones: ['tok.test'], dns: dns.zone });
  const svc = await startSvc({ args: ['--local-edge', '--dns', dns.server, '--edge-dns', dns.server] });
  t.teardown(async () => {
    await svc.stop();
    await cf.close();
    await dns.close();
  });
  const wrong = `wrong-${cf.token.slice(6)}`;
  await owner(svc, 'PUT', '/v0/owner/dns-provider', { kind: 'cloudflare', api_token: wrong, api_base: cf.apiBase });
  const d = await register(svc, 'tok.test');
  await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`);
  const stuck = await until('a reason about the token', async () => {
    const res = await owner<Domain>(svc, 'GET', `/v0/domains/${d.domain_id}`);
    return res.body.reason?.includes('token') ? res.body : undefined;
  });
  t.equal(stuck.state, 'provisioning', 'it stays provisioning and is retried');
  t.match(stuck.reason, /the token needs Zone:DNS:Edit for the zone/);
  t.match(stuck.reason, /Cloudflare says: 10000 Authentication error/);
  t.notMatch(stuck.reason, wrong);
  t.same(cf.records, [], 'nothing was published');

  // The domain not in the account: a clear "no zone" reason.
  await owner(svc, 'PUT', '/v0/owner/dns-provider', { kind: 'cloudflare', api_token: cf.token, api_base: cf.apiBase, zones: ['absent.test'] });
  const d2 = await register(svc, 'sub.absent.test');
  await owner(svc, 'POST', `/v0/domains/${d2.domain_id}/apply`);
  const noZone = await until('a reason about the zone', async () => {
    const res = await owner<Domain>(svc, 'GET', `/v0/domains/${d2.domain_id}`);
    return res.body.reason?.includes('no zone') ? res.body : undefined;
  });
  t.match(noZone.reason, /no zone absent\.test is visible to this API token/);

  await owner(svc, 'PUT', '/v0/owner/dns-provider', { kind: 'cloudflare', api_token: cf.token, api_base: cf.apiBase });
  const verified = await domainIn(svc, d.domain_id, ['verified', 'failed']);
  t.equal(verified.state, 'verified', verified.reason ?? '');
  t.same(cf.contents('tok.test', 'MX'), ['10 mx.tok.test']);
  for (const text of [svc.stderr(), JSON.stringify(svc.stdoutLines)]) {
    t.notMatch(text, cf.token);
    t.notMatch(text, wrong);
  }
  t.same(cf.violations, []);
});
