/**
 * Domain verification end to end (docs/domains.md): `svc serve --local-edge` with a loopback DNS
 * server serving the planned records. Apply → the edge routes the domain → DNS checks → the
 * self-test goes out through the edge relay and back in through the edge buffer → `verified` and
 * `domain.verified` on the WebSocket, with nothing stored as mail. Misconfigured records fail
 * with reasons that say what to fix; fixing and verifying again succeeds. Teardown, then delete.
 */
import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import * as serialization from 'agentmail/serialization';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns, type LoopbackDns, type Zone } from '../helpers/dns.js';
import { subscribe, type EventStream } from '../helpers/events.js';
import { until } from '../helpers/until.js';

interface DomainRecord { type: string; name: string; value: string; priority?: number; status: string; state: string; reason?: string }
interface Domain { domain_id: string; domain: string; status: string; state: string; reason: string | null; records: DomainRecord[]; verified_at: string | null; selftest: { status: string } }
interface Plan { domain: string; steps: string[]; records: Omit<DomainRecord, 'status' | 'state'>[]; warnings: string[] }

let dns: LoopbackDns;
let svc: RunningSvc;
let events: EventStream;

t.before(async () => {
  dns = await startLoopbackDns({});
  svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  events = await subscribe(svc.url, svc.ownerToken);
});
t.teardown(async () => {
  events.close();
  await svc.stop();
  await dns.close();
});

const owner = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token: svc.ownerToken, body });

async function domainIn(id: string, statuses: string[]): Promise<Domain> {
  let last = '';
  return until(`status ${statuses.join('/')} (last ${last})`, async () => {
    const res = await owner<Domain>('GET', `/v0/domains/${id}`);
    last = res.body.state;
    return statuses.includes(res.body.state) ? res.body : undefined;
  });
}

/** Publishes plan records in the loopback zone (replacing what the names had). */
function publish(records: Omit<DomainRecord, 'status' | 'state'>[]): void {
  const zone: Zone = dns.zone;
  for (const r of records) delete zone[r.name];
  for (const r of records) {
    const entry = (zone[r.name] ??= {});
    if (r.type === 'MX') (entry.MX ??= []).push({ exchange: r.value, priority: r.priority ?? 10 });
    if (r.type === 'A') (entry.A ??= []).push(r.value);
    if (r.type === 'TXT') (entry.TXT ??= []).push(r.value);
  }
}

async function registerAndPlan(domain: string): Promise<{ d: Domain; plan: Plan }> {
  const res = await owner<Domain>('POST', '/v0/domains', { domain });
  if (res.status !== 200) throw new Error(`register: ${res.status} ${res.text}`);
  const plan = await owner<Plan>('GET', `/v0/domains/${res.body.domain_id}/plan`);
  return { d: res.body, plan: plan.body };
}

t.test('plan with the local edge: MX to mx.<domain>, never an A record to loopback, and a loopback warning', async (t) => {
  const { plan } = await registerAndPlan('look.example.com');
  t.same(plan.records[0], { type: 'MX', name: 'look.example.com', value: 'mx.look.example.com', priority: 10 });
  t.notOk(plan.records.some((r) => r.type === 'A' || r.type === 'AAAA' || r.type === 'PTR'), 'a loopback address never goes into DNS');
  t.match(plan.warnings.join('\n'), /loopback/);
  t.notMatch(plan.warnings.join('\n'), /No transport/);
});

t.test('correct records: apply → verifying → self-test round trip → verified with domain.verified', async (t) => {
  const { d, plan } = await registerAndPlan('good.example.com');
  publish(plan.records);
  const applied = await owner<Domain>('POST', `/v0/domains/${d.domain_id}/apply`);
  t.equal(applied.status, 202);
  t.equal(applied.body.state, 'provisioning');

  const event = await events.next('domain.verified', (e) => (e.domain as { domain_id: string }).domain_id === d.domain_id, 30_000);
  const payload = event.domain as Record<string, unknown>;
  t.match(payload, { domain: 'good.example.com', domain_id: d.domain_id, status: 'VERIFIED', state: 'verified', selftest: { status: 'received' } });
  t.ok(typeof payload.timestamp === 'string', 'when it was verified');
  // The frame is the SDK's DomainVerifiedEvent, its domain the SDK's Domain (strict: validation on).
  const parsed = serialization.DomainVerifiedEvent.parse(event, { unrecognizedObjectKeys: 'passthrough', allowUnrecognizedUnionMembers: false, allowUnrecognizedEnumValues: false, skipValidation: false, breadcrumbsPrefix: [] });
  t.same(parsed.ok ? [] : parsed.errors.map((e) => `${e.path.join('.')}: ${e.message}`), [], "domain.verified parses as the SDK's DomainVerifiedEvent");
  t.same((payload.records as { status: string }[]).map((r) => r.status), (payload.records as unknown[]).map(() => 'VALID'), 'with every record as it was checked');

  const verified = await domainIn(d.domain_id, ['verified']);
  t.equal(verified.reason, null);
  t.ok(verified.verified_at);
  t.equal(verified.selftest.status, 'received');
  t.ok(verified.records.every((r) => r.state === 'valid' && r.status === 'VALID'), 'every record valid');
  t.equal(verified.status, 'VERIFIED', "the SDK's word for it");
  t.ok(dns.queries.includes('MX good.example.com') && dns.queries.includes('TXT _dmarc.good.example.com'), 'the home asked the configured DNS server');
  t.equal(events.all('message.received').length, 0, 'the self-test is not stored as mail');
  const again = await owner<Domain>('POST', `/v0/domains/${d.domain_id}/apply`);
  t.equal(again.body.state, 'verified', 'apply on a verified domain changes nothing');
});

t.test('wrong MX, missing DMARC, wrong DKIM key → failed with reasons; fixed and verified again', async (t) => {
  const { d, plan } = await registerAndPlan('bad.example.com');
  const otherKey = (generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64');
  publish(
    plan.records
      .filter((r) => !r.name.startsWith('_dmarc.'))
      .map((r) => (r.type === 'MX' ? { ...r, value: 'mx.other.net' } : r.name.includes('._domainkey.') ? { ...r, value: `v=DKIM1; k=rsa; p=${otherKey}` } : r)),
  );
  await owner('POST', `/v0/domains/${d.domain_id}/apply`);
  const failed = await domainIn(d.domain_id, ['failed']);
  const byName = (prefix: string, type: string) => failed.records.find((r) => r.type === type && r.name.startsWith(prefix))!;
  t.equal(failed.status, 'INVALID', 'failed on its records: the SDK reads INVALID');
  t.match(byName('bad.example.com', 'MX'), { state: 'invalid', status: 'INVALID', reason: /MX at bad\.example\.com points at mx\.other\.net, expected mx\.bad\.example\.com/ });
  t.match(byName('_dmarc.', 'TXT'), { state: 'invalid', status: 'MISSING', reason: /TXT at _dmarc\.bad\.example\.com is missing/ });
  t.match(byName(plan.records.find((r) => r.name.includes('._domainkey.'))!.name, 'TXT'), { state: 'invalid', status: 'INVALID', reason: /different DKIM key/ });
  t.match(byName('bad.example.com', 'TXT'), { state: 'valid', status: 'VALID' }, 'SPF is right');
  t.match(failed.reason, /3 of 4 DNS records are not right yet/);
  t.match(failed.reason, /svc domains verify bad\.example\.com/);

  publish(plan.records);
  const verify = await owner<Domain>('POST', `/v0/domains/${d.domain_id}/verify`);
  t.equal(verify.status, 202);
  t.equal(verify.body.state, 'verifying');
  t.ok(verify.body.records.every((r) => r.state === 'pending'), 'a new check starts from pending');
  await events.next('domain.verified', (e) => (e.domain as { domain_id: string }).domain_id === d.domain_id, 30_000);
  t.equal((await domainIn(d.domain_id, ['verified'])).selftest.status, 'received');
});

t.test('teardown: the edge stops routing the domain, torn_down, then delete; delete before is 409', async (t) => {
  const { d, plan } = await registerAndPlan('gone.example.com');
  publish(plan.records);
  await owner('POST', `/v0/domains/${d.domain_id}/apply`);
  await domainIn(d.domain_id, ['verified']);
  const early = await owner('DELETE', `/v0/domains/${d.domain_id}`);
  t.equal(early.status, 409);
  t.equal(early.body.code, 'conflict');

  const down = await owner<Domain>('POST', `/v0/domains/${d.domain_id}/teardown`);
  t.equal(down.body.state, 'tearing_down');
  await domainIn(d.domain_id, ['torn_down']);
  const res = await owner('DELETE', `/v0/domains/${d.domain_id}`);
  t.ok(res.status < 300, `deleted: ${res.status}`);
  t.equal((await owner('GET', `/v0/domains/${d.domain_id}`)).status, 404);
});
