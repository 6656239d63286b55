/**
 * DNS messages as the RFC 2136 provider needs them (RFC 1035, RFC 2136, RFC 8945): a query, an
 * UPDATE that adds and deletes single RRs, TSIG signing of a request and verification of the
 * reply's TSIG, and a reader of replies. Written here rather than taken from npm: no package on
 * the registry both builds UPDATE messages and signs/verifies TSIG (dns-packet has neither UPDATE
 * sections nor TSIG; dns2 neither). Every read is bounds-checked and every loop has a named limit,
 * so a hostile reply costs at most one 64 KiB message walked once.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

export const RR_TYPE = { A: 1, SOA: 6, MX: 15, TXT: 16, AAAA: 28, TSIG: 250 } as const;
export type RecordTypeName = 'A' | 'AAAA' | 'MX' | 'TXT';
const CLASS_IN = 1;
const CLASS_NONE = 254;
const CLASS_ANY = 255;
const OPCODE_UPDATE = 5;

/** Limits of what is read from a reply. */
export const WIRE_LIMITS = {
  /** A DNS message over TCP is at most 65535 bytes (its 2-byte length). */
  messageBytes: 65_535,
  /** Records read from one reply across all sections; a real answer here has a handful. */
  records: 512,
  /** Compression pointers followed in one name (a loop of pointers stops here). */
  pointerHops: 64,
  /** Wire length of a name (RFC 1035 §2.3.4). */
  nameBytes: 255,
  /** Seconds a TSIG time may differ from ours (RFC 8945 recommends 300). */
  fudge: 300,
} as const;

export const RCODE_NAMES: Record<number, string> = {
  0: 'NOERROR', 1: 'FORMERR', 2: 'SERVFAIL', 3: 'NXDOMAIN', 4: 'NOTIMP', 5: 'REFUSED', 6: 'YXDOMAIN', 7: 'YXRRSET', 8: 'NXRRSET', 9: 'NOTAUTH', 10: 'NOTZONE',
  16: 'BADSIG', 17: 'BADKEY', 18: 'BADTIME', 22: 'BADTRUNC',
};
export const rcodeName = (code: number) => RCODE_NAMES[code] ?? `RCODE ${code}`;

export class DnsWireError extends Error {}

/** One resource record as svc publishes it. `name` fully qualified, no trailing dot; MX `value` is the host. */
export interface WireRecord {
  type: RecordTypeName;
  name: string;
  value: string;
  priority?: number;
  ttl: number;
}

export interface TsigKey {
  /** The key's name as the server knows it (e.g. `svc-update`). */
  name: string;
  algorithm: 'hmac-sha256' | 'hmac-sha512';
  secret: Buffer;
}

const u16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const u32 = (n: number) => Buffer.from([(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);

/** A name in uncompressed, lower-case wire form (the canonical form TSIG needs, RFC 8945 §4.3.3). */
export function encodeName(name: string): Buffer {
  const trimmed = name.replace(/\.$/, '');
  const parts: Buffer[] = [];
  for (const label of trimmed === '' ? [] : trimmed.split('.')) {
    const bytes = Buffer.from(label.toLowerCase(), 'ascii');
    if (bytes.length === 0 || bytes.length > 63) throw new DnsWireError(`The name ${name} has an empty or over-long label.`);
    parts.push(Buffer.from([bytes.length]), bytes);
  }
  parts.push(Buffer.from([0]));
  const out = Buffer.concat(parts);
  if (out.length > WIRE_LIMITS.nameBytes) throw new DnsWireError(`The name ${name} is longer than 255 bytes.`);
  return out;
}

/** A TXT value as character-strings of at most 255 bytes (RFC 1035 §3.3.14). */
function txtRdata(value: string): Buffer {
  const bytes = Buffer.from(value, 'utf8');
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length || i === 0; i += 255) {
    const chunk = bytes.subarray(i, i + 255);
    parts.push(Buffer.from([chunk.length]), chunk);
    if (bytes.length === 0) break;
  }
  return Buffer.concat(parts);
}

function ipv6Bytes(address: string): Buffer {
  // Expand `::` into the missing zero groups; an embedded IPv4 tail becomes two groups.
  let text = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const b = v4[1].split('.').map(Number);
    text = `${text.slice(0, -v4[1].length)}${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const h = head ? head.split(':') : [];
  const t = tail === null ? [] : tail ? tail.split(':') : [];
  const groups = tail === null ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.concat(groups.map((g) => u16(parseInt(g, 16))));
}

export function encodeRdata(r: Pick<WireRecord, 'type' | 'value' | 'priority'>): Buffer {
  switch (r.type) {
    case 'A':
      if (isIP(r.value) !== 4) throw new DnsWireError(`${r.value} is not an IPv4 address.`);
      return Buffer.from(r.value.split('.').map(Number));
    case 'AAAA':
      if (isIP(r.value) !== 6) throw new DnsWireError(`${r.value} is not an IPv6 address.`);
      return ipv6Bytes(r.value);
    case 'MX':
      return Buffer.concat([u16(r.priority ?? 10), encodeName(r.value)]);
    case 'TXT':
      return txtRdata(r.value);
  }
}

function resourceRecord(name: string, type: number, cls: number, ttl: number, rdata: Buffer): Buffer {
  return Buffer.concat([encodeName(name), u16(type), u16(cls), u32(ttl), u16(rdata.length), rdata]);
}

function header(id: number, flags: number, counts: [number, number, number, number]): Buffer {
  return Buffer.concat([u16(id), u16(flags), ...counts.map(u16)]);
}

/** A query for `name`/`type`, recursion not desired (the server is asked about its own zone). */
export function queryMessage(id: number, name: string, type: number): Buffer {
  return Buffer.concat([header(id, 0, [1, 0, 0, 0]), encodeName(name), u16(type), u16(CLASS_IN)]);
}

/**
 * An UPDATE of `zone` (RFC 2136 §2): no prerequisites; each deletion removes exactly one RR
 * (class NONE, §2.5.4), each addition adds one (§2.5.1). Adding an RR that exists is a no-op on
 * the server, deleting one that does not exist too, so a repeated UPDATE changes nothing.
 */
export function updateMessage(id: number, zone: string, adds: WireRecord[], deletes: WireRecord[]): Buffer {
  const updates = [
    ...deletes.map((r) => resourceRecord(r.name, RR_TYPE[r.type], CLASS_NONE, 0, encodeRdata(r))),
    ...adds.map((r) => resourceRecord(r.name, RR_TYPE[r.type], CLASS_IN, r.ttl, encodeRdata(r))),
  ];
  return Buffer.concat([header(id, OPCODE_UPDATE << 11, [1, 0, updates.length, 0]), encodeName(zone), u16(RR_TYPE.SOA), u16(CLASS_IN), ...updates]);
}

// ---- TSIG (RFC 8945) ----

const algorithmName = (a: TsigKey['algorithm']) => `${a}.`;
const hashOf = (a: TsigKey['algorithm']) => (a === 'hmac-sha512' ? 'sha512' : 'sha256');

function time48(seconds: number): Buffer {
  return Buffer.concat([u16(Math.floor(seconds / 2 ** 32) & 0xffff), u32(seconds >>> 0)]);
}

/** The TSIG variables that follow the message in the MAC input (RFC 8945 §4.3.3). */
function tsigVariables(key: TsigKey, timeSigned: number, fudge: number, error: number, other: Buffer): Buffer {
  return Buffer.concat([encodeName(key.name), u16(CLASS_ANY), u32(0), encodeName(algorithmName(key.algorithm)), time48(timeSigned), u16(fudge), u16(error), u16(other.length), other]);
}

/** `message` with a TSIG RR appended (ARCOUNT + 1); returns it with the request MAC the reply's MAC covers. */
export function signMessage(message: Buffer, key: TsigKey, now = Date.now()): { message: Buffer; mac: Buffer } {
  const timeSigned = Math.floor(now / 1000);
  const mac = createHmac(hashOf(key.algorithm), key.secret).update(Buffer.concat([message, tsigVariables(key, timeSigned, WIRE_LIMITS.fudge, 0, Buffer.alloc(0))])).digest();
  const id = message.readUInt16BE(0);
  const rdata = Buffer.concat([encodeName(algorithmName(key.algorithm)), time48(timeSigned), u16(WIRE_LIMITS.fudge), u16(mac.length), mac, u16(id), u16(0), u16(0)]);
  const signed = Buffer.concat([message, resourceRecord(key.name, RR_TYPE.TSIG, CLASS_ANY, 0, rdata)]);
  signed.writeUInt16BE(message.readUInt16BE(10) + 1, 10);
  return { message: signed, mac };
}

// ---- reading a reply ----

export interface ReplyRecord {
  name: string;
  type: number;
  /** MX `priority host`, TXT strings joined, A/AAAA the address; other types empty. */
  value: string;
  priority?: number;
}

export interface TsigRecord {
  /** Where the TSIG RR starts in the reply (the MAC covers the bytes before it). */
  offset: number;
  algorithm: string;
  timeSigned: number;
  fudge: number;
  mac: Buffer;
  originalId: number;
  error: number;
  other: Buffer;
}

export interface Reply {
  id: number;
  isResponse: boolean;
  authoritative: boolean;
  truncated: boolean;
  rcode: number;
  answers: ReplyRecord[];
  tsig: TsigRecord | null;
}

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  need(n: number): void {
    if (n < 0 || this.pos + n > this.buf.length) throw new DnsWireError('The DNS reply is truncated or malformed.');
  }
  u8(): number {
    this.need(1);
    return this.buf[this.pos++];
  }
  u16(): number {
    this.need(2);
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  bytes(n: number): Buffer {
    this.need(n);
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }
  /** A possibly compressed name; at most `pointerHops` pointers and 255 bytes. */
  name(): string {
    const labels: string[] = [];
    let pos = this.pos;
    let jumped = false;
    let hops = 0;
    let length = 0;
    for (;;) {
      if (pos >= this.buf.length) throw new DnsWireError('The DNS reply has a name that runs past its end.');
      const len = this.buf[pos];
      if ((len & 0xc0) === 0xc0) {
        if (pos + 1 >= this.buf.length || ++hops > WIRE_LIMITS.pointerHops) throw new DnsWireError('The DNS reply has a looping or broken name pointer.');
        if (!jumped) this.pos = pos + 2;
        jumped = true;
        pos = ((len & 0x3f) << 8) | this.buf[pos + 1];
        continue;
      }
      if (len & 0xc0) throw new DnsWireError('The DNS reply uses an unknown label type.');
      if (len === 0) {
        if (!jumped) this.pos = pos + 1;
        break;
      }
      length += len + 1;
      if (length > WIRE_LIMITS.nameBytes || pos + 1 + len > this.buf.length) throw new DnsWireError('The DNS reply has an over-long name.');
      labels.push(this.buf.toString('latin1', pos + 1, pos + 1 + len));
      pos += 1 + len;
    }
    return labels.join('.').toLowerCase();
  }
}

function ipv6Text(b: Buffer): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i).toString(16));
  return new URL(`http://[${groups.join(':')}]`).hostname.replace(/^\[|\]$/g, '');
}

/** Reads a reply: header, question skipped, answers of the types svc publishes, and a trailing TSIG RR. */
export function parseReply(buf: Buffer): Reply {
  if (buf.length > WIRE_LIMITS.messageBytes) throw new DnsWireError('The DNS reply is larger than a DNS message can be.');
  const r = new Reader(buf);
  const id = r.u16();
  const flags = r.u16();
  const [qd, an, ns, ar] = [r.u16(), r.u16(), r.u16(), r.u16()];
  if (qd + an + ns + ar > WIRE_LIMITS.records) throw new DnsWireError(`The DNS reply claims ${qd + an + ns + ar} records; at most ${WIRE_LIMITS.records} are read.`);
  for (let i = 0; i < qd; i++) {
    r.name();
    r.bytes(4);
  }
  const answers: ReplyRecord[] = [];
  let tsig: TsigRecord | null = null;
  for (let i = 0; i < an + ns + ar; i++) {
    const offset = r.pos;
    const name = r.name();
    const type = r.u16();
    r.u16(); // class
    r.u32(); // ttl
    const rdlength = r.u16();
    r.need(rdlength);
    const end = r.pos + rdlength;
    if (i >= an + ns) {
      if (type === RR_TYPE.TSIG) {
        if (i !== an + ns + ar - 1) throw new DnsWireError('The DNS reply has a TSIG record that is not the last one.');
        const algorithm = r.name();
        const high = r.u16();
        const timeSigned = high * 2 ** 32 + r.u32();
        const fudge = r.u16();
        const mac = Buffer.from(r.bytes(r.u16()));
        const originalId = r.u16();
        const error = r.u16();
        const other = Buffer.from(r.bytes(r.u16()));
        tsig = { offset, algorithm, timeSigned, fudge, mac, originalId, error, other };
      }
      r.pos = end;
      continue;
    }
    if (i < an) {
      const answer = { name, type, value: '' } as ReplyRecord;
      if (type === RR_TYPE.A && rdlength === 4) answer.value = [...r.bytes(4)].join('.');
      else if (type === RR_TYPE.AAAA && rdlength === 16) answer.value = ipv6Text(r.bytes(16));
      else if (type === RR_TYPE.MX && rdlength >= 3) {
        answer.priority = r.u16();
        answer.value = r.name();
      } else if (type === RR_TYPE.TXT) {
        const parts: Buffer[] = [];
        while (r.pos < end) parts.push(r.bytes(r.u8()));
        answer.value = Buffer.concat(parts).toString('utf8');
      }
      if (r.pos > end) throw new DnsWireError('The DNS reply has a record longer than its length.');
      answers.push(answer);
    }
    r.pos = end;
  }
  return { id, isResponse: (flags & 0x8000) !== 0, authoritative: (flags & 0x0400) !== 0, truncated: (flags & 0x0200) !== 0, rcode: flags & 0x000f, answers, tsig };
}

/**
 * Checks the reply's TSIG against the request's MAC (RFC 8945 §5.3): null when it verifies, else
 * why not. An error reply to a request the server could not authenticate carries no MAC; its
 * TSIG error (BADKEY, BADSIG, BADTIME) is then the reason.
 */
export function verifyReply(buf: Buffer, reply: Reply, key: TsigKey, requestMac: Buffer, now = Date.now()): string | null {
  const t = reply.tsig;
  if (!t) return 'the reply is not signed';
  if (t.error !== 0) return `the server refused the TSIG key (${rcodeName(t.error)})`;
  if (t.algorithm !== algorithmName(key.algorithm).replace(/\.$/, '')) return `the reply is signed with ${t.algorithm}`;
  const unsigned = Buffer.from(buf.subarray(0, t.offset));
  unsigned.writeUInt16BE(t.originalId, 0);
  unsigned.writeUInt16BE(unsigned.readUInt16BE(10) - 1, 10);
  const expected = createHmac(hashOf(key.algorithm), key.secret)
    .update(Buffer.concat([u16(requestMac.length), requestMac, unsigned, tsigVariables(key, t.timeSigned, t.fudge, t.error, t.other)]))
    .digest();
  if (t.mac.length !== expected.length || !timingSafeEqual(t.mac, expected)) return 'the reply\'s TSIG signature does not verify';
  if (Math.abs(Math.floor(now / 1000) - t.timeSigned) > t.fudge) return 'the reply\'s TSIG time is outside the allowed clock skew';
  return null;
}
