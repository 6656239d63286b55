/**
 * The DNS wire format of the RFC 2136 provider (src/domains/providers/dns-message.ts): names,
 * RDATA, the UPDATE message's sections, TSIG signing, and the bounded reply reader.
 */
import t from 'tap';
import { createHmac, randomBytes } from 'node:crypto';
import { encodeName, encodeRdata, parseReply, queryMessage, signMessage, updateMessage, verifyReply, RR_TYPE } from '../../src/domains/providers/dns-message.js';

t.test('names are lower-case, uncompressed, and bounded', async (t) => {
  t.same([...encodeName('Mx.Example.COM.')], [2, 0x6d, 0x78, 7, ...Buffer.from('example'), 3, ...Buffer.from('com'), 0]);
  t.throws(() => encodeName(`${'a'.repeat(64)}.com`), /label/);
  t.throws(() => encodeName(Array(60).fill('abcd').join('.')), /255 bytes/);
});

t.test('RDATA: A, AAAA (with ::), MX, and TXT split into 255-byte strings', async (t) => {
  t.same([...encodeRdata({ type: 'A', value: '127.0.0.1' })], [127, 0, 0, 1]);
  t.equal(encodeRdata({ type: 'AAAA', value: '2001:db8::1' }).toString('hex'), '20010db8000000000000000000000001');
  t.same([...encodeRdata({ type: 'MX', value: 'mx.a.b', priority: 10 })], [0, 10, 2, 0x6d, 0x78, 1, 0x61, 1, 0x62, 0]);
  const txt = encodeRdata({ type: 'TXT', value: 'x'.repeat(300) });
  t.equal(txt[0], 255);
  t.equal(txt[256], 45);
  t.equal(txt.length, 302);
});

t.test('an UPDATE: opcode 5, one zone, deletions (class NONE) before additions (class IN)', async (t) => {
  const msg = updateMessage(0x1234, 'example.com', [{ type: 'A', name: 'mx.example.com', value: '192.0.2.1', ttl: 300 }], [{ type: 'A', name: 'old.example.com', value: '192.0.2.2', ttl: 0 }]);
  t.equal(msg.readUInt16BE(0), 0x1234);
  t.equal((msg.readUInt16BE(2) >> 11) & 0xf, 5);
  t.same([msg.readUInt16BE(4), msg.readUInt16BE(6), msg.readUInt16BE(8), msg.readUInt16BE(10)], [1, 0, 2, 0]);
  const zoneEnd = 12 + encodeName('example.com').length;
  t.equal(msg.readUInt16BE(zoneEnd), RR_TYPE.SOA);
  const del = zoneEnd + 4 + encodeName('old.example.com').length;
  t.equal(msg.readUInt16BE(del + 2), 254, 'delete one RR: class NONE');
  t.equal(msg.readUInt32BE(del + 4), 0, 'TTL 0');
});

t.test('TSIG: the signed request carries one more additional record and an HMAC-SHA256 over message + variables', async (t) => {
  const key = { name: 'svc-update', algorithm: 'hmac-sha256' as const, secret: randomBytes(32) };
  const msg = queryMessage(7, 'example.com', RR_TYPE.SOA);
  const { message, mac } = signMessage(msg, key, 1_700_000_000_000);
  t.equal(message.readUInt16BE(10), 1);
  t.equal(mac.length, 32);
  const vars = Buffer.concat([encodeName('svc-update'), Buffer.from([0, 255, 0, 0, 0, 0]), encodeName('hmac-sha256.'), Buffer.from([0, 0]), Buffer.alloc(4), Buffer.from([1, 44, 0, 0, 0, 0])]);
  vars.writeUInt32BE(1_700_000_000, vars.length - 10);
  t.same(mac, createHmac('sha256', key.secret).update(Buffer.concat([msg, vars])).digest(), 'RFC 8945 §4.3.3 MAC input');

  // A reply as a server signs it: request MAC, reply, variables; verifies, and a flipped bit does not.
  const reply = Buffer.from(msg);
  reply.writeUInt16BE(0x8400, 2);
  const replyMac = createHmac('sha256', key.secret).update(Buffer.concat([Buffer.from([0, 32]), mac, reply, vars])).digest();
  const tsigRdata = Buffer.concat([encodeName('hmac-sha256.'), Buffer.from([0, 0]), Buffer.alloc(4), Buffer.from([1, 44, 0, 32]), replyMac, Buffer.from([0, 7, 0, 0, 0, 0])]);
  tsigRdata.writeUInt32BE(1_700_000_000, encodeName('hmac-sha256.').length + 2);
  const signedReply = Buffer.concat([reply, encodeName('svc-update'), Buffer.from([0, 250, 0, 255, 0, 0, 0, 0, tsigRdata.length >> 8, tsigRdata.length & 0xff]), tsigRdata]);
  signedReply.writeUInt16BE(1, 10);
  const parsed = parseReply(signedReply);
  t.equal(verifyReply(signedReply, parsed, key, mac, 1_700_000_010_000), null, 'verifies');
  t.match(verifyReply(signedReply, parsed, key, mac, 1_700_001_000_000), /clock skew/);
  const tampered = Buffer.from(signedReply);
  tampered[3] ^= 0x01;
  t.match(verifyReply(tampered, parseReply(tampered), key, mac, 1_700_000_010_000), /does not verify/);
});

t.test('replies: compressed names are followed, answers read, limits hold', async (t) => {
  const q = queryMessage(9, 'a.test', RR_TYPE.MX);
  const head = Buffer.from(q.subarray(0, 12));
  head.writeUInt16BE(0x8400, 2);
  head.writeUInt16BE(1, 6);
  const answer = Buffer.from([0xc0, 12, 0, 15, 0, 1, 0, 0, 0, 60, 0, 7, 0, 10, 2, 0x6d, 0x78, 0xc0, 12]);
  const r = parseReply(Buffer.concat([head, q.subarray(12), answer]));
  t.same(r.answers, [{ name: 'a.test', type: 15, value: 'mx.a.test', priority: 10 }]);
  t.throws(() => parseReply(Buffer.alloc(5)), /truncated or malformed/);
  const many = Buffer.from(head);
  many.writeUInt16BE(600, 6);
  t.throws(() => parseReply(many), /at most 512/);
});
