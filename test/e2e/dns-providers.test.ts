/**
 * Domains publish their own records (issue 21 §2, docs/dns-providers.md), against real DNS
 * servers from Debian packages on loopback: Knot through RFC 2136 + TSIG, PowerDNS through its
 * HTTP API. Through svc's API: configure the provider, register a domain, apply → the records
 * are in the real server → the domain checks ask that server → self-test → `verified`. Re-apply
 * adds nothing twice. Teardown removes exactly what apply added; the owner's own records stay.
 */
import t from 'tap';
import net from 'node:net';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { dnsServersMissing, startKnot, startPowerDns, type RunningKnot, type RunningPowerDns } from '../helpers/dns-servers.js';
import { until } from '../helpers/until.js';

/** Provisioning passes 1 s apart instead of 10 s (SVC_TEST_PROVISIONING_MS, docs/testing.md): the same states, reached sooner. */
const FAST_PASSES = { SVC_TEST_PROVISIONING_MS: '1000' };
/** Each case has its own DNS server and service, and much of each is waiting (passes, timeouts): two at a time. */
t.jobs = 2;

interface Domain { domain_id: string; domain: string; status: string; state: string; reason: string | null; records: { type: string; name: string; value: string; status: string; state: string; reason?: string }[] }

const missing = dnsServersMissing();
if (missing) {
  t.fail(missing);
} else {
  const owner = <T = Record<string, unknown>>(svc: RunningSvc, method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token: svc.ownerToken, body });

  async function domainIn(svc: RunningSvc, id: string, statuses: string[], timeout = 30_000): Promise<Domain> {
    let last: Domain | undefined;
    try {
      return await until(
        `status ${statuses.join('/')}`,
        async () => {
          last = (await owner<Domain>(svc, 'GET', `/v0/domains/${id}`)).body;
          return statuses.includes(last.state) ? last : undefined;
        },
        timeout,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; last: ${JSON.stringify(last)}`);
    }
  }

  async function register(svc: RunningSvc, domain: string): Promise<Domain> {
    const res = await owner<Domain>(svc, 'POST', '/v0/domains', { domain });
    if (res.status !== 200) throw new Error(`register: ${res.status} ${res.text}`);
    return res.body;
  }

  t.test('RFC 2136 with TSIG (Knot): apply publishes, verified, re-apply adds nothing, teardown removes exactly what apply added', async (t) => {
    const knot: RunningKnot = await startKnot({ zone: 'knot.test', keyName: 'svc-update', algorithm: 'hmac-sha256', records: ['owner TXT "kept by the owner"', 'mx.agents A 192.0.2.7'] });
    const svc = await startSvc({ args: ['--local-edge', '--dns', knot.server, '--edge-dns', knot.server], env: FAST_PASSES });
    t.teardown(async () => {
      await svc.stop();
      await knot.stop();
    });

    const put = await owner(svc, 'PUT', '/v0/owner/dns-provider', { kind: 'rfc2136', server: '127.0.0.1', port: knot.port, key_name: 'svc-update', algorithm: 'hmac-sha256', secret: knot.secret, zones: ['knot.test'] });
    t.equal(put.status, 200, put.text);
    t.same(put.body, { configured: true, provider: { kind: 'rfc2136', server: '127.0.0.1', port: knot.port, transport: 'tcp', key_name: 'svc-update', algorithm: 'hmac-sha256', secret_set: true, zones: ['knot.test'], ttl: 3600 } });

    const d = await register(svc, 'agents.knot.test');
    t.equal((await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`)).status, 202);
    const verified = await domainIn(svc, d.domain_id, ['verified', 'failed']);
    t.equal(verified.state, 'verified', verified.reason ?? '');
    t.ok(verified.records.every((r) => r.state === 'valid'), 'every record valid, checked against Knot');

    t.same(knot.dig('agents.knot.test', 'MX'), ['10 mx.agents.knot.test.']);
    t.same(knot.dig('mx.agents.knot.test', 'A'), ['192.0.2.7'], 'no A for a loopback edge; the owner\'s A at the same name stays');
    t.same(knot.dig('_dmarc.agents.knot.test', 'TXT'), ['"v=DMARC1; p=quarantine; adkim=r; aspf=r"']);
    const dkim = verified.records.find((r) => r.name.includes('._domainkey.'))!;
    t.match(knot.dig(dkim.name, 'TXT').join(''), /v=DKIM1; k=rsa; p=/);

    t.equal((await owner<Domain>(svc, 'POST', `/v0/domains/${d.domain_id}/apply`)).body.state, 'verified');
    t.equal(knot.dig('agents.knot.test', 'MX').length, 1);

    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/teardown`);
    await domainIn(svc, d.domain_id, ['torn_down']);
    t.same(knot.dig('agents.knot.test', 'MX'), [], 'the MX svc added is gone');
    t.same(knot.dig('agents.knot.test', 'TXT'), [], 'the SPF svc added is gone');
    t.same(knot.dig('_dmarc.agents.knot.test', 'TXT'), []);
    t.same(knot.dig(dkim.name, 'TXT'), []);
    t.same(knot.dig('mx.agents.knot.test', 'A'), ['192.0.2.7'], 'the owner\'s A record stays');
    t.same(knot.dig('owner.knot.test', 'TXT'), ['"kept by the owner"']);

    // Apply again after teardown publishes again, once.
    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`);
    t.equal((await domainIn(svc, d.domain_id, ['verified', 'failed'])).state, 'verified');
    t.same(knot.dig('agents.knot.test', 'MX'), ['10 mx.agents.knot.test.']);
    t.same(knot.dig('mx.agents.knot.test', 'A'), ['192.0.2.7']);
  });

  t.test('a record the owner already had is kept at teardown; an existing SPF is not doubled', async (t) => {
    const knot = await startKnot({ zone: 'own.test', keyName: 'svc-update', records: ['@ TXT "v=spf1 mx -all"', '@ MX 10 mx.own.test.'] });
    const svc = await startSvc({ args: ['--local-edge', '--dns', knot.server, '--edge-dns', knot.server], env: FAST_PASSES });
    t.teardown(async () => {
      await svc.stop();
      await knot.stop();
    });
    await owner(svc, 'PUT', '/v0/owner/dns-provider', { kind: 'rfc2136', server: '127.0.0.1', port: knot.port, transport: 'udp', key_name: 'svc-update', secret: knot.secret });
    const d = await register(svc, 'own.test');
    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`);
    t.equal((await domainIn(svc, d.domain_id, ['verified', 'failed'])).state, 'verified');
    t.same(knot.dig('own.test', 'TXT'), ['"v=spf1 mx -all"'], 'one SPF record');
    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/teardown`);
    await domainIn(svc, d.domain_id, ['torn_down']);
    t.same(knot.dig('own.test', 'TXT'), ['"v=spf1 mx -all"'], 'the owner\'s SPF stays');
    t.same(knot.dig('own.test', 'MX'), ['10 mx.own.test.'], 'the owner\'s MX (the same as planned) stays');
    t.same(knot.dig('_dmarc.own.test', 'TXT'), [], 'what svc added is gone');
  });

  t.test('re-applying a failed domain publishes nothing twice and keeps what svc added its own', async (t) => {
    const knot = await startKnot({ zone: 'fail.test', keyName: 'svc-update', records: ['@ MX 20 other.example.'] });
    const svc = await startSvc({ args: ['--local-edge', '--dns', knot.server], env: FAST_PASSES });
    t.teardown(async () => {
      await svc.stop();
      await knot.stop();
    });
    await owner(svc, 'PUT', '/v0/owner/dns-provider', { kind: 'rfc2136', server: '127.0.0.1', port: knot.port, key_name: 'svc-update', algorithm: 'hmac-sha256', secret: knot.secret });
    const d = await register(svc, 'fail.test');
    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`);
    const failed = await domainIn(svc, d.domain_id, ['failed', 'verified']);
    t.equal(failed.state, 'failed', 'the owner\'s other MX makes the check fail');
    t.match(failed.records.find((r) => r.type === 'MX')!.reason, /also points at other\.example; remove it/);
    const before = ['MX', 'TXT'].map((type) => knot.dig('fail.test', type).sort());

    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`);
    t.equal((await domainIn(svc, d.domain_id, ['failed', 'verified'])).state, 'failed');
    t.same(['MX', 'TXT'].map((type) => knot.dig('fail.test', type).sort()), before, 'the second apply added nothing');
    t.same(before[0], ['10 mx.fail.test.', '20 other.example.']);

    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/teardown`);
    await domainIn(svc, d.domain_id, ['torn_down']);
    t.same(knot.dig('fail.test', 'MX'), ['20 other.example.'], 'svc\'s MX (still its own after the re-apply) is removed, the owner\'s stays');
    t.same(knot.dig('fail.test', 'TXT'), []);
    t.same(knot.dig('mx.fail.test', 'A'), []);
  });

  t.test('PowerDNS HTTP API: apply publishes, verified; teardown removes exactly what apply added', async (t) => {
    const pdns: RunningPowerDns = await startPowerDns({ zone: 'pdns.test', records: [{ name: 'pdns.test.', type: 'TXT', content: '"google-site-verification=abc"' }] });
    const svc = await startSvc({ args: ['--local-edge', '--dns', pdns.server, '--edge-dns', pdns.server], env: FAST_PASSES });
    t.teardown(async () => {
      await svc.stop();
      await pdns.stop();
    });
    const put = await owner(svc, 'PUT', '/v0/owner/dns-provider', { kind: 'powerdns', url: pdns.url, api_key: pdns.apiKey });
    t.equal(put.status, 200, put.text);
    t.same(put.body, { configured: true, provider: { kind: 'powerdns', url: pdns.url, server_id: 'localhost', api_key_set: true, zones: [], ttl: 3600 } });

    const d = await register(svc, 'pdns.test');
    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`);
    const verified = await domainIn(svc, d.domain_id, ['verified', 'failed']);
    t.equal(verified.state, 'verified', verified.reason ?? '');
    t.same(await pdns.contents('pdns.test', 'pdns.test.', 'MX'), ['10 mx.pdns.test.']);
    t.same((await pdns.contents('pdns.test', 'pdns.test.', 'TXT')).sort(), ['"google-site-verification=abc"', '"v=spf1 mx -all"']);

    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/teardown`);
    await domainIn(svc, d.domain_id, ['torn_down']);
    t.same(await pdns.contents('pdns.test', 'pdns.test.', 'MX'), []);
    t.same(await pdns.contents('pdns.test', 'pdns.test.', 'TXT'), ['"google-site-verification=abc"'], 'the owner\'s TXT stays');
    t.same(await pdns.contents('pdns.test', '_dmarc.pdns.test.', 'TXT'), []);
    t.same(await pdns.contents('pdns.test', 'mx.pdns.test.', 'A'), []);
  });
  t.test('teardown while the publish is in flight (the UPDATE held by a slow link) still removes every record svc added', async (t) => {
    const knot = await startKnot({ zone: 'race.test', keyName: 'svc-update', records: ['@ MX 20 owner.example.'] });
    const proxy = await holdingProxy(knot.port);
    const svc = await startSvc({ args: ['--local-edge', '--dns', knot.server], env: FAST_PASSES });
    t.teardown(async () => {
      proxy.release();
      await svc.stop();
      await proxy.close();
      await knot.stop();
    });
    await owner(svc, 'PUT', '/v0/owner/dns-provider', { kind: 'rfc2136', server: '127.0.0.1', port: proxy.port, key_name: 'svc-update', secret: knot.secret });
    const d = await register(svc, 'race.test');
    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`);
    await proxy.held; // svc sent its UPDATE; Knot has not seen it yet
    const torn = await owner<Domain>(svc, 'POST', `/v0/domains/${d.domain_id}/teardown`);
    t.equal(torn.body.state, 'tearing_down', 'the owner tears the domain down mid-publish');
    proxy.release(); // now Knot applies the UPDATE, after the teardown started
    await domainIn(svc, d.domain_id, ['torn_down']);
    t.ok(proxy.updates() >= 2, 'svc sent a removal after the held add');
    t.same(knot.dig('race.test', 'MX'), ['20 owner.example.'], 'svc\'s MX is gone, the owner\'s stays');
    t.same(knot.dig('race.test', 'TXT'), [], 'svc\'s SPF is gone');
    t.same(knot.dig('_dmarc.race.test', 'TXT'), []);
    t.same(knot.dig('mx.race.test', 'A'), []);
  });

  t.test('PowerDNS: the owner\'s disabled records stay disabled through apply and teardown, and are never claimed', async (t) => {
    const pdns = await startPowerDns({ zone: 'dis.test' });
    const svc = await startSvc({ args: ['--local-edge', '--dns', pdns.server, '--edge-dns', pdns.server], env: FAST_PASSES });
    t.teardown(async () => {
      await svc.stop();
      await pdns.stop();
    });
    const dmarc = '"v=DMARC1; p=quarantine; adkim=r; aspf=r"';
    const patched = await pdns.api('PATCH', '/api/v1/servers/localhost/zones/dis.test.', {
      rrsets: [
        { name: 'dis.test.', type: 'MX', ttl: 300, changetype: 'REPLACE', records: [{ content: '20 backup.example.', disabled: true }] },
        // The very record svc plans, but disabled by the owner: present, so svc neither re-enables nor adds nor claims it.
        { name: '_dmarc.dis.test.', type: 'TXT', ttl: 300, changetype: 'REPLACE', records: [{ content: dmarc, disabled: true }] },
      ],
    });
    t.equal(patched.status, 204, JSON.stringify(patched.body));
    const rrset = async (name: string, type: string) => {
      const zone = (await pdns.api('GET', '/api/v1/servers/localhost/zones/dis.test.')).body as { rrsets: { name: string; type: string; records: { content: string; disabled: boolean }[] }[] };
      return (zone.rrsets.find((s) => s.name === name && s.type === type)?.records ?? []).map((r) => `${r.content}${r.disabled ? ' (disabled)' : ''}`).sort();
    };
    await owner(svc, 'PUT', '/v0/owner/dns-provider', { kind: 'powerdns', url: pdns.url, api_key: pdns.apiKey });
    const d = await register(svc, 'dis.test');
    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`);
    const done = await domainIn(svc, d.domain_id, ['verified', 'failed']);
    t.equal(done.state, 'failed', 'the DMARC record is disabled, so the check fails');
    t.same(await rrset('dis.test.', 'MX'), ['10 mx.dis.test.', '20 backup.example. (disabled)'], 'svc added its MX; the owner\'s disabled MX stays disabled');
    t.same(await rrset('_dmarc.dis.test.', 'TXT'), [`${dmarc} (disabled)`], 'not re-enabled, no twin added');

    await owner(svc, 'POST', `/v0/domains/${d.domain_id}/teardown`);
    await domainIn(svc, d.domain_id, ['torn_down']);
    t.same(await rrset('dis.test.', 'MX'), ['20 backup.example. (disabled)'], 'svc\'s MX is gone; the owner\'s disabled one survives, still disabled');
    t.same(await rrset('_dmarc.dis.test.', 'TXT'), [`${dmarc} (disabled)`], 'never claimed, so not removed');
    t.same(await rrset('dis.test.', 'TXT'), [], 'svc\'s SPF is gone');
  });

  t.test('a provider that never answers costs one timeout per pass: the other domains wait for the next pass', async (t) => {
    const sockets = new Set<net.Socket>();
    const blackHole = net.createServer((s) => {
      sockets.add(s);
      s.on('error', () => {});
    });
    await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
    const svc = await startSvc({ args: ['--local-edge'], env: FAST_PASSES });
    t.teardown(async () => {
      await svc.stop();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => blackHole.close(() => r()));
    });
    const port = (blackHole.address() as net.AddressInfo).port;
    await owner(svc, 'PUT', '/v0/owner/dns-provider', { kind: 'rfc2136', server: '127.0.0.1', port, key_name: 'svc-update', secret: Buffer.alloc(32, 1).toString('base64') });
    const ids: string[] = [];
    for (const name of ['a.dead.test', 'b.dead.test', 'c.dead.test']) {
      const d = await register(svc, name);
      await owner(svc, 'POST', `/v0/domains/${d.domain_id}/apply`);
      ids.push(d.domain_id);
    }
    const reasons = await until('every domain has a reason', async () => {
      const all = await Promise.all(ids.map(async (id) => (await owner<Domain>(svc, 'GET', `/v0/domains/${id}`)).body.reason ?? ''));
      return all.every((r) => /ETIMEDOUT/.test(r)) && all.some((r) => /did not try this pass/.test(r)) ? all : undefined;
    }, 45_000);
    t.ok(reasons.some((r) => /failed: ETIMEDOUT/.test(r) && !/did not try/.test(r)), 'the domain tried first timed out');
    t.ok(reasons.some((r) => /did not try this pass: .*ETIMEDOUT.* svc tries again every 10 s/.test(r)), 'the others waited for the next pass, with the cause');
    t.equal((await owner(svc, 'GET', '/v0/owner/status')).status, 200, 'svc still answers');
  });
}

/**
 * A TCP proxy to a DNS server that holds the first UPDATE (opcode 5) it sees until `release()`;
 * `held` resolves once it holds it. Everything else passes at once.
 */
async function holdingProxy(upstreamPort: number): Promise<{ port: number; held: Promise<void>; release(): void; updates(): number; close(): Promise<void> }> {
  let onHeld!: () => void;
  const held = new Promise<void>((r) => (onHeld = r));
  let waiting: (() => void)[] | null = [];
  let updates = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: upstreamPort });
    sockets.add(client);
    sockets.add(upstream);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    upstream.pipe(client);
    client.on('data', (chunk: Buffer) => {
      const isUpdate = chunk.length > 4 && ((chunk[4] >> 3) & 0x0f) === 5;
      if (isUpdate) updates++;
      if (isUpdate && waiting && updates === 1) {
        waiting.push(() => upstream.write(chunk));
        onHeld();
      } else upstream.write(chunk);
    });
    client.on('end', () => upstream.end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    held,
    release: () => {
      const pending = waiting ?? [];
      waiting = null;
      for (const send of pending) send();
    },
    updates: () => updates,
    close: () => new Promise((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}
