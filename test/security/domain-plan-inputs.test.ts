/**
 * What goes verbatim into a domain's DNS plan from outside (issue 33 §4, docs/domains.md): the
 * smart host's SPF mechanism from the owner (`smtp.spf_include`, `svc edge --smart-host-spf`)
 * and the addresses an operator gives the edge (`--public-ip`). An attacker who gets a value
 * through would rewrite the domain's SPF (`redirect=` to their domain, `+all`, a second record
 * through quotes) or point its MX at a private network. Each is refused before it is stored.
 */
import t from 'tap';
import { api, startSvc, tempDir } from '../helpers/svc.js';
import { startEdgeProcess } from '../helpers/edge.js';
import { readEdgeIdentity } from '../../src/edge/identity.js';

const BAD_MECHANISMS = [
  'include:amazonses.com -all',
  'include:amazonses.com redirect=evil.example',
  'redirect=evil.example',
  'all',
  '+all',
  '~all',
  '-include:amazonses.com',
  '?include:amazonses.com',
  'include:"amazonses.com"',
  '"v=spf1 +all"',
  'include:amazonses.com\tip4:0.0.0.0/0',
  'include:amazonses.com\n+all',
  'include:%{i}.evil.example',
  'exists:%{l}.evil.example',
  'exp=explain.evil.example',
  'ptr',
  'ptr:evil.example',
  'ip4:0.0.0.0/-1',
  'ip4:999.1.1.1',
  'ip4:1.2.3.4/33',
  'ip6:::1/129',
  'ip4:2001:db8::1',
  'include:',
  'include:-bad.example',
  'include:evil..example',
  'v=spf1',
  `include:${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${'e'.repeat(30)}.example`,
  `include:${'x'.repeat(5000)}.example`,
];

t.test('smtp.spf_include: anything but one plain mechanism is a 400 validation_error, and nothing is stored', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const put = (spf: string) => api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { smtp: { host: 'smtp.relay.test', port: 587, spf_include: spf } } });
  for (const bad of BAD_MECHANISMS) {
    const res = await put(bad);
    t.equal(res.status, 400, JSON.stringify(bad.slice(0, 80)));
    t.match(res.body, { code: 'validation_error' }, 'the documented error');
  }
  const view = await api(svc.url, 'GET', '/v0/owner/transport', { token: svc.ownerToken });
  t.same(view.body.smtp, null, 'no refused value was stored');
  for (const [good, canonical] of [
    ['include:amazonses.com', 'include:amazonses.com'],
    ['+include:Spf.Mailgun.ORG', 'include:spf.mailgun.org'],
    ['ip4:203.0.113.0/24', 'ip4:203.0.113.0/24'],
    ['ip6:2001:DB8::/48', 'ip6:2001:db8::/48'],
    ['a:out.example.com', 'a:out.example.com'],
    ['mx:example.com', 'mx:example.com'],
    ['a', 'a'],
  ]) {
    const res = await put(good);
    t.equal(res.status, 200, good);
    t.match(res.body, { smtp: { spf_include: canonical } });
  }
});

t.test('svc edge: --smart-host-spf and --public-ip refuse what must not go into DNS, before anything starts', async (t) => {
  const data = tempDir('svc-edge-inputs-');
  const run = (args: string[]) =>
    startEdgeProcess(['--data', data, '--smtp-port', '0', '--api-port', '0', ...args]).then(
      (e) => {
        e.proc.kill('SIGTERM');
        return 'started';
      },
      (err: Error) => err.message,
    );
  for (const bad of ['include:a.example -all', 'redirect=evil.example', '+all', 'include:"x.example"']) {
    t.match(await run(['--smart-host', 'smtp.relay.test:587', '--smart-host-spf', bad]), /--smart-host-spf must be one SPF mechanism/, bad);
  }
  t.match(await run(['--smart-host-spf', 'include:amazonses.com']), /--smart-host-spf needs --smart-host/);
  for (const ip of ['127.0.0.1', '10.1.2.3', '192.168.1.5', '172.16.0.1', '100.64.0.1', '169.254.1.1', '::1', 'fd00::1', 'fe80::1', '0.0.0.0', '::ffff:127.0.0.1']) {
    t.match(await run(['--public-ip', ip]), /is not a public address/, ip);
  }
  t.match(await run(['--public-ip', 'mx.example.com']), /is not an IP address/);
  t.match(await run(['--public-ip', Array.from({ length: 9 }, (_, i) => `203.0.113.${i + 1}`).join(',')]), /at most 8 addresses/);
});

t.test('the home takes from an edge\u2019s report only a public name, public addresses and a plain mechanism', async (t) => {
  const hostile = readEdgeIdentity({
    hostname: 'mx.example.com',
    public_addresses: ['127.0.0.1', '10.0.0.1', '203.0.113.5', 'not-an-ip', 42, '203.0.113.5', ...Array.from({ length: 20 }, (_, i) => `198.51.100.${i + 1}`)],
    smart_host: { host: 'smtp.relay.test', spf: 'include:x.example +all' },
  });
  t.same(hostile?.public_addresses.slice(0, 1), ['203.0.113.5'], 'loopback, private and junk are dropped');
  t.ok(hostile!.public_addresses.length <= 8, 'at most 8 addresses');
  t.same(hostile?.smart_host, { host: 'smtp.relay.test', spf: null }, 'an injected mechanism is dropped, not published');
  t.equal(readEdgeIdentity(null), null, 'an older edge reports nothing');
  t.equal(readEdgeIdentity({ hostname: 'x'.repeat(300) })?.hostname, '', 'an overlong name is no name');
  // A managed MX (the Cloudflare Worker behind Email Routing) is taken only for an operator svc
  // knows, and then with svc's own constants: an edge cannot name MX hosts or SPF mechanisms this way.
  const claimed = readEdgeIdentity({ hostname: 'mx.example.com', managed_mx: { by: 'cloudflare_email_routing', hosts: ['mx.attacker.example'], spf_include: '+all' } });
  t.same(claimed?.managed_mx, { by: 'cloudflare_email_routing', hosts: ['route1.mx.cloudflare.net', 'route2.mx.cloudflare.net', 'route3.mx.cloudflare.net'], spf_include: 'include:_spf.mx.cloudflare.net', worker: null });
  // The Worker's name is the one word taken from it (the target of Email Routing rules): a name, or nothing.
  for (const worker of ['svc-edge', 'a', 'x'.repeat(63)]) t.equal(readEdgeIdentity({ managed_mx: { by: 'cloudflare_email_routing', worker } })?.managed_mx?.worker, worker, `worker ${worker.slice(0, 10)}: taken`);
  for (const worker of ['', 'Svc-Edge', '-edge', 'edge-', 'x'.repeat(64), 'a/b', 'a b', '../x', 'edge\n', 42, ['svc-edge'], { name: 'svc-edge' }]) {
    t.equal(readEdgeIdentity({ managed_mx: { by: 'cloudflare_email_routing', worker } })?.managed_mx?.worker, null, `worker ${JSON.stringify(worker).slice(0, 20)}: ignored`);
  }
  for (const by of ['attacker', 'CLOUDFLARE_EMAIL_ROUTING', null, 42, ['cloudflare_email_routing']]) {
    t.equal(readEdgeIdentity({ hostname: 'mx.example.com', managed_mx: { by } })?.managed_mx, null, `managed_mx by ${JSON.stringify(by)} is ignored`);
  }
  t.equal(readEdgeIdentity({ hostname: 'mx.example.com', managed_mx: 'cloudflare_email_routing' })?.managed_mx, null);
});
