/**
 * The sealed-object format shared by the edge (which seals) and the home (which opens): one
 * accepted message → `{version, envelope, auth, spam, raw}` as JSON, encrypted as a compact JWE
 * (`ECDH-ES+A256KW`, `A256GCM`) to the home's X25519 public key. The protected header carries
 * `kid` (the key's RFC 7638 thumbprint) so the home can tell, without decrypting, whether an
 * object was sealed to its current key. See docs/edge.md for the field list.
 */
import {
  CompactEncrypt,
  calculateJwkThumbprint,
  compactDecrypt,
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
} from 'jose';
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
  key: CryptoKey;
}

export async function prepareSealingKey(publicJwk: X25519PublicJwk): Promise<SealingKey> {
  const key = await importJWK({ kty: publicJwk.kty, crv: publicJwk.crv, x: publicJwk.x }, SEAL_ALG);
  return { keyId: await publicKeyId(publicJwk), key: key as CryptoKey };
}

/** Seals one payload to the home's public key; returns the compact JWE. */
export async function sealObject(payload: InboundObject, recipient: X25519PublicJwk | SealingKey): Promise<string> {
  const sealing = 'keyId' in recipient ? recipient : await prepareSealingKey(recipient);
  return new CompactEncrypt(Buffer.from(JSON.stringify(payload)))
    .setProtectedHeader({ alg: SEAL_ALG, enc: SEAL_ENC, cty: SEAL_CONTENT_TYPE, kid: sealing.keyId })
    .encrypt(sealing.key);
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

function isCryptoKey(key: JWK | CryptoKey): key is CryptoKey {
  return typeof (key as CryptoKey).algorithm === 'object' && typeof (key as CryptoKey).usages === 'object';
}

/** Opens a sealed object with the home's private key and checks the payload shape. */
export async function openObject(jwe: string, privateKey: JWK | CryptoKey): Promise<InboundObject> {
  let key: CryptoKey;
  try {
    key = isCryptoKey(privateKey) ? privateKey : ((await importJWK(privateKey, SEAL_ALG)) as CryptoKey);
  } catch {
    throw new SealedObjectError('decrypt_failed', 'The private key is not a usable X25519 key.');
  }
  let plaintext: Uint8Array;
  try {
    ({ plaintext } = await compactDecrypt(jwe.trim(), key, { keyManagementAlgorithms: [SEAL_ALG], contentEncryptionAlgorithms: [SEAL_ENC] }));
  } catch (err) {
    const code = (err as { code?: string }).code;
    const malformed = code === 'ERR_JWE_INVALID' || code === 'ERR_JOSE_NOT_SUPPORTED' || code === 'ERR_JOSE_ALG_NOT_ALLOWED';
    throw malformed
      ? new SealedObjectError('malformed', 'The object is not a JWE sealed in the svc format.')
      : new SealedObjectError('decrypt_failed', 'The object does not open with this key (wrong key or altered ciphertext).');
  }
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(plaintext).toString('utf8'));
  } catch {
    throw new SealedObjectError('invalid_payload', 'The opened object is not JSON.');
  }
  if (!Value.Check(InboundObject, payload)) throw new SealedObjectError('invalid_payload', 'The opened object does not have the inbound object shape.');
  return payload;
}

/** The raw message bytes of an opened object. */
export function rawMessage(payload: InboundObject): Buffer {
  return Buffer.from(payload.raw, 'base64');
}
