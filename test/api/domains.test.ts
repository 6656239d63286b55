/**
 * Domains (spec §2.10, §4.12; docs/domains.md): owner-only CRUD, name validation, the plan and
 * the zone file (the DKIM record is the home's own key), and the state machine without an edge:
 * apply waits for a transport, teardown completes at once, delete only after teardown.
 */
import t from 'tap';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey } from '../helpers/seed.js';
import { until } from '../helpers/until.js';

interface DomainRecord { type: string; name: string; value: string; priority?: number; status: string; state: string; reason?: string }
interface Domain {
  domain_id: string;
  domain: string;
  status: string;
  state: string;
  reason: string | null;
  feedback_enabled: boolean;
  subdomains_enabled: boolean;
  tracking_enabled: boolean;
  records: DomainRecord[];
  extra_records: DomainRecord[];
  created_at: string;
  updated_at: string;
  verified_at: string | null;
}
interface Plan { domain: string; steps: string[]; records: Omit<DomainRecord, 'status' | 'state'>[]; warnings: string[] }

let svc: RunningSvc;
t.before(async () => {
  svc = await startSvc();
});
t.teardown(() => svc.stop());

const owner = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token: svc.ownerToken, body });

async function register(domain: string, flags: Record<string, unknown> = {}): Promise<Domain> {
  const res = await owner<Domain>('POST', '/v0/domains', { domain, ...flags });
  if (res.status !== 200) throw new Error(`register: ${res.status} ${res.text}`);
  return res.body;
}

const statusOf = async (id: string, want: string) => {
  const res = await owner<Domain>('GET', `/v0/domains/${id}`);
  return res.body.state === want ? res.body : undefined;
};

t.test('register: pending, UUIDv7 id, flags, the four records pending', async (t) => {
  const d = await register('Crud.Example.com');
  t.match(d.domain_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.match(d, { domain: 'crud.example.com', status: 'NOT_STARTED', state: 'pending', reason: null, feedback_enabled: true, subdomains_enabled: false, tracking_enabled: false, verified_at: null });
  t.same(d.records.map((r) => `${r.type} ${r.name}`).sort(), ['MX crud.example.com', 'TXT _dmarc.crud.example.com', `TXT ${d.records.find((r) => r.name.includes('_domainkey'))!.name}`, 'TXT crud.example.com'].sort());
  t.ok(d.records.every((r) => r.state === 'pending' && r.status === 'MISSING'), 'nothing checked yet');
  t.same(d.extra_records, [], 'no edge: no address records');
  const got = await owner<Domain>('GET', `/v0/domains/${d.domain_id}`);
  t.equal(got.status, 200);
  t.same(got.body.records, d.records);
});

t.test('register: IDNs become punycode; invalid names, IPs and unknown fields are 400', async (t) => {
  const idn = await register('bücher.example');
  t.equal(idn.domain, 'xn--bcher-kva.example');
  for (const bad of ['localhost', 'example', '127.0.0.1', '[::1]', 'a..b.com', '-bad.example.com', 'user@example.com', 'exa mple.com', 'example.123', `${'a'.repeat(64)}.com`]) {
    const res = await owner('POST', '/v0/domains', { domain: bad });
    t.equal(res.status, 400, `${bad} is refused`);
    t.equal(res.body.code, 'validation_error');
  }
  const unknown = await owner('POST', '/v0/domains', { domain: 'ok.example.com', color: 'blue' });
  t.equal(unknown.status, 400);
  const tracking = await owner('POST', '/v0/domains', { domain: 'track.example.com', tracking_enabled: true });
  t.equal(tracking.status, 400, 'svc never tracks, so tracking cannot be enabled');
});

t.test('register: the same domain twice (any case, trailing dot) is 409 already_exists', async (t) => {
  await register('dup.example.com');
  const again = await owner('POST', '/v0/domains', { domain: 'DUP.example.com.' });
  t.equal(again.status, 409);
  t.equal(again.body.code, 'already_exists');
});

t.test('list pages newest first; patch changes flags only', async (t) => {
  const a = await register('page-a.example.com');
  const b = await register('page-b.example.com');
  const first = await owner<{ count: number; limit: number; next_page_token?: string; domains: Domain[] }>('GET', '/v0/domains?limit=1');
  t.equal(first.status, 200);
  t.equal(first.body.domains[0].domain_id, b.domain_id);
  t.notOk('records' in first.body.domains[0], 'list items carry no records');
  const second = await owner<{ domains: Domain[] }>('GET', `/v0/domains?limit=1&page_token=${encodeURIComponent(first.body.next_page_token!)}`);
  t.equal(second.body.domains[0].domain_id, a.domain_id);

  const patched = await owner<Domain>('PATCH', `/v0/domains/${a.domain_id}`, { feedback_enabled: false, subdomains_enabled: true });
  t.equal(patched.status, 200);
  t.match(patched.body, { feedback_enabled: false, subdomains_enabled: true, domain: 'page-a.example.com' });
  const rename = await owner('PATCH', `/v0/domains/${a.domain_id}`, { domain: 'other.example.com' });
  t.equal(rename.status, 400, 'the name cannot change');
  t.equal((await owner('GET', '/v0/domains/0190aaaa-0000-7000-8000-000000000000')).status, 404);
});

t.test('owner only: an agent key gets 403 missing_permission on every domain route', async (t) => {
  const d = await register('owner-only.example.com');
  const { secret } = await createApiKey(svc, { permissions: ['inbox_read', 'inbox_create', 'message_read', 'webhook_read'] });
  const routes: [string, string][] = [
    ['GET', '/v0/domains'], ['POST', '/v0/domains'], ['GET', `/v0/domains/${d.domain_id}`], ['PATCH', `/v0/domains/${d.domain_id}`],
    ['DELETE', `/v0/domains/${d.domain_id}`], ['GET', `/v0/domains/${d.domain_id}/plan`], ['GET', `/v0/domains/${d.domain_id}/zone-file`],
    ['POST', `/v0/domains/${d.domain_id}/apply`], ['POST', `/v0/domains/${d.domain_id}/verify`], ['POST', `/v0/domains/${d.domain_id}/teardown`],
  ];
  for (const [method, path] of routes) {
    const res = await api(svc.url, method, path, { token: secret, body: method === 'GET' ? undefined : {} });
    t.equal(res.status, 403, `${method} ${path}`);
    t.equal(res.body.code, 'missing_permission');
  }
  t.equal((await api(svc.url, 'GET', '/v0/domains')).status, 401, 'no credential: 401');
});

t.test('plan: MX, SPF, the stored DKIM key, DMARC; steps in order; warns without a transport', async (t) => {
  const d = await register('plan.example.com');
  const res = await owner<Plan>('GET', `/v0/domains/${d.domain_id}/plan`);
  t.equal(res.status, 200);
  const plan = res.body;
  t.same(Object.keys(plan).sort(), ['domain', 'records', 'steps', 'warnings']);
  t.equal(plan.domain, 'plan.example.com');
  const db = openHomeDb(svc.home);
  const key = db.prepare('SELECT selector, public_key FROM dkim_keys WHERE domain = ?').get('plan.example.com') as { selector: string; public_key: string };
  db.close();
  t.ok(key, 'registering created the DKIM key');
  t.same(plan.records, [
    { type: 'MX', name: 'plan.example.com', value: 'mx.plan.example.com', priority: 10 },
    { type: 'TXT', name: 'plan.example.com', value: 'v=spf1 mx -all' },
    { type: 'TXT', name: `${key.selector}._domainkey.plan.example.com`, value: `v=DKIM1; k=rsa; p=${key.public_key}` },
    { type: 'TXT', name: '_dmarc.plan.example.com', value: 'v=DMARC1; p=quarantine; adkim=r; aspf=r' },
  ]);
  t.match(plan.warnings.join('\n'), /No transport is configured/);
  t.match(plan.steps[0], /`svc transport set --edge-url URL --edge-token-file FILE`/, 'first: pair an edge');
  t.notOk(plan.steps.some((s) => /\/v0\//.test(s)), 'every step names a svc command, not an HTTP route');
  t.ok(plan.steps.findIndex((s) => /svc domains apply plan\.example\.com/.test(s)) > plan.steps.findIndex((s) => /create the \d records/.test(s)), 'DNS before apply');
});

t.test('zone file: BIND text with $ORIGIN, $TTL and the DKIM key split into 255-byte strings', async (t) => {
  const d = await register('zone.example.com');
  const res = await api(svc.url, 'GET', `/v0/domains/${d.domain_id}/zone-file`, { token: svc.ownerToken });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/plain/);
  const text = res.text;
  t.match(text, /^\$ORIGIN zone\.example\.com\.$/m);
  t.match(text, /^\$TTL 3600$/m);
  t.match(text, /^@\tIN\tMX\t10 mx\.zone\.example\.com\.$/m);
  t.match(text, /^@\tIN\tTXT\t"v=spf1 mx -all"$/m);
  t.match(text, /^_dmarc\tIN\tTXT\t"v=DMARC1; p=quarantine; adkim=r; aspf=r"$/m);
  const db = openHomeDb(svc.home);
  const key = db.prepare('SELECT selector, public_key FROM dkim_keys WHERE domain = ?').get('zone.example.com') as { selector: string; public_key: string };
  db.close();
  const dkim = new RegExp(`^${key.selector}\\._domainkey\\tIN\\tTXT\\t\\( ((?:"[^"]*"\\s*)+)\\)$`, 'm').exec(text);
  t.ok(dkim, 'the DKIM record is a parenthesized list of strings');
  const strings = [...dkim![1].matchAll(/"([^"]*)"/g)].map((m) => m[1]);
  t.ok(strings.length > 1 && strings.every((s) => s.length <= 255), 'no string longer than 255');
  t.equal(strings.join(''), `v=DKIM1; k=rsa; p=${key.public_key}`, 'joined, they are the stored key');
});

t.test('state machine without an edge: apply waits for a transport; verify before apply provisions; teardown, then delete', async (t) => {
  const early = await register('early.example.com');
  const verified = await owner<Domain>('POST', `/v0/domains/${early.domain_id}/verify`);
  t.equal(verified.status, 202, 'verify before apply provisions the domain (the SDK has no apply)');
  t.match(verified.body, { state: 'provisioning', status: 'PENDING' });
  t.ok(verified.body.records.length > 0 && verified.body.records.every((r) => r.status === 'MISSING'), 'it answers the records to publish');
  t.match((await owner<Domain>('POST', `/v0/domains/${early.domain_id}/verify`)).body, { state: 'provisioning' }, 'verify again while provisioning changes nothing');

  const d = await register('states.example.com');
  const applied = await owner<Domain>('POST', `/v0/domains/${d.domain_id}/apply`);
  t.equal(applied.status, 202);
  t.equal(applied.body.state, 'provisioning');
  const again = await owner<Domain>('POST', `/v0/domains/${d.domain_id}/apply`);
  t.equal(again.body.state, 'provisioning', 'apply is idempotent');
  const waiting = await until('the transport reason', async () => {
    const r = await owner<Domain>('GET', `/v0/domains/${d.domain_id}`);
    return r.body.reason ? r.body : undefined;
  });
  t.match(waiting.reason, /`svc transport set --edge-url URL --edge-token-file FILE`/);

  const refused = await owner('DELETE', `/v0/domains/${d.domain_id}`);
  t.equal(refused.status, 409, 'delete before teardown');
  t.equal(refused.body.code, 'conflict');
  t.match(refused.body.fix, /teardown/);

  const down = await owner<Domain>('POST', `/v0/domains/${d.domain_id}/teardown`);
  t.equal(down.status, 202);
  t.match(down.body, { state: 'tearing_down', status: 'NOT_STARTED' });
  await until('torn_down', () => statusOf(d.domain_id, 'torn_down'));
  const deleted = await owner('DELETE', `/v0/domains/${d.domain_id}`);
  t.ok(deleted.status >= 200 && deleted.status < 300, `delete after teardown: ${deleted.status}`);
  t.equal((await owner('GET', `/v0/domains/${d.domain_id}`)).status, 404);
  t.equal((await register('states.example.com')).state, 'pending', 'the name can be registered again');
});

t.test('a pending (never applied) domain can be deleted', async (t) => {
  const d = await register('never.example.com');
  const res = await owner('DELETE', `/v0/domains/${d.domain_id}`);
  t.ok(res.status < 300);
});

t.test('with an edge on a real host, the plan adds MTA-STS and TLS-RPT records (issue 21 §1), in the zone file too', async (t) => {
  const put = await owner('PUT', '/v0/owner/transport', { edge: { url: 'https://mx.edge.example:8026', token: 'edge-token-0123456789abcdef' } });
  t.equal(put.status, 200, put.text);
  t.teardown(() => owner('DELETE', '/v0/owner/transport'));
  const d = await register('sts.example.com');
  const plan = (await owner<Plan>('GET', `/v0/domains/${d.domain_id}/plan`)).body;
  const sts = plan.records.find((r) => r.name === '_mta-sts.sts.example.com');
  t.match(sts, { type: 'TXT', value: /^v=STSv1; id=[0-9a-f]{20}$/ });
  t.same(plan.records.find((r) => r.name === '_smtp._tls.sts.example.com'), { type: 'TXT', name: '_smtp._tls.sts.example.com', value: 'v=TLSRPTv1; rua=mailto:postmaster@sts.example.com' });
  t.same(plan.records[0], { type: 'MX', name: 'sts.example.com', value: 'mx.edge.example', priority: 10 });
  const zone = (await api(svc.url, 'GET', `/v0/domains/${d.domain_id}/zone-file`, { token: svc.ownerToken })).text;
  t.match(zone, /^_mta-sts\tIN\tTXT\t"v=STSv1; id=[0-9a-f]{20}"$/m);
  t.match(zone, /^_smtp\._tls\tIN\tTXT\t"v=TLSRPTv1; rua=mailto:postmaster@sts\.example\.com"$/m);
  // Another edge host is another policy: the id changes.
  await owner('PUT', '/v0/owner/transport', { edge: { url: 'https://mx2.edge.example:8026', token: 'edge-token-0123456789abcdef' } });
  const moved = (await owner<Plan>('GET', `/v0/domains/${d.domain_id}/plan`)).body.records.find((r) => r.name === '_mta-sts.sts.example.com');
  t.not(moved!.value, sts!.value);
});
