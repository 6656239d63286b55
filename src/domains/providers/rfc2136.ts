/**
 * RFC 2136 dynamic updates signed with TSIG (RFC 8945): BIND, Knot, PowerDNS and most
 * self-hosted name servers accept them. Reads are signed queries to the same server, so what svc
 * compares with is the primary's own data, not a cache. Every request is signed, every reply's
 * TSIG is verified before its answer is believed, and each exchange is bounded in time and size
 * (./dns-message.ts WIRE_LIMITS, PROVIDER_LIMITS.timeoutMs).
 */
import net from 'node:net';
import dgram from 'node:dgram';
import { randomInt } from 'node:crypto';
import { parseReply, queryMessage, rcodeName, RR_TYPE, signMessage, updateMessage, verifyReply, WIRE_LIMITS, DnsWireError, type Reply, type TsigKey, type WireRecord } from './dns-message.js';
import { DnsProviderError, PROVIDER_LIMITS, type DnsProvider } from './provider.js';

export interface Rfc2136Settings {
  server: string;
  port: number;
  transport: 'tcp' | 'udp';
  key: TsigKey;
}

/** Exchanges one message over TCP (2-byte length prefix, RFC 1035 §4.2.2); the reply is read up to its length, never more. */
function overTcp(host: string, port: number, message: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    const chunks: Buffer[] = [];
    let have = 0;
    const done = (err: Error | null, value?: Buffer) => {
      socket.destroy();
      if (err) reject(err);
      else resolve(value!);
    };
    socket.setTimeout(PROVIDER_LIMITS.timeoutMs, () => done(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    socket.on('error', (err) => done(err));
    socket.on('connect', () => socket.write(Buffer.concat([Buffer.from([message.length >> 8, message.length & 0xff]), message])));
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      have += chunk.length;
      if (have < 2) return;
      const all = Buffer.concat(chunks);
      const length = all.readUInt16BE(0);
      if (have >= 2 + length) done(null, all.subarray(2, 2 + length));
      else if (have > WIRE_LIMITS.messageBytes + 2) done(new DnsWireError('The DNS reply is larger than a DNS message can be.'));
    });
    socket.on('end', () => done(Object.assign(new Error('closed'), { code: 'ECONNRESET' })));
  });
}

/** Exchanges one datagram; only a reply from the server with the request's ID is taken. */
function overUdp(host: string, port: number, message: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIP(host) === 6 ? 'udp6' : 'udp4');
    const id = message.readUInt16BE(0);
    const timer = setTimeout(() => done(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })), PROVIDER_LIMITS.timeoutMs);
    const done = (err: Error | null, value?: Buffer) => {
      clearTimeout(timer);
      socket.close();
      if (err) reject(err);
      else resolve(value!);
    };
    socket.on('error', (err) => done(err));
    socket.on('message', (msg) => {
      if (msg.length >= 2 && msg.readUInt16BE(0) === id) done(null, msg);
    });
    socket.send(message, port, host);
  });
}

export class Rfc2136Provider implements DnsProvider {
  readonly label: string;

  constructor(private readonly s: Rfc2136Settings) {
    this.label = `the DNS server ${s.server.includes(':') ? `[${s.server}]` : s.server}:${s.port} (RFC 2136, key ${s.key.name})`;
  }

  /** Sends a signed message and returns the verified reply; a transport failure, a bad signature or an unreadable reply throws. */
  private async exchange(message: Buffer, what: string): Promise<Reply> {
    const signed = signMessage(message, this.s.key);
    let raw: Buffer;
    let reply: Reply;
    try {
      raw = this.s.transport === 'udp' && message.length <= 512 ? await overUdp(this.s.server, this.s.port, signed.message) : await overTcp(this.s.server, this.s.port, signed.message);
      reply = parseReply(raw);
      if (reply.truncated && this.s.transport === 'udp') {
        raw = await overTcp(this.s.server, this.s.port, signed.message);
        reply = parseReply(raw);
      }
    } catch (err) {
      if (err instanceof DnsWireError) throw new DnsProviderError(`${what} at ${this.label} failed: ${err.message}`);
      throw new DnsProviderError(`${what} at ${this.label} failed: ${(err as NodeJS.ErrnoException).code ?? 'network error'}. Check that the server runs and accepts ${this.s.transport.toUpperCase()} from this host.`);
    }
    if (reply.id !== message.readUInt16BE(0) || !reply.isResponse) throw new DnsProviderError(`${what} at ${this.label} failed: the reply does not answer the request.`);
    const bad = verifyReply(raw, reply, this.s.key, signed.mac);
    if (bad) {
      const keyHint = reply.tsig && reply.tsig.error !== 0 ? ' Check the key name, algorithm and secret against the server\'s key (and the clocks, for BADTIME).' : ' The reply may not come from the server holding the key.';
      throw new DnsProviderError(`${what} at ${this.label} failed: ${bad}${reply.rcode !== 0 ? ` (${rcodeName(reply.rcode)})` : ''}.${keyHint}`);
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
