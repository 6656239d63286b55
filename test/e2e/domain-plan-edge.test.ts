/**
 * The domain plan for real set-ups (issue 33 §4, docs/domains.md): a real `svc edge` started with
 * --hostname and --public-ip, paired over http://127.0.0.1 (as through an SSH tunnel), tells the
 * home what it is; the plan's MX is its host name, its A the public address (never 127.0.0.1),
 * the PTR of that address is checked forward-confirmed against a real Knot server holding the
 * zone and its reverse zone, and the domain verifies end to end. A smart host's SPF mechanism,
 * on the edge or the home, goes into the SPF record.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { api, startSvc, tempDir } from '../helpers/svc.js';
import { dnsServersMissing, startKnot } from '../helpers/dns-servers.js';
import { startEdgeProcess, type EdgeProcess } from '../helpers/edge.js';
import { until } from '../helpers/until.js';
import { checkRecords } from '../../src/domains/checks.js';

interface PlanRecord { type: string; name: string; value: string; priority?: number }
interface Plan { domain: string; steps: string[]; records: PlanRecord[]; warnings: string[] }
type DomainRecord = PlanRecord & { status: string; state: string; reason?: string };
interface Domain { domain_id: string; status: string; state: string; reason: string | null; records: DomainRecord[]; extra_records: DomainRecord[] }

const missing = dnsServersMissing();
if (missing) t.fail(missing);
else {
  const knot = await startKnot({
    zone: 'plan.test',
    keyName: 'svc-update',
    records: ['mx A 203.0.113.9'],
    extraZones: [{ zone: '113.0.203.in-addr.arpa', records: ['9 PTR mx.plan.test.', '10 PTR elsewhere.example.', '11 PTR mx.plan.test.'] }],
  });
  const svc = await startSvc({ args: ['--dns', knot.server] });
  const edges: EdgeProcess[] = [];
  t.teardown(async () => {
    for (const e of edges) if (e.proc.exitCode === null) e.proc.kill('SIGTERM');
    await Promise.all(edges.map((e) => e.exited));
    await svc.stop();
    await knot.stop();
  });
  const owner = <T = Record<string, unknown>>(method: string, p: string, body?: unknown) => api<T>(svc.url, method, p, { token: svc.ownerToken, body });
  const edge = async (args: string[]) => {
    const e = await startEdgeProcess(['--data', path.join(tempDir('svc-plan-edge-'), 'edge'), '--smtp-port', '0', '--api-port', '0', '--dns', knot.server, ...args]);
    edges.push(e);
    const put = await owner('PUT', '/v0/owner/transport', { edge: { url: e.ready.api.url, token: fs.readFileSync(e.ready.token_file, 'utf8').trim() } });
    if (put.status !== 200) throw new Error(put.text);
    return e;
  };
  const planWhere = (id: string, ok: (p: Plan) => boolean) =>
    until('the plan from the edge\u2019s report', async () => {
      const p = (await owner<Plan>('GET', `/v0/domains/${id}/plan`)).body;
      return ok(p) ? p : undefined;
    }, 30_000);

  const first = await edge(['--hostname', 'mx.plan.test', '--public-ip', '203.0.113.9']);
  const d = (await owner<Domain>('POST', '/v0/domains', { domain: 'agents.plan.test' })).body;

  t.test('an edge paired over 127.0.0.1 with --hostname: MX is its host name, A its public address, never 127.0.0.1', async (t) => {
    t.match(first.ready.api.url, /^http:\/\/127\.0\.0\.1:/, 'paired over loopback, as through an SSH tunnel');
    const plan = await planWhere(d.domain_id, (p) => p.records[0]?.value === 'mx.plan.test');
    t.same(plan.records[0], { type: 'MX', name: 'agents.plan.test', value: 'mx.plan.test', priority: 10 });
    t.same(plan.records.filter((r) => r.type === 'A' || r.type === 'AAAA'), [{ type: 'A', name: 'mx.plan.test', value: '203.0.113.9' }]);
    t.notOk(plan.records.some((r) => /^127\.|^::1$/.test(r.value)), 'no loopback address anywhere');
    t.same(plan.records.find((r) => r.type === 'PTR'), { type: 'PTR', name: '9.113.0.203.in-addr.arpa', value: 'mx.plan.test' });
    t.equal(plan.records.find((r) => r.type === 'TXT' && r.name === 'agents.plan.test')?.value, 'v=spf1 mx -all');
    t.ok(plan.records.some((r) => r.name === '_mta-sts.agents.plan.test'), 'a reachable edge gets MTA-STS');
    t.notMatch(plan.warnings.join('\n'), /public port 25|loopback/, 'no loopback warning');
    t.match(plan.steps.join('\n'), /set the reverse DNS \(PTR\) of 203\.0\.113\.9 to mx\.plan\.test/);
    t.notOk(plan.steps.some((s) => /\/v0\//.test(s)), 'the steps name svc commands, not HTTP routes');
    const zone = (await api(svc.url, 'GET', `/v0/domains/${d.domain_id}/zone-file`, { token: svc.ownerToken })).text;
    t.match(zone, /^; ptr: not part of this zone; set at your VPS provider: 9\.113\.0\.203\.in-addr\.arpa\. PTR mx\.plan\.test\.$/m);
    t.notMatch(zone, /^\S+\tIN\tPTR/m, 'no PTR line in the domain\u2019s zone');
  });

  t.test('published through the DNS provider, the records (the PTR forward-confirmed) are valid and the domain verifies', async (t) => {
    const put = await owner('PUT', '/v0/owner/dns-provider', { kind: 'rfc2136', server: '127.0.0.1', port: knot.port, key_name: 'svc-update', algorithm: 'hmac-sha256', secret: knot.secret, zones: ['plan.test'] });
    t.equal(put.status, 200, put.text);
    t.equal((await owner('POST', `/v0/domains/${d.domain_id}/apply`)).status, 202);
    const done = await until('verified or failed', async () => {
      const r = (await owner<Domain>('GET', `/v0/domains/${d.domain_id}`)).body;
      return ['verified', 'failed'].includes(r.state) ? r : undefined;
    }, 60_000);
    t.equal(done.state, 'verified', done.reason ?? '');
    t.equal(done.status, 'VERIFIED');
    t.match(done.extra_records.find((r) => r.type === 'PTR'), { state: 'valid', status: 'VALID', value: 'mx.plan.test' });
    t.match(done.extra_records.find((r) => r.type === 'A'), { state: 'valid', name: 'mx.plan.test', value: '203.0.113.9' });
    t.same([...new Set(done.records.map((r) => r.type))].sort(), ['MX', 'TXT'], 'records holds only the types the SDK names; A and PTR are extra_records');
    t.same(knot.dig('mx.plan.test', 'A'), ['203.0.113.9'], 'the A already there is not added twice');
    // svc doctor (docs/doctor.md) looks the same plan up again, PTR and A included, and passes it with the self-test.
    const report = (await owner<{ checks: { id: string; status: string; detail: string }[] }>('GET', '/v0/owner/doctor')).body;
    t.match(report.checks.find((c) => c.id === 'domain:agents.plan.test'), { status: 'pass', detail: /planned records \(MX, A, TXT, PTR\) are published as planned/ });
    t.match(report.checks.find((c) => c.id === 'selftest:agents.plan.test'), { status: 'pass' });
  });

  t.test('a wrong, missing or unconfirmed PTR is invalid with the fix: set it at the VPS provider', async (t) => {
    const ptr = (ip: string) => ({ type: 'PTR' as const, name: `${ip.split('.').reverse().join('.')}.in-addr.arpa`, value: 'mx.plan.test', purpose: 'ptr' as const, address: ip });
    const [wrong, absent, unconfirmed] = await checkRecords([ptr('203.0.113.10'), ptr('203.0.113.12'), ptr('203.0.113.11')], [knot.server]);
    t.match(wrong, { status: 'invalid', reason: /reverse DNS of 203\.0\.113\.10 is elsewhere\.example, not mx\.plan\.test: set the reverse DNS \(PTR\) of 203\.0\.113\.10 to mx\.plan\.test at your VPS provider/ });
    t.match(absent, { status: 'invalid', reason: /203\.0\.113\.12 has no reverse DNS: set the reverse DNS \(PTR\)/ });
    t.match(unconfirmed, { status: 'invalid', reason: /mx\.plan\.test does not resolve back to 203\.0\.113\.11 \(203\.0\.113\.9\)/ });
  });

  t.test('a smart host on the edge names its provider\u2019s SPF mechanism; the home\u2019s own smart host wins when set', async (t) => {
    await edge(['--hostname', 'mx.plan.test', '--public-ip', '203.0.113.9', '--smart-host', '127.0.0.1:2', '--smart-host-spf', 'include:AmazonSES.com']);
    const plan = await planWhere(d.domain_id, (p) => p.records.some((r) => r.value.includes('include:')));
    t.equal(plan.records.find((r) => r.type === 'TXT' && r.name === 'agents.plan.test')?.value, 'v=spf1 mx include:amazonses.com -all');
    t.notOk(plan.records.some((r) => r.type === 'PTR'), 'mail leaves through the smart host: the edge\u2019s PTR does not matter');
    t.notMatch(plan.warnings.join('\n'), /~all/);
    const put = await owner('PUT', '/v0/owner/transport', { smtp: { host: 'smtp.relay.test', port: 587, spf_include: 'ip4:198.51.100.0/24' } });
    t.equal(put.status, 200, put.text);
    t.match(put.body, { smtp: { spf_include: 'ip4:198.51.100.0/24' } });
    const home = (await owner<Plan>('GET', `/v0/domains/${d.domain_id}/plan`)).body;
    t.equal(home.records.find((r) => r.type === 'TXT' && r.name === 'agents.plan.test')?.value, 'v=spf1 mx ip4:198.51.100.0/24 -all');
    const none = await owner('PUT', '/v0/owner/transport', { smtp: { host: 'smtp.relay.test', port: 587 } });
    t.equal(none.status, 200);
    const soft = (await owner<Plan>('GET', `/v0/domains/${d.domain_id}/plan`)).body;
    t.equal(soft.records.find((r) => r.type === 'TXT' && r.name === 'agents.plan.test')?.value, 'v=spf1 mx ~all');
    t.match(soft.warnings.join('\n'), /svc transport set --smtp-host … --smtp-spf include:<provider>/);
    await owner('PUT', '/v0/owner/transport', { smtp: null });
  });

  t.test('an edge without a public name or address (loopback only): no A record at all, the local-testing warning', async (t) => {
    await edge(['--hostname', 'localhost']);
    const plan = await planWhere(d.domain_id, (p) => p.records[0]?.value === 'mx.agents.plan.test');
    t.notOk(plan.records.some((r) => r.type === 'A' || r.type === 'AAAA' || r.type === 'PTR'), 'no address records');
    t.match(plan.warnings.join('\n'), /not a public DNS name|no public name or address/);
  });
}
