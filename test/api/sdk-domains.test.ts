/**
 * Domains through the AgentMail SDK alone (issue 35 §4, docs/agentmail-compat.md): against a real
 * `svc serve --local-edge` whose DNS checks ask a loopback DNS server, typed code does
 * create → publish `records` → verify → wait for `VERIFIED`, and every answer is parsed with the
 * SDK's own schema with validation on (unknown enum values fail; svc's extension keys pass
 * through). A domain with wrong records reads `INVALID`; `getSetupLink` answers the domain's page
 * in the owner's web app.
 */
import t, { type Test } from 'tap';
import { AgentMailClient, type AgentMail } from 'agentmail';
import * as serialization from 'agentmail/serialization';
import { startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns, type LoopbackDns, type Zone } from '../helpers/dns.js';
import { until } from '../helpers/until.js';

let dns: LoopbackDns;
let svc: RunningSvc;

t.before(async () => {
  dns = await startLoopbackDns({});
  svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
});
t.teardown(async () => {
  await svc.stop();
  await dns.close();
});

/** The raw answer of the last request, so the test validates what svc sent, not what the SDK made of it. */
let lastBody = '';
const recordingFetch: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  lastBody = await res.clone().text();
  return res;
};
const client = () => new AgentMailClient({ apiKey: svc.ownerToken, baseUrl: svc.url, maxRetries: 0, timeoutInSeconds: 20, fetch: recordingFetch });

type Parser = { parse(raw: unknown, opts: Record<string, unknown>): { ok: true } | { ok: false; errors: { path: string[]; message: string }[] } };
/** The SDK's schema with validation on: enums and types checked, svc's extension keys let through. */
function strictlyParsed(t: Test, schema: Parser, what: string): Record<string, unknown> {
  const raw = JSON.parse(lastBody) as Record<string, unknown>;
  const parsed = schema.parse(raw, { unrecognizedObjectKeys: 'passthrough', allowUnrecognizedUnionMembers: false, allowUnrecognizedEnumValues: false, skipValidation: false, breadcrumbsPrefix: [] });
  t.same(parsed.ok ? [] : parsed.errors.map((e) => `${e.path.join('.')}: ${e.message}`), [], `${what}: parses with the SDK's schema, validation on`);
  return raw;
}

/** Publishes the SDK-typed records in the loopback zone, as an agent would at its DNS host. */
function publish(records: AgentMail.VerificationRecord[]): void {
  const zone: Zone = dns.zone;
  for (const r of records) delete zone[r.name];
  for (const r of records) {
    const entry = (zone[r.name] ??= {});
    if (r.type === 'MX') (entry.MX ??= []).push({ exchange: r.value, priority: r.priority ?? 10 });
    if (r.type === 'TXT') (entry.TXT ??= []).push(r.value);
  }
}

t.test('create → verify → VERIFIED through the SDK alone, every answer strict', async (t) => {
  const sdk = client();
  const created = await sdk.domains.create({ domain: 'sdk.example.com' });
  const raw = strictlyParsed(t, serialization.Domain, 'domains.create');
  t.equal(created.status, 'NOT_STARTED');
  t.equal(raw.state, 'pending', "svc's lifecycle stays in the extension field state");
  t.same(raw.extra_records, [], 'the local edge has no public address: no A/PTR records');
  t.ok(created.records.length >= 4, 'MX, SPF, DKIM, DMARC');
  t.ok(created.records.every((r) => r.status === 'MISSING' && ['MX', 'TXT', 'CNAME'].includes(r.type)), 'nothing published yet, only SDK record types');

  publish(created.records);
  const verify = await sdk.domains.verify(created.domainId);
  t.equal(verify, undefined, 'verify resolves as the SDK declares (void)');
  t.match(JSON.parse(lastBody), { state: 'provisioning', status: 'PENDING' }, 'a domain never applied is provisioned by verify');
  strictlyParsed(t, serialization.Domain, 'domains.verify (the body the SDK ignores)');

  // Typed code that waits for VERIFIED, as an agent writes it; `until` only bounds a failing run.
  let seen: AgentMail.Domain = created;
  const statuses = new Set<string>();
  await until(() => `VERIFIED (last ${seen.status})`, async () => {
    seen = await sdk.domains.get(created.domainId);
    strictlyParsed(t, serialization.Domain, `domains.get while ${seen.status}`);
    statuses.add(seen.status);
    return seen.status === 'VERIFIED' || seen.status === 'FAILED' || seen.status === 'INVALID';
  }, 60_000, 200);
  t.equal(seen.status, 'VERIFIED', seen.reason ?? '');
  t.ok(seen.records.every((r) => r.status === 'VALID'), 'every record VALID');
  t.ok([...statuses].every((s) => ['PENDING', 'VERIFYING', 'VERIFIED'].includes(s)), `only forward statuses on the way: ${[...statuses].join(', ')}`);

  const list = await sdk.domains.list();
  strictlyParsed(t, serialization.ListDomainsResponse, 'domains.list');
  t.match(JSON.parse(lastBody).domains.find((d: { domain_id: string }) => d.domain_id === created.domainId), { status: 'VERIFIED', state: 'verified' });
  t.ok(list.domains.some((d) => d.domainId === created.domainId));

  await sdk.domains.verify(created.domainId);
  t.match(JSON.parse(lastBody), { state: 'verifying', status: 'VERIFYING' }, 'verify of a verified domain checks again from scratch');
  await until('verified again', async () => (await sdk.domains.get(created.domainId)).status === 'VERIFIED', 60_000, 200);

  await sdk.domains.update(created.domainId, { feedbackEnabled: false });
  strictlyParsed(t, serialization.Domain, 'domains.update');
});

t.test('wrong records: INVALID with the wrong record INVALID and the absent one MISSING; fixed, verify reaches VERIFIED', async (t) => {
  const sdk = client();
  const d = await sdk.domains.create({ domain: 'wrong.example.com' });
  publish(d.records.filter((r) => !r.name.startsWith('_dmarc.')).map((r) => (r.type === 'MX' ? { ...r, value: 'mx.other.net' } : r)));
  await sdk.domains.verify(d.domainId);
  let seen: AgentMail.Domain = d;
  await until(() => `INVALID (last ${seen.status})`, async () => {
    seen = await sdk.domains.get(d.domainId);
    return seen.status === 'INVALID' || seen.status === 'VERIFIED';
  }, 60_000, 200);
  strictlyParsed(t, serialization.Domain, 'domains.get of an invalid domain');
  t.equal(seen.status, 'INVALID');
  t.match(seen.records.find((r) => r.type === 'MX'), { status: 'INVALID', reason: /points at mx\.other\.net/ });
  t.match(seen.records.find((r) => r.name.startsWith('_dmarc.')), { status: 'MISSING' });
  t.match(JSON.parse(lastBody), { state: 'failed' });

  publish(d.records);
  await sdk.domains.verify(d.domainId);
  await until('VERIFIED after the fix', async () => (await sdk.domains.get(d.domainId)).status === 'VERIFIED', 60_000, 200);
  t.pass('fixed and verified again through the SDK');
});

t.test("getSetupLink: the domain's page in the owner's web app, on the home's origin, with no secret", async (t) => {
  const sdk = client();
  const d = await sdk.domains.create({ domain: 'setup.example.com' });
  const link = await sdk.domains.getSetupLink(d.domainId);
  strictlyParsed(t, serialization.domains.GetSetupLinkResponse, 'domains.getSetupLink');
  t.equal(link.supported, false, 'no DNS provider: the records are created by hand');
  t.equal(link.providerName, undefined);
  const url = new URL(link.url!);
  t.equal(url.origin, svc.url, "the home's own origin");
  t.equal(url.pathname, `/domains/${d.domainId}`);
  t.equal(url.search + url.hash, '', 'no query, no fragment: nothing to leak');
  const page = await fetch(url);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /text\/html/, 'the web app, which asks the owner to sign in');

  // With a provider, Apply on that page publishes the records: one click.
  const set = await fetch(`${svc.url}/v0/owner/dns-provider`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${svc.ownerToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'powerdns', url: 'http://127.0.0.1:9', api_key: 'not-used-here' }),
  });
  t.equal(set.status, 200);
  const withProvider = await sdk.domains.getSetupLink(d.domainId);
  strictlyParsed(t, serialization.domains.GetSetupLinkResponse, 'domains.getSetupLink with a provider');
  t.match(withProvider, { supported: true, providerName: 'PowerDNS', url: link.url });
  t.notMatch(lastBody, /not-used-here/, 'the provider secret is never in the answer');
  await fetch(`${svc.url}/v0/owner/dns-provider`, { method: 'DELETE', headers: { authorization: `Bearer ${svc.ownerToken}` } });
  await sdk.domains.delete(d.domainId);
});
