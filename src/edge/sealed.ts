/**
 * The sealed-object format shared by the edge (which seals) and the home (which opens): one
 * accepted message → `{version, envelope, auth, spam, raw}` as JSON, encrypted as a compact JWE
 * (`ECDH-ES+A256KW`, `A256GCM`) to the home's X25519 public key. The protected header carries
 * `kid` (the key's RFC 7638 thumbprint) so the home can tell, without decrypting, whether an
 * object was sealed to its current key. See docs/edge.md for the field list.
 */
import {
  createCipheriv,
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
import { Value } from 'typebox/value';

export const SEAL_ALG = 'ECDH-ES+A256KW';
export const SEAL_ENC = 'A256GCM';
/** JWE `cty`: names the payload format so a future version can be told apart before parsing. */
export const SEAL_CONTENT_TYPE = 'svc-inbound+json';
export const SEALED_VERSION = 1;

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
const BASE64URL = /^[A-Za-z0-9_-]*$/;

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

/** Seals one payload to the home's public key; returns the compact JWE. */
export async function sealObject(payload: InboundObject, recipient: X25519PublicJwk | SealingKey): Promise<string> {
  const sealing = 'keyId' in recipient ? recipient : await prepareSealingKey(recipient);
  const ephemeral = generateKeyPairSync('x25519');
  const kek = concatKdf(diffieHellman({ privateKey: ephemeral.privateKey, publicKey: sealing.key }), Buffer.alloc(0), Buffer.alloc(0));
  const cek = randomBytes(CEK_BYTES);
  const wrap = createCipheriv('id-aes256-wrap', kek, KEY_WRAP_IV);
  const encryptedKey = Buffer.concat([wrap.update(cek), wrap.final()]);
  const { x } = ephemeral.publicKey.export({ format: 'jwk' });
  const header = Buffer.from(
    JSON.stringify({ alg: SEAL_ALG, enc: SEAL_ENC, cty: SEAL_CONTENT_TYPE, kid: sealing.keyId, epk: { x, crv: 'X25519', kty: 'OKP' } }),
  ).toString('base64url');
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', cek, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(header, 'ascii'));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
  return [header, encryptedKey.toString('base64url'), iv.toString('base64url'), ciphertext.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
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
  if (parts.length !== 5 || !parts.every((p) => BASE64URL.test(p))) throw malformed();
  const [header, encryptedKey, iv, ciphertext, tag] = parts;
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
    if (typeof value !== 'string' || !BASE64URL.test(value)) throw malformed();
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
    ciphertext: Buffer.from(ciphertext, 'base64url'),
    tag: Buffer.from(tag, 'base64url'),
  };
  if (out.iv.length !== IV_BYTES || out.tag.length !== TAG_BYTES) throw malformed();
  return out;
}

/** Opens a sealed object with the home's private key and checks the payload shape. */
export async function openObject(jwe: string, privateKey: JWK | KeyObject | CryptoKey): Promise<InboundObject> {
  let key: KeyObject;
  try {
    key = privateKeyObject(isCryptoKey(privateKey) ? KeyObject.from(privateKey) : privateKey);
  } catch {
    throw new SealedObjectError('decrypt_failed', 'The private key is not a usable X25519 key.');
  }
  const parts = parseCompact(jwe);
  let plaintext: Buffer;
  try {
    const kek = concatKdf(diffieHellman({ privateKey: key, publicKey: parts.epk }), parts.apu, parts.apv);
    const unwrap = createDecipheriv('id-aes256-wrap', kek, KEY_WRAP_IV);
    const cek = Buffer.concat([unwrap.update(parts.encryptedKey), unwrap.final()]);
    if (cek.length !== CEK_BYTES) throw new Error('content key of the wrong size');
    const decipher = createDecipheriv('aes-256-gcm', cek, parts.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(parts.header, 'ascii'));
    decipher.setAuthTag(parts.tag);
    plaintext = Buffer.concat([decipher.update(parts.ciphertext), decipher.final()]);
  } catch {
    throw undecryptable();
  }
  let payload: unknown;
  try {
    payload = JSON.parse(plaintext.toString('utf8'));
  } catch {
    throw new SealedObjectError('invalid_payload', 'The opened object is not JSON.');
  }
  if (!Value.Check(InboundObject, payload)) throw new SealedObjectError('invalid_payload', 'The opened object does not have the inbound object shape.');
  return payload;
}

function isCryptoKey(key: JWK | KeyObject | CryptoKey): key is CryptoKey {
  return !(key instanceof KeyObject) && typeof (key as CryptoKey).algorithm === 'object' && typeof (key as CryptoKey).usages === 'object';
}

/** The raw message bytes of an opened object. */
export function rawMessage(payload: InboundObject): Buffer {
  return Buffer.from(payload.raw, 'base64');
}
