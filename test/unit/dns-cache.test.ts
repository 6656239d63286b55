/**
 * The edge's DNS answer cache (src/edge/dns-cache.ts) against a real loopback name server (dns2):
 * an answer and a "no such name" are asked once per TTL, concurrent questions share one query,
 * a server failure is asked again, and names made up by the thousand or a record too large cannot grow it past its bound.
 */
import t from 'tap';
import type { Test } from 'tap';
import dns2 from 'dns2';
import { dnsResolver } from '../../src/edge/auth.js';
import { CACHE_ENTRIES, CACHE_TTL_MS, MAX_KEPT_CHARS, cachingResolver } from '../../src/edge/dns-cache.js';

const { Packet } = dns2;
const SERVFAIL = 2;
const NXDOMAIN = 3;

/** A name server answering TXT "v=spf1 -all" for *.known.test, a 5,000-character TXT record for big.test, failing once for flaky.test, NXDOMAIN otherwise; it records every question. */
async function nameServer(t: Test): Promise<{ server: string; asked: string[] }> {
  const asked: string[] = [];
  let flaky = 0;
  const handle: Parameters<typeof dns2.createServer>[0]['handle'] = (request, send) => {
    const response = Packet.createResponseFromRequest(request);
    for (const q of request.questions) {
      const name = q.name.toLowerCase();
      asked.push(name);
      if (name === 'big.test') response.answers.push({ name: q.name, class: Packet.CLASS.IN, ttl: 60, type: Packet.TYPE.TXT, data: Array.from({ length: 20 }, () => 'x'.repeat(250)) } as never);
      else if (name.endsWith('known.test')) response.answers.push({ name: q.name, class: Packet.CLASS.IN, ttl: 60, type: Packet.TYPE.TXT, data: ['v=spf1 -all'] } as never);
      else if (name === 'flaky.test' && flaky++ === 0) response.header.rcode = SERVFAIL;
      else if (name === 'flaky.test') response.answers.push({ name: q.name, class: Packet.CLASS.IN, ttl: 60, type: Packet.TYPE.TXT, data: ['ok'] } as never);
      else response.header.rcode = NXDOMAIN;
    }
    void send(response);
  };
  // UDP and TCP on one port (a large answer is truncated over UDP and asked again over TCP): the
  // UDP port chosen by the system, the TCP server then bound to the same number. Another test's
  // connection may hold that number as its TCP port; then both close and a new UDP port is tried.
  for (let attempt = 1; ; attempt++) {
    const udp = dns2.createServer({ udp: true, handle });
    const port = (await udp.listen({ udp: { port: 0, address: '127.0.0.1' } })).udp!.port;
    const tcp = dns2.createServer({ tcp: true, handle });
    const bound = await new Promise<boolean>((resolve) => {
      tcp.once('error', () => resolve(false));
      void tcp.listen({ tcp: { port, address: '127.0.0.1' } }).then(() => resolve(true));
    });
    if (!bound) {
      await udp.close();
      void tcp.close();
      if (attempt === 20) throw new Error('no port free for both UDP and TCP after 20 tries');
      continue;
    }
    t.teardown(async () => {
      await udp.close();
      await tcp.close();
    });
    return { server: `127.0.0.1:${port}`, asked };
  }
}

t.test('an answer is asked once per TTL; concurrent questions share one query; names are case-insensitive', async (t) => {
  const ns = await nameServer(t);
  let clock = 1_000;
  const resolve = cachingResolver(dnsResolver([ns.server]), () => clock);
  const first = await resolve('a.known.test', 'TXT');
  t.same(first, [['v=spf1 -all']]);
  t.same(await resolve('A.Known.Test', 'TXT'), first, 'the same answer');
  t.same(ns.asked, ['a.known.test'], 'asked once');
  const together = await Promise.all(Array.from({ length: 5 }, () => resolve('b.known.test', 'TXT')));
  t.ok(together.every((a) => JSON.stringify(a) === JSON.stringify(first)));
  t.equal(ns.asked.filter((n) => n === 'b.known.test').length, 1, 'five at once: one query');
  clock += CACHE_TTL_MS - 1;
  await resolve('a.known.test', 'TXT');
  t.equal(ns.asked.filter((n) => n === 'a.known.test').length, 1, 'within the TTL: from the cache');
  clock += 2;
  await resolve('a.known.test', 'TXT');
  t.equal(ns.asked.filter((n) => n === 'a.known.test').length, 2, 'after the TTL: asked again');
});

t.test('no such name is kept like an answer; a server failure is not', async (t) => {
  const ns = await nameServer(t);
  let clock = 0;
  const resolve = cachingResolver(dnsResolver([ns.server]), () => clock);
  for (let i = 0; i < 3; i++) await t.rejects(resolve('missing.test', 'TXT'), { code: 'ENOTFOUND' });
  t.equal(ns.asked.filter((n) => n === 'missing.test').length, 1, 'NXDOMAIN asked once');
  await t.rejects(resolve('flaky.test', 'TXT'), { code: 'ESERVFAIL' });
  t.same(await resolve('flaky.test', 'TXT'), [['ok']], 'after a failure the next question asks again');
  t.same(await resolve('flaky.test', 'TXT'), [['ok']]);
  t.equal(ns.asked.filter((n) => n === 'flaky.test').length, 2, 'the answer after it is kept');
  clock += CACHE_TTL_MS + 1;
  await t.rejects(resolve('missing.test', 'TXT'), { code: 'ENOTFOUND' });
  t.equal(ns.asked.filter((n) => n === 'missing.test').length, 2, 'NXDOMAIN asked again after the TTL');
});

t.test('made-up names cannot grow the cache past its bound: the oldest answer goes first', async (t) => {
  const ns = await nameServer(t);
  const resolve = cachingResolver(dnsResolver([ns.server]), () => 0);
  await resolve('first.known.test', 'TXT');
  for (let i = 0; i < CACHE_ENTRIES; i += 256) await Promise.all(Array.from({ length: 256 }, (_, k) => resolve(`n${i + k}.known.test`, 'TXT')));
  await resolve('first.known.test', 'TXT');
  t.equal(ns.asked.filter((n) => n === 'first.known.test').length, 2, `after ${CACHE_ENTRIES} other names the first is asked again`);
  const recent = `n${CACHE_ENTRIES - 1}.known.test`;
  await resolve(recent, 'TXT');
  t.equal(ns.asked.filter((n) => n === recent).length, 1, 'a recent one is still kept');
});

t.test('an answer larger than the cache keeps is asked again each time', async (t) => {
  const ns = await nameServer(t);
  const resolve = cachingResolver(dnsResolver([ns.server]), () => 0);
  const first = (await resolve('big.test', 'TXT')) as unknown as string[][];
  t.ok(JSON.stringify(first).length > MAX_KEPT_CHARS, 'the record is larger than the cache keeps');
  const once = ns.asked.filter((n) => n === 'big.test').length; // over UDP, then TCP
  await resolve('big.test', 'TXT');
  t.equal(ns.asked.filter((n) => n === 'big.test').length, 2 * once, 'not kept: asked again');
});

t.test('names compare case-insensitively in ASCII only, and each caller gets its own error', async (t) => {
  const ns = await nameServer(t);
  const resolve = cachingResolver(dnsResolver([ns.server]), () => 0);
  await t.rejects(resolve('xΣ1.example', 'TXT'));
  await t.rejects(resolve('xς1.example', 'TXT'));
  t.equal(ns.asked.length, 2, 'a Greek capital sigma and a final sigma are different names to DNS: two questions');
  const [a, b] = await Promise.allSettled([resolve('gone.test', 'TXT'), resolve('gone.test', 'TXT')]);
  const [ea, eb] = [(a as PromiseRejectedResult).reason as Error & { code: string; spfResult?: unknown }, (b as PromiseRejectedResult).reason as Error & { code: string; spfResult?: unknown }];
  t.equal(ea.code, 'ENOTFOUND');
  t.not(ea, eb, 'two errors, not one shared');
  ea.spfResult = { result: 'none' };
  t.equal(eb.spfResult, undefined, 'what one caller writes on its error the other does not see');
});
