/** The sealed-object format: what the edge seals only the home's private key opens, unaltered. */
import t from 'tap';
import { CompactEncrypt, compactDecrypt, decodeProtectedHeader, importJWK } from 'jose';
import {
  BINARY_SEAL_MIN_BYTES,
  generateHomeKeyPair,
  isBinarySealed,
  sealInbound,
  sealMessageV2,
  sealInboundInPlace,
  SEALED_V2_MAGIC,
  openObject,
  openSealed,
  publicKeyId,
  rawMessage,
  sealedKeyId,
  sealMessage,
  sealObject,
  SealedObjectError,
  type HomeKeyPair,
  type InboundObject,
} from '../../src/edge/sealed.js';

const RAW = Buffer.from('From: alice@sender.test\r\nTo: bob@home.test\r\nSubject: quarterly numbers\r\n\r\nThe secret body.\r\n');

function payload(): InboundObject {
  return {
    version: 1,
    envelope: { mail_from: 'alice@sender.test', rcpt_to: ['bob@home.test'], client_ip: '127.0.0.1', helo: 'client.sender.test', received_at: '2025-01-02T03:04:05.678Z' },
    auth: {
      spf: { result: 'pass', domain: 'sender.test' },
      dkim: { result: 'pass', signatures: [{ domain: 'sender.test', selector: 'sel', result: 'pass', aligned: true }] },
      dmarc: { result: 'pass', policy: 'reject', domain: 'sender.test' },
      arc: { result: 'none' },
    },
    spam: null,
    raw: RAW.toString('base64'),
  };
}

const failureOf = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => null,
    (e: unknown) => e,
  );

/**
 * The error openObject rejects with (null when it opened). The streaming opener (`openSealed`,
 * given the string or its bytes) must fail the same way, with the same reason.
 */
async function openFailure(jwe: string, key: HomeKeyPair['privateJwk']): Promise<unknown> {
  const err = await failureOf(openObject(jwe, key));
  for (const input of [jwe, Buffer.from(jwe, 'utf8')]) {
    const other = await failureOf(openSealed(input, key));
    const reason = (e: unknown) => (e instanceof SealedObjectError ? e.reason : e === null ? null : 'other');
    if (reason(other) !== reason(err)) throw new Error(`openSealed failed with ${String(reason(other))}, openObject with ${String(reason(err))}`);
  }
  return err;
}

/** Flips one character inside the given segment of a compact JWE (0 header … 4 tag). */
function tamper(jwe: string, segment: number): string {
  const parts = jwe.split('.');
  const s = parts[segment];
  const i = Math.floor(s.length / 2);
  parts[segment] = s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  return parts.join('.');
}

t.test('a sealed object opens with the private key to the same payload and raw bytes', async (t) => {
  const home = await generateHomeKeyPair();
  const jwe = await sealObject(payload(), home.publicJwk);
  const opened = await openObject(jwe, home.privateJwk);
  t.same(opened, payload());
  t.ok(rawMessage(opened).equals(RAW), 'raw bytes are identical');
});

t.test('the protected header is ECDH-ES+A256KW / A256GCM with the key thumbprint as kid', async (t) => {
  const home = await generateHomeKeyPair();
  const jwe = await sealObject(payload(), home.publicJwk);
  const header = decodeProtectedHeader(jwe);
  t.equal(header.alg, 'ECDH-ES+A256KW');
  t.equal(header.enc, 'A256GCM');
  t.equal(header.kid, await publicKeyId(home.publicJwk));
  t.equal(sealedKeyId(jwe), header.kid, 'sealedKeyId reads it without the private key');
  t.equal(jwe.split('.').length, 5, 'compact serialization');
});

t.test('the sealed text does not contain the message in the clear', async (t) => {
  const home = await generateHomeKeyPair();
  const jwe = await sealObject(payload(), home.publicJwk);
  for (const needle of ['quarterly numbers', 'The secret body', 'alice@sender.test', RAW.toString('base64').slice(0, 24)]) {
    t.notOk(jwe.includes(needle), `no "${needle}"`);
  }
});

t.test('generateHomeKeyPair returns an X25519 public JWK without private parts and a private JWK with d', async (t) => {
  const home = await generateHomeKeyPair();
  t.same(Object.keys(home.publicJwk).sort(), ['crv', 'kty', 'x']);
  t.match(home.publicJwk, { kty: 'OKP', crv: 'X25519', x: /^[A-Za-z0-9_-]{43}$/ });
  t.match(home.privateJwk, { kty: 'OKP', crv: 'X25519', x: home.publicJwk.x, d: /^[A-Za-z0-9_-]{43}$/ });
});

for (const [segment, name] of [
  [0, 'protected header'],
  [1, 'encrypted key'],
  [2, 'IV'],
  [3, 'ciphertext'],
  [4, 'authentication tag'],
] as const) {
  t.test(`a JWE with an altered ${name} does not open`, async (t) => {
    const home = await generateHomeKeyPair();
    const jwe = await sealObject(payload(), home.publicJwk);
    const err = await openFailure(tamper(jwe, segment), home.privateJwk);
    t.ok(err instanceof SealedObjectError, 'a SealedObjectError');
    t.match(err, { reason: /^(decrypt_failed|malformed)$/ });
  });
}

t.test('a JWE does not open with another home key (decrypt_failed)', async (t) => {
  const home = await generateHomeKeyPair();
  const other = await generateHomeKeyPair();
  const jwe = await sealObject(payload(), home.publicJwk);
  const err = await openFailure(jwe, other.privateJwk);
  t.ok(err instanceof SealedObjectError);
  t.match(err, { reason: 'decrypt_failed' });
});

t.test('text that is not a compact JWE is reported as malformed', async (t) => {
  const home = await generateHomeKeyPair();
  t.match(await openFailure('not a jwe at all', home.privateJwk), { reason: 'malformed' });
  t.equal(sealedKeyId('not a jwe at all'), null);
});

t.test('a JWE whose content is not the inbound object shape is refused (invalid_payload)', async (t) => {
  const home = await generateHomeKeyPair();
  const wrong = { ...payload(), version: 2 } as unknown as InboundObject;
  const jwe = await sealObject(wrong, home.publicJwk);
  t.match(await openFailure(jwe, home.privateJwk), { reason: 'invalid_payload' });
});

// The sealer and opener use node:crypto directly; jose is the reference implementation of the format.

t.test('what the edge seals, jose opens to the same payload with the documented header', async (t) => {
  const home = await generateHomeKeyPair();
  const jwe = await sealObject(payload(), home.publicJwk);
  const { plaintext, protectedHeader } = await compactDecrypt(jwe, await importJWK(home.privateJwk, 'ECDH-ES+A256KW'), {
    keyManagementAlgorithms: ['ECDH-ES+A256KW'],
    contentEncryptionAlgorithms: ['A256GCM'],
  });
  t.same(JSON.parse(Buffer.from(plaintext).toString('utf8')), payload());
  t.same(Object.keys(protectedHeader), ['alg', 'enc', 'cty', 'kid', 'epk']);
  t.match(protectedHeader.epk, { kty: 'OKP', crv: 'X25519', x: /^[A-Za-z0-9_-]{43}$/ });
});

t.test('what jose seals in the format (also with apu/apv), the home opens', async (t) => {
  const home = await generateHomeKeyPair();
  const publicKey = await importJWK({ ...home.publicJwk }, 'ECDH-ES+A256KW');
  for (const extra of [{}, { apu: Buffer.from('edge'), apv: Buffer.from('home') }]) {
    const jwe = await new CompactEncrypt(Buffer.from(JSON.stringify(payload())))
      .setProtectedHeader({ alg: 'ECDH-ES+A256KW', enc: 'A256GCM', cty: 'svc-inbound+json', kid: await publicKeyId(home.publicJwk) })
      .setKeyManagementParameters(extra)
      .encrypt(publicKey);
    t.same(await openObject(jwe, home.privateJwk), payload(), Object.keys(extra).length ? 'with apu/apv' : 'plain');
  }
});

t.test('a header with another algorithm, compression or a critical extension is malformed', async (t) => {
  const home = await generateHomeKeyPair();
  const jwe = await sealObject(payload(), home.publicJwk);
  const [header, ...rest] = jwe.split('.');
  const fields = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as Record<string, unknown>;
  for (const [what, change] of [
    ['alg ECDH-ES', { alg: 'ECDH-ES' }],
    ['enc A128GCM', { enc: 'A128GCM' }],
    ['zip', { zip: 'DEF' }],
    ['crit', { crit: ['exp'], exp: 1 }],
    ['an epk on another curve', { epk: { kty: 'OKP', crv: 'Ed25519', x: (fields.epk as { x: string }).x } }],
    ['no epk', { epk: undefined }],
  ] as const) {
    const changed = Buffer.from(JSON.stringify({ ...fields, ...change })).toString('base64url');
    t.match(await openFailure([changed, ...rest].join('.'), home.privateJwk), { reason: 'malformed' }, what);
  }
  t.match(await openFailure(jwe.replace(/\.[^.]*$/, '.AAAA'), home.privateJwk), { reason: 'malformed' }, 'a short tag');
  t.match(await openFailure(`${jwe}.`, home.privateJwk), { reason: 'malformed' }, 'six segments');
});

t.test('an ephemeral key of low order does not open (decrypt_failed)', async (t) => {
  const home = await generateHomeKeyPair();
  const jwe = await sealObject(payload(), home.publicJwk);
  const [header, ...rest] = jwe.split('.');
  const fields = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as Record<string, unknown>;
  const zero = Buffer.from(JSON.stringify({ ...fields, epk: { kty: 'OKP', crv: 'X25519', x: Buffer.alloc(32).toString('base64url') } })).toString('base64url');
  const err = await openFailure([zero, ...rest].join('.'), home.privateJwk);
  t.ok(err instanceof SealedObjectError);
  t.match(err, { reason: /^(decrypt_failed|malformed)$/ });
});

// Large messages are sealed from bytes into bytes and opened chunk by chunk (issue 16, finding 9);
// the object is the same v1 JWE, so every opener reads what every sealer wrote.

function metaOf(p: InboundObject): Omit<InboundObject, 'raw'> {
  const { raw: _raw, ...meta } = p;
  return meta;
}

/** Sizes around the 3-byte groups of base64 and the 12 KiB chunks of the streaming code (786,432 is 64 of them). */
const SIZES = [0, 1, 2, 3, 4, 5, 786_431, 786_432, 786_433, 2 * 786_432 + 2, 3_000_001];

function bytesOfSize(n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 131 + (i >> 8)) & 0xff;
  return b;
}

t.test('sealMessage writes the same v1 JWE: jose, openObject and openSealed all read it', async (t) => {
  const home = await generateHomeKeyPair();
  const joseKey = await importJWK(home.privateJwk, 'ECDH-ES+A256KW');
  for (const n of SIZES) {
    const raw = bytesOfSize(n);
    const expected = { ...payload(), raw: raw.toString('base64') };
    const sealed = await sealMessage(metaOf(expected), raw, home.publicJwk);
    t.ok(Buffer.isBuffer(sealed), `${n} bytes: sealed as bytes`);
    const jwe = sealed.toString('latin1');
    t.equal(sealedKeyId(jwe), await publicKeyId(home.publicJwk), `${n} bytes: kid`);
    const { plaintext } = await compactDecrypt(jwe, joseKey, { keyManagementAlgorithms: ['ECDH-ES+A256KW'], contentEncryptionAlgorithms: ['A256GCM'] });
    t.same(JSON.parse(Buffer.from(plaintext).toString('utf8')), expected, `${n} bytes: jose reads the payload`);
    t.same(await openObject(jwe, home.privateJwk), expected, `${n} bytes: openObject reads it`);
    const opened = await openSealed(sealed, home.privateJwk);
    t.same(opened.meta, metaOf(expected), `${n} bytes: openSealed metadata`);
    t.ok(opened.raw.equals(raw), `${n} bytes: openSealed raw bytes`);
    // Small buffers come from Node's shared pool either way; only large ones are worth moving.
    if (n >= 4096) t.equal(opened.raw.byteLength, opened.raw.buffer.byteLength, `${n} bytes: the raw bytes own their memory (transferable)`);
  }
});

t.test('openSealed reads what sealObject and jose seal, from the string or the bytes', async (t) => {
  const home = await generateHomeKeyPair();
  const raw = bytesOfSize(1_000_003);
  const expected = { ...payload(), raw: raw.toString('base64') };
  const jwe = await sealObject(expected, home.publicJwk);
  for (const input of [jwe, Buffer.from(jwe), ` ${jwe}\r\n`]) {
    const opened = await openSealed(input, home.privateJwk);
    t.same(opened.meta, metaOf(expected));
    t.ok(opened.raw.equals(raw), 'raw bytes are identical');
  }
});

t.test('JSON the edge would not write (raw first, escapes, a repeated raw) means what JSON.parse says', async (t) => {
  const home = await generateHomeKeyPair();
  const publicKey = await importJWK({ ...home.publicJwk }, 'ECDH-ES+A256KW');
  const seal = (json: string) =>
    new CompactEncrypt(Buffer.from(json))
      .setProtectedHeader({ alg: 'ECDH-ES+A256KW', enc: 'A256GCM', cty: 'svc-inbound+json' })
      .encrypt(publicKey);
  const meta = metaOf(payload());
  const b64 = RAW.toString('base64');
  const cases: [string, string][] = [
    ['raw first', `{"raw":"${b64}",${JSON.stringify(meta).slice(1)}`],
    ['raw with an escape', JSON.stringify({ ...meta, raw: '' }).replace('"raw":""', `"raw":"\\u00${b64.charCodeAt(0).toString(16)}${b64.slice(1)}"`)],
    ['an escaped key', JSON.stringify({ ...meta, raw: '' }).replace('"raw":""', `"r\\u0061w":"${b64}"`)],
    ['raw repeated, the last one counts', JSON.stringify({ ...meta, raw: 'AAAA' }).replace(/}$/, `,"raw":"${b64}"}`)],
  ];
  for (const [what, json] of cases) {
    const jwe = await seal(json);
    const reference = await openObject(jwe, home.privateJwk);
    const opened = await openSealed(Buffer.from(jwe), home.privateJwk);
    t.same(opened.meta, metaOf(reference), `${what}: metadata`);
    t.ok(opened.raw.equals(rawMessage(reference)), `${what}: raw bytes as openObject reads them`);
    t.ok(opened.raw.equals(RAW), `${what}: the message`);
  }
});

t.test('a tampered large object does not open, whichever chunk was changed', async (t) => {
  const home = await generateHomeKeyPair();
  const sealed = await sealMessage(metaOf(payload()), bytesOfSize(2_000_000), home.publicJwk);
  const dots = [...sealed.keys()].filter((i) => sealed[i] === 0x2e);
  // The first, a middle and the last whole character of the ciphertext (the final one may carry bits of no byte: next test).
  for (const at of [dots[2] + 1, dots[2] + 1_500_000, dots[3] - 2]) {
    const copy = Buffer.from(sealed);
    copy[at] = copy[at] === 0x41 ? 0x42 : 0x41;
    t.match(await failureOf(openSealed(copy, home.privateJwk)), { reason: 'decrypt_failed' }, `byte ${at}`);
  }
  const bad = Buffer.from(sealed);
  bad[dots[2] + 10] = 0x2b; // '+' is base64, not base64url
  t.match(await failureOf(openSealed(bad, home.privateJwk)), { reason: 'malformed' }, 'a character outside base64url');
});

t.test('a final character whose spare bits are set is malformed for both openers, though it decodes to the same bytes', async (t) => {
  const home = await generateHomeKeyPair();
  const jwe = await sealObject(payload(), home.publicJwk);
  const parts = jwe.split('.');
  // The tag is 16 bytes: 22 characters, the last of which carries 2 bits of the tag and 4 spare ones.
  const tag = parts[4];
  t.equal(tag.length % 4, 2);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const altered = tag.slice(0, -1) + alphabet[alphabet.indexOf(tag.at(-1)!) | 1];
  t.ok(Buffer.from(altered, 'base64url').equals(Buffer.from(tag, 'base64url')), 'Node decodes both to the same tag');
  parts[4] = altered;
  t.match(await openFailure(parts.join('.'), home.privateJwk), { reason: 'malformed' });
  // A ciphertext of a length that leaves spare bits, with one of them set.
  let size = 300_000;
  let large = await sealMessage(metaOf(payload()), bytesOfSize(size), home.publicJwk);
  while (large.toString('latin1').split('.')[3].length % 4 === 0) large = await sealMessage(metaOf(payload()), bytesOfSize(++size), home.publicJwk);
  t.equal((await openSealed(large, home.privateJwk)).raw.length, size, 'unaltered, it opens');
  const dots = [...large.keys()].filter((i) => large[i] === 0x2e);
  const last = dots[3] - 1;
  const copy = Buffer.from(large);
  copy[last] = alphabet.charCodeAt(alphabet.indexOf(String.fromCharCode(copy[last])) | 1);
  t.match(await failureOf(openSealed(copy, home.privateJwk)), { reason: 'malformed' }, 'a ciphertext ending in a non-canonical character');
});

t.test('a non-ASCII character in a sealed string is malformed for both openers', async (t) => {
  const home = await generateHomeKeyPair();
  const jwe = await sealObject(payload(), home.publicJwk);
  const parts = jwe.split('.');
  // U+0141 has the low byte of 'A': read as latin1 it would fold onto a letter of the alphabet.
  parts[3] = 'Ł' + parts[3].slice(1);
  t.match(await openFailure(parts.join('.'), home.privateJwk), { reason: 'malformed' });
});

t.test('v2: a large message seals as binary, opens to the same metadata and bytes, and is about its own size', async (t) => {
  const home = await generateHomeKeyPair();
  const raw = bytesOfSize(BINARY_SEAL_MIN_BYTES + 1);
  const sealed = await sealInbound(metaOf(payload()), raw, home.publicJwk);
  t.ok(isBinarySealed(sealed), 'binary above the threshold');
  t.equal(sealed.subarray(0, SEALED_V2_MAGIC.length).toString('latin1'), 'svc-sealed-2\n');
  t.ok(sealed.length < raw.length + 2_000, `object ${sealed.length} bytes for a ${raw.length}-byte message`);
  t.equal(sealed.indexOf(raw.subarray(1000, 1064)), -1, 'the message is not in the clear');
  const opened = await openSealed(sealed, home.privateJwk);
  t.same(opened.meta, { ...metaOf(payload()), version: 2 });
  t.ok(opened.raw.equals(raw));
  // The header is a JWE of the documented kind, to the home's key, with its own content type.
  const headLength = sealed.readUInt32BE(SEALED_V2_MAGIC.length);
  const head = sealed.toString('latin1', SEALED_V2_MAGIC.length + 4, SEALED_V2_MAGIC.length + 4 + headLength);
  t.match(decodeProtectedHeader(head), { alg: 'ECDH-ES+A256KW', enc: 'A256GCM', cty: 'svc-inbound-head+json', kid: await publicKeyId(home.publicJwk) });
  const small = await sealInbound(metaOf(payload()), RAW, home.publicJwk);
  t.notOk(isBinarySealed(small), 'v1 up to the threshold');
  t.same((await openObject(small.toString('utf8'), home.privateJwk)).raw, RAW.toString('base64'));
});

t.test('v2: a changed byte anywhere, a body under another header, another key or a cut object does not open', async (t) => {
  const home = await generateHomeKeyPair();
  const other = await generateHomeKeyPair();
  const raw = bytesOfSize(600_000);
  const sealed = await sealMessageV2(metaOf(payload()), raw, home.publicJwk);
  const headEnd = SEALED_V2_MAGIC.length + 4 + sealed.readUInt32BE(SEALED_V2_MAGIC.length);
  for (const at of [headEnd + 10, headEnd + 300_000, sealed.length - 1]) {
    const copy = Buffer.from(sealed);
    copy[at] ^= 1;
    t.match(await failureOf(openSealed(copy, home.privateJwk)), { reason: 'decrypt_failed' }, `body byte ${at}`);
  }
  const inHead = Buffer.from(sealed);
  inHead[headEnd - 5] = inHead[headEnd - 5] === 0x41 ? 0x42 : 0x41;
  t.match(await failureOf(openSealed(inHead, home.privateJwk)), { reason: 'decrypt_failed' }, 'header tag');
  // Same size, same key: the body of one object under the header of another fails its tag.
  const second = await sealMessageV2(metaOf(payload()), raw, home.publicJwk);
  const secondHeadEnd = SEALED_V2_MAGIC.length + 4 + second.readUInt32BE(SEALED_V2_MAGIC.length);
  const spliced = Buffer.concat([sealed.subarray(0, headEnd), second.subarray(secondHeadEnd)]);
  t.match(await failureOf(openSealed(spliced, home.privateJwk)), { reason: 'decrypt_failed' }, 'spliced body');
  t.match(await failureOf(openSealed(sealed, other.privateJwk)), { reason: 'decrypt_failed' }, 'another home key');
  t.match(await failureOf(openSealed(sealed.subarray(0, sealed.length - 100), home.privateJwk)), { reason: 'malformed' }, 'cut short');
  t.match(await failureOf(openSealed(sealed.subarray(0, SEALED_V2_MAGIC.length + 2), home.privateJwk)), { reason: 'malformed' }, 'only the magic');
  const hugeHead = Buffer.from(sealed);
  hugeHead.writeUInt32BE(0xffffffff, SEALED_V2_MAGIC.length);
  t.match(await failureOf(openSealed(hugeHead, home.privateJwk)), { reason: 'malformed' }, 'a header length past the object');
  const v1AsHead = await sealObject(payload(), home.publicJwk);
  const lengthBytes = Buffer.alloc(4);
  lengthBytes.writeUInt32BE(v1AsHead.length);
  const wrongHead = Buffer.concat([SEALED_V2_MAGIC, lengthBytes, Buffer.from(v1AsHead), Buffer.alloc(16)]);
  t.match(await failureOf(openSealed(wrongHead, home.privateJwk)), { reason: 'invalid_payload' }, 'a v1 JWE where the v2 header goes');
});

t.test('v2 from the chunks a message arrived in is the same message as from one buffer', async (t) => {
  const home = await generateHomeKeyPair();
  const raw = bytesOfSize(700_001);
  const chunks = [raw.subarray(0, 1), raw.subarray(1, 65_537), raw.subarray(65_537, 400_000), raw.subarray(400_000)];
  const sealed = await sealInbound(metaOf(payload()), chunks, home.publicJwk);
  t.ok(isBinarySealed(sealed));
  t.ok((await openSealed(sealed, home.privateJwk)).raw.equals(raw));
  const small = await sealInbound(metaOf(payload()), [RAW.subarray(0, 10), RAW.subarray(10)], home.publicJwk);
  t.ok((await openSealed(small, home.privateJwk)).raw.equals(RAW), 'v1 from chunks');
});

t.test('v2 opened in place: the message is a view into the sealed bytes, equal to what was sealed, and a bad tag still fails', async (t) => {
  const home = await generateHomeKeyPair();
  const raw = bytesOfSize(BINARY_SEAL_MIN_BYTES * 3 + 7);
  const sealed = await sealInbound(metaOf(payload()), raw, home.publicJwk);
  const copy = Buffer.from(sealed);
  const opened = await openSealed(copy, home.privateJwk, { inPlace: true });
  t.ok(opened.raw.equals(raw), 'the same message');
  t.equal(opened.raw.buffer, copy.buffer, 'no second buffer of the message');
  t.same(opened.meta, { ...metaOf(payload()), version: 2 });
  const tampered = Buffer.from(sealed);
  tampered[tampered.length - 20] ^= 1;
  t.match(await failureOf(openSealed(tampered, home.privateJwk, { inPlace: true })), { reason: 'decrypt_failed' }, 'a changed body byte');
  // v1 has no in-place form: the option is ignored and a fresh buffer comes back.
  const small = await sealInbound(metaOf(payload()), RAW, home.publicJwk);
  const v1 = await openSealed(small, home.privateJwk, { inPlace: true });
  t.ok(v1.raw.equals(RAW));
});

t.test('v2 sealed in place: the parts written in order open to the message, and no part is a second copy of it', async (t) => {
  const home = await generateHomeKeyPair();
  const raw = bytesOfSize(BINARY_SEAL_MIN_BYTES * 2 + 12_345);
  const original = Buffer.from(raw);
  const chunks = [Buffer.from(raw.subarray(0, 70_000)), Buffer.from(raw.subarray(70_000, 300_001)), Buffer.from(raw.subarray(300_001))];
  const parts = await sealInboundInPlace(metaOf(payload()), chunks, home.publicJwk);
  t.equal(parts.length, chunks.length + 2, 'lead, the chunks themselves, tag');
  for (const [i, chunk] of chunks.entries()) t.equal(parts[i + 1], chunk, `part ${i + 1} is chunk ${i}, encrypted where it lies`);
  t.equal(Buffer.concat(chunks).indexOf(original.subarray(1000, 1064)), -1, 'the chunks no longer hold the message in the clear');
  const object = Buffer.concat(parts);
  t.ok(isBinarySealed(object));
  const opened = await openSealed(object, home.privateJwk);
  t.ok(opened.raw.equals(original), 'opens to the message');
  t.same(opened.meta, { ...metaOf(payload()), version: 2 });
  // Up to the threshold: v1, one part, and the caller's chunks are left as they were.
  const small = [Buffer.from(RAW.subarray(0, 10)), Buffer.from(RAW.subarray(10))];
  const smallParts = await sealInboundInPlace(metaOf(payload()), small, home.publicJwk);
  t.equal(smallParts.length, 1);
  t.ok(Buffer.concat(small).equals(RAW), 'a v1 seal does not touch the chunks');
  t.ok((await openSealed(smallParts[0], home.privateJwk)).raw.equals(RAW));
});
