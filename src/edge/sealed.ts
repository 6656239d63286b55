/**
 * The sealed-object formats shared by the edge (which seals) and the home (which opens). See
 * docs/edge.md for the field list.
 *
 * v1 (every message up to BINARY_SEAL_MIN_BYTES): `{version, envelope, auth, spam, raw}` as JSON,
 * the raw message base64 inside, encrypted as one compact JWE (`ECDH-ES+A256KW`, `A256GCM`) to the
 * home's X25519 public key. The protected header carries `kid` (the key's RFC 7638 thumbprint) so
 * the home can tell, without decrypting, whether an object was sealed to its current key.
 *
 * v2 (larger messages, issue 16 finding 9): binary, so the message is neither base64-encoded twice
 * nor held as text: `SEALED_V2_MAGIC`, a 4-byte big-endian length, a small compact JWE of the same
 * kind whose payload is `{version: 2, envelope, auth, spam, body: {key, iv, size}}`, then the raw
 * message encrypted with AES-256-GCM under that fresh body key (the JWE text as additional data),
 * then its 16-byte tag. Sealed and opened in place (`sealInboundInPlace`, `openSealed` with
 * `inPlace`), a large message is held once, not once more as its ciphertext.
 */
import {
  createCipheriv,
  type CipherGCM,
  createDecipheriv,
  createHash,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  KeyObject,
  randomBytes,
} from 'node:crypto';
import { calculateJwkThumbprint, decodeProtectedHeader, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { Type, type Static } from 'typebox';
import { Compile } from 'typebox/compile';

export const SEAL_ALG = 'ECDH-ES+A256KW';
export const SEAL_ENC = 'A256GCM';
/** JWE `cty`: names the payload format so a future version can be told apart before parsing. */
export const SEAL_CONTENT_TYPE = 'svc-inbound+json';
/** JWE `cty` of a v2 header: the metadata and the body key, without the message. */
export const SEAL_V2_CONTENT_TYPE = 'svc-inbound-head+json';
export const SEALED_VERSION = 1;
export const SEALED_V2_VERSION = 2;
/** The first bytes of a v2 object; a v1 object (compact JWE) starts with base64url text, never with these. */
export const SEALED_V2_MAGIC = Buffer.from('svc-sealed-2\n', 'ascii');
export { BINARY_SEAL_MIN_BYTES } from './sealed-sizes.js';
import { BINARY_SEAL_MIN_BYTES } from './sealed-sizes.js';

/** An X25519 public key as JWK. Private members (`d`) are not allowed: the edge must never hold them. */
export const X25519PublicJwk = Type.Object(
  {
    kty: Type.Literal('OKP'),
    crv: Type.Literal('X25519'),
    x: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$' }),
    kid: Type.Optional(Type.String({ maxLength: 256 })),
    alg: Type.Optional(Type.Literal(SEAL_ALG)),
    use: Type.Optional(Type.Literal('enc')),
  },
  { additionalProperties: false },
);
export type X25519PublicJwk = Static<typeof X25519PublicJwk>;

/** Authentication verdict strings, as mailauth reports them (`temperr` is folded into `temperror`). */
export const AuthVerdict = Type.Union([
  Type.Literal('pass'),
  Type.Literal('fail'),
  Type.Literal('softfail'),
  Type.Literal('neutral'),
  Type.Literal('none'),
  Type.Literal('temperror'),
  Type.Literal('permerror'),
  Type.Literal('policy'),
  Type.Literal('skipped'),
]);
export type AuthVerdict = Static<typeof AuthVerdict>;

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const InboundAuth = Type.Object({
  /** SPF for the MAIL FROM domain (or the HELO name for a null sender). */
  spf: Type.Object({ result: AuthVerdict, domain: NullableString }),
  /** `result` is `pass` when any signature passes, `none` without signatures, else the first one's result. */
  dkim: Type.Object({
    result: AuthVerdict,
    signatures: Type.Array(
      Type.Object({ domain: Type.String(), selector: NullableString, result: AuthVerdict, aligned: Type.Boolean() }),
    ),
  }),
  /** `policy` is the published policy that applies to the From domain (`none`, `quarantine`, `reject`), null without a record. */
  dmarc: Type.Object({ result: AuthVerdict, policy: NullableString, domain: NullableString }),
  arc: Type.Object({ result: AuthVerdict }),
});
export type InboundAuth = Static<typeof InboundAuth>;

/** null when no spam checker is configured. */
export const SpamVerdict = Type.Union([
  Type.Object({
    verdict: Type.Union([Type.Literal('spam'), Type.Literal('ham'), Type.Literal('unknown')]),
    score: Type.Union([Type.Number(), Type.Null()]),
    action: NullableString,
  }),
  Type.Null(),
]);
export type SpamVerdict = Static<typeof SpamVerdict>;

export const InboundEnvelope = Type.Object({
  /** MAIL FROM as given; '' for the null sender (bounces). */
  mail_from: Type.String(),
  /** Accepted recipients, lower-cased, in RCPT order. */
  rcpt_to: Type.Array(Type.String(), { minItems: 1 }),
  /** The real remote address of the SMTP session. */
  client_ip: Type.String(),
  /** The name the client gave in HELO/EHLO. */
  helo: Type.String(),
  /** RFC 3339 UTC with milliseconds: when the end of DATA arrived. */
  received_at: Type.String(),
  /**
   * Set by an edge that never sees the SMTP connection (the Cloudflare Email Worker): `client_ip`
   * and `helo` are empty and `auth` is unchecked; the home evaluates the message itself
   * (src/inbound/message-auth.ts).
   */
  via: Type.Optional(Type.Literal('cloudflare-email-routing')),
});
export type InboundEnvelope = Static<typeof InboundEnvelope>;

export const InboundObject = Type.Object({
  version: Type.Literal(SEALED_VERSION),
  envelope: InboundEnvelope,
  auth: InboundAuth,
  spam: SpamVerdict,
  /** The message exactly as received after DATA (dot-unstuffed), base64. */
  raw: Type.String(),
});
export type InboundObject = Static<typeof InboundObject>;

export interface HomeKeyPair {
  /** Keep at home only (in the database); it opens every sealed object. */
  privateJwk: JWK;
  /** Travels to the edge with `PUT /routing`. */
  publicJwk: X25519PublicJwk;
}

/** A fresh X25519 key pair for a home, both halves as JWK. */
export async function generateHomeKeyPair(): Promise<HomeKeyPair> {
  const { publicKey, privateKey } = await generateKeyPair('ECDH-ES', { crv: 'X25519', extractable: true });
  const publicJwk = await exportJWK(publicKey);
  return { privateJwk: await exportJWK(privateKey), publicJwk: { kty: 'OKP', crv: 'X25519', x: publicJwk.x as string } };
}

/** The RFC 7638 thumbprint of a public key: the `kid` every object sealed to it carries. */
export function publicKeyId(publicJwk: X25519PublicJwk): Promise<string> {
  return calculateJwkThumbprint({ kty: publicJwk.kty, crv: publicJwk.crv, x: publicJwk.x });
}

/** A recipient key prepared once (import and thumbprint) and reused for every object. */
export interface SealingKey {
  keyId: string;
  key: KeyObject;
}

export async function prepareSealingKey(publicJwk: X25519PublicJwk): Promise<SealingKey> {
  const key = createPublicKey({ key: { kty: publicJwk.kty, crv: publicJwk.crv, x: publicJwk.x }, format: 'jwk' });
  return { keyId: await publicKeyId(publicJwk), key };
}

/*
 * The JWE is built and opened with node:crypto's one-shot primitives rather than WebCrypto: the
 * same bytes (jose opens what this seals and vice versa, see test/unit/edge-sealed.test.ts) at
 * about a seventh of the CPU per message, which is what bounds ingest on a small machine.
 * ECDH-ES+A256KW (RFC 7518 §4.6): X25519 with an ephemeral key, Concat KDF (SHA-256) → a 256-bit
 * key-wrapping key, AES Key Wrap (RFC 3394) of a random content key; A256GCM for the content with
 * the encoded protected header as additional data.
 */
const CEK_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** The RFC 3394 default initial value; OpenSSL's id-aes256-wrap checks it on unwrap. */
const KEY_WRAP_IV = Buffer.from('A6A6A6A6A6A6A6A6', 'hex');
const BASE64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** Each base64url character's 6-bit value by its byte; -1 outside the alphabet. */
const BASE64URL_VALUE = new Int8Array(256).fill(-1);
for (let v = 0; v < 64; v++) BASE64URL_VALUE[BASE64URL_ALPHABET.charCodeAt(v)] = v;

/**
 * Whether unpadded base64url of `length` characters ending in byte `last` is the one encoding of
 * its bytes (RFC 4648 §3.5): no lone final character, and the bits of the last character that
 * carry no byte are zero. Node's decoder ignores those bits, so without this check a changed final
 * character could decode to the same bytes and an altered object would still open.
 */
function canonicalEnd(length: number, last: number): boolean {
  const rest = length % 4;
  if (rest === 0) return true;
  if (rest === 1) return false;
  return (BASE64URL_VALUE[last] & (rest === 2 ? 0x0f : 0x03)) === 0;
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Unpadded base64url text in its canonical form. */
function isBase64url(text: string): boolean {
  return BASE64URL.test(text) && canonicalEnd(text.length, text.charCodeAt(text.length - 1));
}

function uint32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** Concat KDF (NIST SP 800-56A, RFC 7518 §4.6.2) for one 256-bit key: a single SHA-256 round. */
function concatKdf(sharedSecret: Buffer, apu: Buffer, apv: Buffer): Buffer {
  const alg = Buffer.from(SEAL_ALG);
  return createHash('sha256')
    .update(uint32(1))
    .update(sharedSecret)
    .update(Buffer.concat([uint32(alg.length), alg, uint32(apu.length), apu, uint32(apv.length), apv, uint32(CEK_BYTES * 8)]))
    .digest();
}

/**
 * A fresh content key agreed with the home's key (ECDH-ES+A256KW): the first three parts of the
 * compact JWE (`lead`, ending in a dot) and the AES-256-GCM cipher for its content.
 */
async function startJwe(recipient: X25519PublicJwk | SealingKey, contentType = SEAL_CONTENT_TYPE): Promise<{ lead: string; cipher: CipherGCM }> {
  const sealing = 'keyId' in recipient ? recipient : await prepareSealingKey(recipient);
  const ephemeral = generateKeyPairSync('x25519');
  const kek = concatKdf(diffieHellman({ privateKey: ephemeral.privateKey, publicKey: sealing.key }), Buffer.alloc(0), Buffer.alloc(0));
  const cek = randomBytes(CEK_BYTES);
  const wrap = createCipheriv('id-aes256-wrap', kek, KEY_WRAP_IV);
  const encryptedKey = Buffer.concat([wrap.update(cek), wrap.final()]);
  const { x } = ephemeral.publicKey.export({ format: 'jwk' });
  const header = Buffer.from(
    JSON.stringify({ alg: SEAL_ALG, enc: SEAL_ENC, cty: contentType, kid: sealing.keyId, epk: { x, crv: 'X25519', kty: 'OKP' } }),
  ).toString('base64url');
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', cek, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(header, 'ascii'));
  return { lead: `${header}.${encryptedKey.toString('base64url')}.${iv.toString('base64url')}.`, cipher };
}

/** Seals one payload to the home's public key; returns the compact JWE. */
export async function sealObject(payload: InboundObject, recipient: X25519PublicJwk | SealingKey): Promise<string> {
  const { lead, cipher } = await startJwe(recipient);
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
  return `${lead}${ciphertext.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`;
}

/** The payload without the message: what `sealMessage` takes beside the raw bytes and `openSealed` returns beside them. */
export type InboundMeta = Omit<InboundObject, 'raw' | 'version'> & { version: typeof SEALED_VERSION | typeof SEALED_V2_VERSION };

/** The v2 header's payload: the metadata and the key of the body that follows it. */
const InboundHead = Type.Object({
  version: Type.Literal(SEALED_V2_VERSION),
  envelope: InboundEnvelope,
  auth: InboundAuth,
  spam: SpamVerdict,
  body: Type.Object({
    key: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$' }),
    iv: Type.String({ pattern: '^[A-Za-z0-9_-]{16}$' }),
    size: Type.Integer({ minimum: 0 }),
  }),
});

/**
 * The opened payloads' shapes, compiled once: every received message is checked against one, and
 * TypeBox's interpreting `Value.Check` took about a tenth of a millisecond per message.
 */
const inboundObject = Compile(InboundObject);
const inboundHead = Compile(InboundHead);

/**
 * Large messages are base64-encoded, encrypted and base64url-encoded this many raw bytes at a
 * time, so sealing and opening hold the message, the sealed bytes and one chunk, never a string
 * of the whole message (issue 16, finding 9). A multiple of 3 (whole base64 groups) and of 4.
 * Small enough that each chunk's base64 string (16 KiB) is a young-generation object V8 frees at
 * the next scavenge: strings past ~128 KiB go to the large-object space, which only a full
 * collection frees, and a 20 MB message then left ~100 MB of dead strings behind at its peak.
 */
const STREAM_CHUNK_BYTES = 3 * 4 * 1024;

/** Length of the unpadded base64url (or padded base64, `padded`) text of `n` bytes. */
function base64Length(n: number, padded: boolean): number {
  const rest = n % 3;
  return Math.floor(n / 3) * 4 + (rest === 0 ? 0 : padded ? 4 : rest + 1);
}

/**
 * Writes the base64url text of a byte stream into a preallocated buffer, three bytes at a time,
 * carrying the 0–2 bytes that do not fill a group over to the next chunk.
 */
class Base64UrlWriter {
  private carry: Buffer = Buffer.alloc(0);

  constructor(
    private readonly out: Buffer,
    private pos: number,
  ) {}

  write(bytes: Buffer): void {
    const all = this.carry.length > 0 ? Buffer.concat([this.carry, bytes]) : bytes;
    const whole = all.length - (all.length % 3);
    if (whole > 0) this.pos += this.out.write(all.subarray(0, whole).toString('base64url'), this.pos, 'latin1');
    this.carry = Buffer.from(all.subarray(whole));
  }

  /** Flushes the last partial group; returns the position after it. */
  end(): number {
    if (this.carry.length > 0) this.pos += this.out.write(this.carry.toString('base64url'), this.pos, 'latin1');
    this.carry = Buffer.alloc(0);
    return this.pos;
  }
}

/**
 * Seals one message like `sealObject` (the same v1 JWE, byte for byte the same layout) but
 * returns the compact JWE as bytes and never builds the JSON or base64 text of the message as a
 * string: the payload is encrypted and encoded chunk by chunk into one preallocated buffer. The
 * edge then holds the message once and the sealed object (4/3 × 4/3 of it) once.
 */
export async function sealMessage(meta: InboundMeta & { version: typeof SEALED_VERSION }, raw: Buffer, recipient: X25519PublicJwk | SealingKey): Promise<Buffer> {
  const { lead, cipher } = await startJwe(recipient);
  // `raw` goes last, so the JSON is this text with the base64 of the message between the quotes.
  const json = JSON.stringify({ version: meta.version, envelope: meta.envelope, auth: meta.auth, spam: meta.spam, raw: '' });
  const jsonHead = Buffer.from(json.slice(0, -2), 'utf8');
  const jsonTail = Buffer.from('"}', 'utf8');
  const plaintextLength = jsonHead.length + base64Length(raw.length, true) + jsonTail.length;
  const out = Buffer.allocUnsafe(lead.length + base64Length(plaintextLength, false) + 1 + base64Length(TAG_BYTES, false));
  out.write(lead, 0, 'latin1');
  const writer = new Base64UrlWriter(out, lead.length);
  writer.write(cipher.update(jsonHead));
  for (let at = 0; at < raw.length; at += STREAM_CHUNK_BYTES) {
    writer.write(cipher.update(Buffer.from(raw.subarray(at, at + STREAM_CHUNK_BYTES).toString('base64'), 'latin1')));
  }
  writer.write(cipher.update(jsonTail));
  writer.write(cipher.final());
  let pos = writer.end();
  pos += out.write('.', pos, 'latin1');
  pos += out.write(cipher.getAuthTag().toString('base64url'), pos, 'latin1');
  if (pos !== out.length) throw new Error(`sealed object length mismatch (${pos} of ${out.length})`);
  return out;
}

/** Raw bytes encrypted per cipher call in a v2 body: each output is a short-lived buffer. */
const BODY_CHUNK_BYTES = 64 * 1024;
/** A v2 header is a few hundred bytes of JSON; anything far larger is not the svc format. */
const MAX_V2_HEAD_BYTES = 64 * 1024;

/**
 * A fresh v2 header for a message of `size` bytes: the object's first bytes (magic, length, header
 * JWE) and the body cipher, bound to that header (a body moved under another object's header fails
 * its tag).
 */
async function startV2(meta: Omit<InboundMeta, 'version'>, size: number, recipient: X25519PublicJwk | SealingKey): Promise<{ lead: Buffer; body: CipherGCM }> {
  const bodyKey = randomBytes(CEK_BYTES);
  const bodyIv = randomBytes(IV_BYTES);
  const head = { version: SEALED_V2_VERSION, envelope: meta.envelope, auth: meta.auth, spam: meta.spam, body: { key: bodyKey.toString('base64url'), iv: bodyIv.toString('base64url'), size } };
  const { lead: jweLead, cipher } = await startJwe(recipient, SEAL_V2_CONTENT_TYPE);
  const headCiphertext = Buffer.concat([cipher.update(JSON.stringify(head), 'utf8'), cipher.final()]);
  const headJwe = Buffer.from(`${jweLead}${headCiphertext.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`, 'ascii');
  const lead = Buffer.allocUnsafe(SEALED_V2_MAGIC.length + 4 + headJwe.length);
  headJwe.copy(lead, lead.writeUInt32BE(headJwe.length, SEALED_V2_MAGIC.copy(lead, 0)));
  const body = createCipheriv('aes-256-gcm', bodyKey, bodyIv, { authTagLength: TAG_BYTES });
  body.setAAD(headJwe);
  return { lead, body };
}

/**
 * Seals one message as v2 (binary, see the header comment) and returns the whole object: the
 * message is encrypted straight into the one output buffer, so the edge holds the message and
 * one object of the same size, no base64 and no string of either.
 */
export async function sealMessageV2(meta: Omit<InboundMeta, 'version'>, message: Buffer | readonly Buffer[], recipient: X25519PublicJwk | SealingKey): Promise<Buffer> {
  const chunks = Buffer.isBuffer(message) ? [message] : message;
  const size = chunks.reduce((n, c) => n + c.length, 0);
  const { lead, body } = await startV2(meta, size, recipient);
  const out = Buffer.allocUnsafe(lead.length + size + TAG_BYTES);
  let pos = lead.copy(out, 0);
  for (const chunk of chunks) {
    for (let at = 0; at < chunk.length; at += BODY_CHUNK_BYTES) pos += body.update(chunk.subarray(at, at + BODY_CHUNK_BYTES)).copy(out, pos);
  }
  pos += body.final().copy(out, pos);
  pos += body.getAuthTag().copy(out, pos);
  if (pos !== out.length) throw new Error(`sealed object length mismatch (${pos} of ${out.length})`);
  return out;
}

/**
 * Seals one accepted message (whole, or in the chunks it arrived in) in the format its size calls
 * for: v1 up to BINARY_SEAL_MIN_BYTES, v2 above.
 */
export async function sealInbound(meta: Omit<InboundMeta, 'version'>, message: Buffer | readonly Buffer[], recipient: X25519PublicJwk | SealingKey): Promise<Buffer> {
  const chunks = Buffer.isBuffer(message) ? [message] : message;
  const size = chunks.reduce((n, c) => n + c.length, 0);
  if (size > BINARY_SEAL_MIN_BYTES) return sealMessageV2(meta, chunks, recipient);
  return sealMessage({ ...meta, version: SEALED_VERSION }, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size), recipient);
}

/**
 * Like `sealInbound`, but a v2 object is made from the message's own chunks, encrypted where they
 * lie, and returned as the parts to write one after another (lead, the chunks, tag): sealing a
 * large message then costs no second buffer of its size (issue 16, finding 9). The chunks hold
 * ciphertext afterwards, so only a caller that owns them and reads them no more may use this.
 */
export async function sealInboundInPlace(meta: Omit<InboundMeta, 'version'>, chunks: readonly Buffer[], recipient: X25519PublicJwk | SealingKey): Promise<Buffer[]> {
  const size = chunks.reduce((n, c) => n + c.length, 0);
  if (size <= BINARY_SEAL_MIN_BYTES) return [await sealInbound(meta, chunks, recipient)];
  const { lead, body } = await startV2(meta, size, recipient);
  for (const chunk of chunks) {
    for (let at = 0; at < chunk.length; at += BODY_CHUNK_BYTES) {
      const part = chunk.subarray(at, at + BODY_CHUNK_BYTES);
      // GCM's output for a piece is exactly as long as the piece.
      if (body.update(part).copy(part) !== part.length) throw new Error('sealed object length mismatch');
    }
  }
  if (body.final().length !== 0) throw new Error('sealed object length mismatch');
  return [lead, ...chunks, body.getAuthTag()];
}

/** Whether stored object bytes are a v2 (binary) object rather than a v1 compact JWE. */
export function isBinarySealed(bytes: Uint8Array): boolean {
  return bytes.length >= SEALED_V2_MAGIC.length && SEALED_V2_MAGIC.equals(bytes.subarray(0, SEALED_V2_MAGIC.length));
}

/** Why an object could not be opened; the home quarantines on any of these. */
export class SealedObjectError extends Error {
  override readonly name = 'SealedObjectError';

  constructor(
    readonly reason: 'malformed' | 'decrypt_failed' | 'invalid_payload',
    message: string,
  ) {
    super(message);
  }
}

/** The `kid` a sealed object names, read from its protected header without decrypting (null when unreadable). */
export function sealedKeyId(jwe: string): string | null {
  try {
    const header = decodeProtectedHeader(jwe);
    return typeof header.kid === 'string' ? header.kid : null;
  } catch {
    return null;
  }
}

/** The home's private key as a KeyObject; the last one is kept, since a pool worker opens many objects with the same key. */
let lastPrivate: { d: string; key: KeyObject } | null = null;

function privateKeyObject(privateKey: JWK | KeyObject): KeyObject {
  if (privateKey instanceof KeyObject) return privateKey;
  const jwk = privateKey as JWK;
  if (jwk.kty !== 'OKP' || jwk.crv !== 'X25519' || typeof jwk.d !== 'string' || typeof jwk.x !== 'string') throw new Error('not an X25519 private JWK');
  if (lastPrivate?.d !== jwk.d) lastPrivate = { d: jwk.d, key: createPrivateKey({ key: { kty: 'OKP', crv: 'X25519', x: jwk.x, d: jwk.d }, format: 'jwk' }) };
  return lastPrivate.key;
}

const malformed = () => new SealedObjectError('malformed', 'The object is not a JWE sealed in the svc format.');
const undecryptable = () => new SealedObjectError('decrypt_failed', 'The object does not open with this key (wrong key or altered ciphertext).');

/** The parts of a compact JWE in the svc format, checked before any key is used. */
function parseCompact(jwe: string): { header: string; epk: KeyObject; apu: Buffer; apv: Buffer; encryptedKey: Buffer; iv: Buffer; ciphertext: Buffer; tag: Buffer } {
  const parts = jwe.trim().split('.');
  if (parts.length !== 5 || !parts.every(isBase64url)) throw malformed();
  const [header, encryptedKey, iv, ciphertext, tag] = parts;
  return { ...parseFrame(header, encryptedKey, iv, tag), ciphertext: Buffer.from(ciphertext, 'base64url') };
}

/** Everything of a compact JWE but its ciphertext, checked before any key is used. */
function parseFrame(header: string, encryptedKey: string, iv: string, tag: string): { header: string; epk: KeyObject; apu: Buffer; apv: Buffer; encryptedKey: Buffer; iv: Buffer; tag: Buffer } {
  let fields: Record<string, unknown>;
  try {
    fields = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    throw malformed();
  }
  // Compression and critical extensions are not part of the format (jose refuses them too).
  if (typeof fields !== 'object' || fields === null || fields.alg !== SEAL_ALG || fields.enc !== SEAL_ENC || 'zip' in fields || 'crit' in fields) throw malformed();
  const epk = fields.epk as Record<string, unknown> | undefined;
  if (typeof epk !== 'object' || epk === null || epk.kty !== 'OKP' || epk.crv !== 'X25519' || typeof epk.x !== 'string') throw malformed();
  const party = (value: unknown): Buffer => {
    if (value === undefined) return Buffer.alloc(0);
    if (typeof value !== 'string' || !isBase64url(value)) throw malformed();
    return Buffer.from(value, 'base64url');
  };
  let epkKey: KeyObject;
  try {
    epkKey = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: epk.x }, format: 'jwk' });
  } catch {
    throw malformed();
  }
  const out = {
    header,
    epk: epkKey,
    apu: party(fields.apu),
    apv: party(fields.apv),
    encryptedKey: Buffer.from(encryptedKey, 'base64url'),
    iv: Buffer.from(iv, 'base64url'),
    tag: Buffer.from(tag, 'base64url'),
  };
  if (out.iv.length !== IV_BYTES || out.tag.length !== TAG_BYTES) throw malformed();
  return out;
}

/** The content key of a parsed object, unwrapped with the home's private key. */
function contentKey(key: KeyObject, parts: { epk: KeyObject; apu: Buffer; apv: Buffer; encryptedKey: Buffer }): Buffer {
  const kek = concatKdf(diffieHellman({ privateKey: key, publicKey: parts.epk }), parts.apu, parts.apv);
  const unwrap = createDecipheriv('id-aes256-wrap', kek, KEY_WRAP_IV);
  const cek = Buffer.concat([unwrap.update(parts.encryptedKey), unwrap.final()]);
  if (cek.length !== CEK_BYTES) throw new Error('content key of the wrong size');
  return cek;
}

function homeKey(privateKey: JWK | KeyObject | CryptoKey): KeyObject {
  try {
    return privateKeyObject(isCryptoKey(privateKey) ? KeyObject.from(privateKey) : privateKey);
  } catch {
    throw new SealedObjectError('decrypt_failed', 'The private key is not a usable X25519 key.');
  }
}

const DOT = 0x2e;
const isSpace = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;

/**
 * Opens a sealed object given as bytes (or as the compact string) and returns its metadata and
 * the raw message as one Buffer. Same format, checks and errors as `openObject`, but the
 * ciphertext is decoded and decrypted chunk by chunk into one plaintext buffer and the message's
 * base64 is decoded from it chunk by chunk, so no string of the whole message is ever made: the
 * peak is the sealed bytes + the JSON plaintext + the message (about 4× the message), and the
 * first two can go as soon as this returns (issue 16, finding 9).
 *
 * `inPlace` (v2 only): the body is decrypted over its own ciphertext and `raw` is a view into
 * `sealed`, so opening a large message costs no second copy of it. `sealed` is then overwritten,
 * also when opening fails; give it only bytes nothing else reads.
 */
export async function openSealed(
  sealed: Uint8Array | string,
  privateKey: JWK | KeyObject | CryptoKey,
  opts: { inPlace?: boolean } = {},
): Promise<{ meta: InboundMeta; raw: Buffer }> {
  const key = homeKey(privateKey);
  // UTF-8, not latin1: a non-ASCII character must stay outside the alphabet (malformed), not fold onto a letter.
  const bytes = typeof sealed === 'string' ? Buffer.from(sealed, 'utf8') : Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (isBinarySealed(bytes)) return openV2(bytes, key, opts.inPlace === true);
  let start = 0;
  let end = bytes.length;
  while (start < end && isSpace(bytes[start])) start++;
  while (end > start && isSpace(bytes[end - 1])) end--;
  const dots: number[] = [];
  for (let at = bytes.indexOf(DOT, start); at !== -1 && at < end; at = bytes.indexOf(DOT, at + 1)) {
    dots.push(at);
    if (dots.length > 4) throw malformed();
  }
  if (dots.length !== 4) throw malformed();
  const small = (from: number, to: number): string => {
    // Frame parts are short; a huge one is not the svc format (and is not worth a string).
    if (to - from > 64 * 1024) throw malformed();
    const text = bytes.toString('latin1', from, to);
    if (!isBase64url(text)) throw malformed();
    return text;
  };
  const frame = parseFrame(small(start, dots[0]), small(dots[0] + 1, dots[1]), small(dots[1] + 1, dots[2]), small(dots[3] + 1, end));
  const ciphertext = bytes.subarray(dots[2] + 1, dots[3]);
  for (let i = 0; i < ciphertext.length; i++) if (BASE64URL_VALUE[ciphertext[i]] === -1) throw malformed();
  if (!canonicalEnd(ciphertext.length, ciphertext[ciphertext.length - 1] ?? 0)) throw malformed();
  const plaintext = Buffer.allocUnsafe(Math.floor((ciphertext.length * 3) / 4));
  let written = 0;
  try {
    const decipher = createDecipheriv('aes-256-gcm', contentKey(key, frame), frame.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(frame.header, 'ascii'));
    decipher.setAuthTag(frame.tag);
    // Whole base64 groups per chunk: 4 characters are 3 bytes.
    const step = (STREAM_CHUNK_BYTES / 3) * 4;
    for (let at = 0; at < ciphertext.length; at += step) {
      const part = decipher.update(Buffer.from(ciphertext.toString('latin1', at, Math.min(at + step, ciphertext.length)), 'base64url'));
      written += part.copy(plaintext, written);
    }
    written += decipher.final().copy(plaintext, written);
  } catch {
    throw undecryptable();
  }
  return readPayload(plaintext.subarray(0, written));
}

/** The plaintext of a compact JWE in the svc format (either version's), decrypted with the home's key. */
function decryptCompact(jwe: string, key: KeyObject): Buffer {
  const parts = parseCompact(jwe);
  try {
    const decipher = createDecipheriv('aes-256-gcm', contentKey(key, parts), parts.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(parts.header, 'ascii'));
    decipher.setAuthTag(parts.tag);
    return Buffer.concat([decipher.update(parts.ciphertext), decipher.final()]);
  } catch {
    throw undecryptable();
  }
}

/**
 * Opens a v2 object: the header JWE, then the body decrypted chunk by chunk into one buffer of
 * the message's size, or over the ciphertext itself (`inPlace`): GCM's output for a chunk is as
 * long as its input, so each chunk is written back where it was just read, never ahead of it.
 */
function openV2(bytes: Buffer, key: KeyObject, inPlace: boolean): { meta: InboundMeta; raw: Buffer } {
  const headStart = SEALED_V2_MAGIC.length + 4;
  if (bytes.length < headStart + TAG_BYTES) throw malformed();
  const headLength = bytes.readUInt32BE(SEALED_V2_MAGIC.length);
  const headEnd = headStart + headLength;
  if (headLength === 0 || headLength > MAX_V2_HEAD_BYTES || headEnd + TAG_BYTES > bytes.length) throw malformed();
  const headJwe = bytes.subarray(headStart, headEnd);
  const headText = headJwe.toString('latin1');
  if (!/^[A-Za-z0-9_.-]+$/.test(headText)) throw malformed();
  let head: unknown;
  try {
    head = JSON.parse(decryptCompact(headText, key).toString('utf8'));
  } catch (err) {
    if (err instanceof SealedObjectError) throw err;
    throw new SealedObjectError('invalid_payload', 'The opened object is not JSON.');
  }
  if (!inboundHead.Check(head)) throw new SealedObjectError('invalid_payload', 'The opened object does not have the inbound object shape.');
  const ciphertext = bytes.subarray(headEnd, bytes.length - TAG_BYTES);
  if (ciphertext.length !== head.body.size) throw malformed();
  const raw = inPlace ? bytes.subarray(headEnd, headEnd + head.body.size) : Buffer.allocUnsafe(head.body.size);
  let written = 0;
  try {
    const decipher = createDecipheriv('aes-256-gcm', Buffer.from(head.body.key, 'base64url'), Buffer.from(head.body.iv, 'base64url'), { authTagLength: TAG_BYTES });
    decipher.setAAD(headJwe);
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    for (let at = 0; at < ciphertext.length; at += BODY_CHUNK_BYTES) written += decipher.update(ciphertext.subarray(at, at + BODY_CHUNK_BYTES)).copy(raw, written);
    written += decipher.final().copy(raw, written);
  } catch {
    throw undecryptable();
  }
  if (written !== raw.length) throw undecryptable();
  const { body: _body, ...meta } = head;
  return { meta, raw };
}

/** Where the top-level `"raw"` string's contents lie in the JSON text, when it has no escapes; else null. */
function rawMemberRange(json: Buffer): { start: number; end: number } | null {
  const QUOTE = 0x22;
  const BACKSLASH = 0x5c;
  let depth = 0;
  let expectKey = false;
  let lastKey: string | null = null;
  let found: { start: number; end: number } | null = null;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === QUOTE) {
      // Jump to the closing quote with native searches; a backslash means an escape to step over.
      let close = i + 1;
      let escaped = false;
      for (;;) {
        const quote = json.indexOf(QUOTE, close);
        if (quote === -1) return null;
        const backslash = json.indexOf(BACKSLASH, close);
        if (backslash === -1 || backslash > quote) {
          close = quote;
          break;
        }
        escaped = true;
        close = backslash + 2;
      }
      if (depth === 1 && expectKey) {
        lastKey = escaped ? null : json.toString('latin1', i + 1, close);
        // A second "raw" (JSON.parse keeps the last) or an escaped key: leave it to JSON.parse.
        if (escaped || (lastKey === 'raw' && found !== null)) return null;
        expectKey = false;
      } else if (depth === 1 && lastKey === 'raw') {
        if (escaped) return null;
        found = { start: i + 1, end: close };
      }
      i = close;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth === 1) expectKey = c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    } else if (c === 0x2c && depth === 1) {
      expectKey = true;
      lastKey = null;
    }
  }
  return found;
}

/** The opened JSON payload → metadata and message bytes, checked like `openObject`. */
function readPayload(plaintext: Buffer): { meta: InboundMeta; raw: Buffer } {
  const range = rawMemberRange(plaintext);
  let payload: unknown;
  let raw: Buffer | null = null;
  try {
    if (range === null) {
      payload = JSON.parse(plaintext.toString('utf8'));
    } else {
      payload = JSON.parse(Buffer.concat([plaintext.subarray(0, range.start), plaintext.subarray(range.end)]).toString('utf8'));
      raw = decodeBase64(plaintext.subarray(range.start, range.end));
    }
  } catch {
    throw new SealedObjectError('invalid_payload', 'The opened object is not JSON.');
  }
  if (!inboundObject.Check(payload)) throw new SealedObjectError('invalid_payload', 'The opened object does not have the inbound object shape.');
  const { raw: text, ...meta } = payload;
  return { meta, raw: raw ?? Buffer.from(text, 'base64') };
}

/**
 * Base64 text (as bytes) → bytes, decoded a chunk at a time into one buffer. Decodes exactly as
 * `Buffer.from(text, 'base64')` would for the text our sealer writes; anything else (a chunk
 * that does not decode to whole groups) falls back to that, so odd input means the same thing.
 */
function decodeBase64(text: Buffer): Buffer {
  const whole = () => Buffer.from(text.toString('latin1'), 'base64');
  const step = (STREAM_CHUNK_BYTES / 3) * 4;
  let padding = 0;
  while (padding < 2 && padding < text.length && text[text.length - 1 - padding] === 0x3d) padding++;
  // Exactly the message's size, so the buffer is the whole of its memory and can be transferred.
  const out = Buffer.allocUnsafe(Math.floor(((text.length - padding) * 3) / 4));
  let written = 0;
  for (let at = 0; at < text.length; at += step) {
    const last = at + step >= text.length;
    const part = Buffer.from(text.toString('latin1', at, Math.min(at + step, text.length)), 'base64');
    if ((!last && part.length !== (step / 4) * 3) || written + part.length > out.length) return whole();
    written += part.copy(out, written);
  }
  return written === out.length ? out : whole();
}

/** Opens a sealed object with the home's private key and checks the payload shape. */
export async function openObject(jwe: string, privateKey: JWK | KeyObject | CryptoKey): Promise<InboundObject> {
  const plaintext = decryptCompact(jwe, homeKey(privateKey));
  let payload: unknown;
  try {
    payload = JSON.parse(plaintext.toString('utf8'));
  } catch {
    throw new SealedObjectError('invalid_payload', 'The opened object is not JSON.');
  }
  if (!inboundObject.Check(payload)) throw new SealedObjectError('invalid_payload', 'The opened object does not have the inbound object shape.');
  return payload;
}

function isCryptoKey(key: JWK | KeyObject | CryptoKey): key is CryptoKey {
  return !(key instanceof KeyObject) && typeof (key as CryptoKey).algorithm === 'object' && typeof (key as CryptoKey).usages === 'object';
}

/** The raw message bytes of an opened object. */
export function rawMessage(payload: InboundObject): Buffer {
  return Buffer.from(payload.raw, 'base64');
}
