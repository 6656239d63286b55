/**
 * RFC 2136 dynamic updates signed with TSIG (RFC 8945): BIND, Knot, PowerDNS and most
 * self-hosted name servers accept them. Reads are signed queries to the same server, so what svc
 * compares with is the primary's own data, not a cache. Every request is signed, every reply's
 * TSIG is verified before its answer is believed, and each exchange is bounded in time and size
 * (./dns-message.ts WIRE_LIMITS, PROVIDER_LIMITS.timeoutMs).
 */
import net from 'node:net';
import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { randomInt } from 'node:crypto';
import { parseReply, queryMessage, rcodeName, RR_TYPE, signMessage, updateMessage, verifyReply, WIRE_LIMITS, DnsWireError, type Reply, type TsigKey, type WireRecord } from './dns-message.js';
import { DnsProviderError, PROVIDER_LIMITS, type DnsProvider } from './provider.js';

export interface Rfc2136Settings {
  server: string;
  port: number;
  transport: 'tcp' | 'udp';
  key: TsigKey;
}

const timedOut = () => Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' });

/**
 * Exchanges one message over TCP (2-byte length prefix, RFC 1035 §4.2.2). The reply is read into
 * a buffer of its announced length, never more, and the whole exchange has a wall-clock deadline
 * (PROVIDER_LIMITS.timeoutMs): a server that trickles a byte now and then is cut off there.
 */
function overTcp(host: string, port: number, message: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    const prefix = Buffer.alloc(2);
    let prefixHave = 0;
    let body: Buffer | null = null;
    let have = 0;
    let finished = false;
    const done = (err: Error | null, value?: Buffer) => {
      if (finished) return;
      finished = true;
      clearTimeout(deadline);
      socket.destroy();
      if (err) reject(err);
      else resolve(value!);
    };
    const deadline = setTimeout(() => done(timedOut()), PROVIDER_LIMITS.timeoutMs);
    socket.on('error', (err) => done(err));
    socket.on('connect', () => socket.write(Buffer.concat([Buffer.from([message.length >> 8, message.length & 0xff]), message])));
    socket.on('data', (chunk: Buffer) => {
      let at = 0;
      while (prefixHave < 2 && at < chunk.length) prefix[prefixHave++] = chunk[at++];
      if (prefixHave < 2) return;
      if (!body) {
        const length = prefix.readUInt16BE(0);
        if (length > WIRE_LIMITS.messageBytes) return done(new DnsWireError('The DNS reply is larger than a DNS message can be.'));
        body = Buffer.alloc(length);
      }
      const take = Math.min(chunk.length - at, body.length - have);
      chunk.copy(body, have, at, at + take);
      have += take;
      if (have === body.length) done(null, body);
    });
    socket.on('end', () => done(Object.assign(new Error('closed'), { code: 'ECONNRESET' })));
  });
}

/**
 * Exchanges one datagram. Only a datagram from the server's own address and port is looked at,
 * and one that `accept` refuses (another ID, a TSIG that does not verify: a spoofer's) is
 * skipped: the exchange keeps waiting until the deadline for the real reply. At the deadline the
 * last refusal, if any, is the error.
 */
async function overUdp(host: string, port: number, message: Buffer, accept: (msg: Buffer) => string | null): Promise<Buffer> {
  const address = net.isIP(host) ? host : (await lookup(host)).address;
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIP(address) === 6 ? 'udp6' : 'udp4');
    let refused: string | null = null;
    let finished = false;
    const done = (err: Error | null, value?: Buffer) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.close();
      if (err) reject(err);
      else resolve(value!);
    };
    const timer = setTimeout(() => done(refused ? new DnsWireError(refused) : timedOut()), PROVIDER_LIMITS.timeoutMs);
    socket.on('error', (err) => done(err));
    socket.on('message', (msg, rinfo) => {
      if (rinfo.port !== port || !sameAddress(rinfo.address, address)) return;
      const why = accept(msg);
      if (why === null) done(null, msg);
      else refused = why;
    });
    socket.send(message, port, address);
  });
}

const sameAddress = (a: string, b: string) => a.replace(/^::ffff:/i, '').toLowerCase() === b.replace(/^::ffff:/i, '').toLowerCase();

export class Rfc2136Provider implements DnsProvider {
  readonly label: string;

  constructor(private readonly s: Rfc2136Settings) {
    this.label = `the DNS server ${s.server.includes(':') ? `[${s.server}]` : s.server}:${s.port} (RFC 2136, key ${s.key.name})`;
  }

  /** Why a reply cannot be believed (another ID, not a response, a TSIG that does not verify), or null. */
  private rejection(raw: Buffer, reply: Reply, request: Buffer, mac: Buffer): string | null {
    if (reply.id !== request.readUInt16BE(0) || !reply.isResponse) return 'the reply does not answer the request.';
    const bad = verifyReply(raw, reply, this.s.key, mac);
    if (!bad) return null;
    const keyHint = reply.tsig && reply.tsig.error !== 0 ? ' Check the key name, algorithm and secret against the server\'s key (and the clocks, for BADTIME).' : ' The reply may not come from the server holding the key.';
    return `${bad}${reply.rcode !== 0 ? ` (${rcodeName(reply.rcode)})` : ''}.${keyHint}`;
  }

  /** Sends a signed message and returns the verified reply; a transport failure, a bad signature or an unreadable reply throws. */
  private async exchange(message: Buffer, what: string): Promise<Reply> {
    let reply: Reply;
    let raw: Buffer;
    try {
      // Inside the try: a name the encoder refuses is this exchange's error, not an unexpected one.
      const signed = signMessage(message, this.s.key);
      // A truncated UDP reply is only a cue to ask again over TCP, whose reply is verified.
      const judge = (buf: Buffer, udp = false): { reply: Reply; bad: string | null } => {
        const r = parseReply(buf);
        return { reply: r, bad: udp && r.truncated && r.id === message.readUInt16BE(0) && r.isResponse ? null : this.rejection(buf, r, message, signed.mac) };
      };
      if (this.s.transport === 'udp' && message.length <= 512) {
        raw = await overUdp(this.s.server, this.s.port, signed.message, (buf) => {
          try {
            return judge(buf, true).bad;
          } catch (err) {
            return err instanceof DnsWireError ? err.message : 'the reply cannot be read.';
          }
        });
        reply = parseReply(raw);
        if (reply.truncated) raw = await overTcp(this.s.server, this.s.port, signed.message);
      } else {
        raw = await overTcp(this.s.server, this.s.port, signed.message);
      }
      const judged = judge(raw);
      reply = judged.reply;
      if (judged.bad) throw new DnsProviderError(`${what} at ${this.label} failed: ${judged.bad}`);
    } catch (err) {
      if (err instanceof DnsProviderError) throw err;
      if (err instanceof DnsWireError) throw new DnsProviderError(`${what} at ${this.label} failed: ${err.message}`);
      throw new DnsProviderError(`${what} at ${this.label} failed: ${(err as NodeJS.ErrnoException).code ?? 'network error'}. Check that the server runs and accepts ${this.s.transport.toUpperCase()} from this host.`, { unreachable: true });
    }
    return reply;
  }

  async existing(zone: string, name: string, type: WireRecord['type']): Promise<WireRecord[]> {
    const reply = await this.exchange(queryMessage(randomInt(0x10000), name, RR_TYPE[type]), `Reading ${type} ${name}`);
    if (reply.rcode === 3) return [];
    if (reply.rcode !== 0) throw new DnsProviderError(`Reading ${type} ${name} at ${this.label} failed: ${rcodeName(reply.rcode)}${reply.rcode === 5 ? `; does the server serve the zone ${zone} and allow this key to query it?` : '.'}`);
    return reply.answers
      .filter((a) => a.type === RR_TYPE[type] && a.name === name.toLowerCase())
      .map((a) => ({ type, name, value: a.value, ...(a.priority !== undefined ? { priority: a.priority } : {}), ttl: 0 }));
  }

  private async update(zone: string, adds: WireRecord[], deletes: WireRecord[]): Promise<void> {
    const what = adds.length ? `Adding ${adds.length} records to ${zone}` : `Removing ${deletes.length} records from ${zone}`;
    const reply = await this.exchange(updateMessage(randomInt(0x10000), zone, adds, deletes), what);
    if (reply.rcode === 0) return;
    const hints: Record<number, string> = {
      5: 'the server refused it: allow updates of this zone with this key (BIND: update-policy or allow-update; Knot: an acl with action update).',
      9: `the server is not authoritative for ${zone}, or does not accept the key: check \`zones\`.`,
      10: `a record is outside the zone ${zone}: check \`zones\`.`,
      4: 'the server does not support dynamic updates.',
    };
    throw new DnsProviderError(`${what} at ${this.label} failed with ${rcodeName(reply.rcode)}: ${hints[reply.rcode] ?? 'see the server\'s log.'}`);
  }

  add(zone: string, records: WireRecord[]): Promise<void> {
    return this.update(zone, records, []);
  }

  remove(zone: string, records: WireRecord[]): Promise<void> {
    return this.update(zone, [], records);
  }

  async check(zone: string): Promise<void> {
    const reply = await this.exchange(queryMessage(randomInt(0x10000), zone, RR_TYPE.SOA), `Reading the SOA of ${zone}`);
    if (reply.rcode !== 0 || !reply.authoritative || !reply.answers.some((a) => a.type === RR_TYPE.SOA)) {
      throw new DnsProviderError(`${this.label} does not serve the zone ${zone} (${reply.rcode !== 0 ? rcodeName(reply.rcode) : 'no authoritative SOA'}). Set \`zones\` to the zone the domain is in.`);
    }
  }
}
