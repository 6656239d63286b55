/**
 * The recovery code: a random code shown once when a home is created (as disk-encryption tools
 * do), from which a key is derived that wraps the database key a second time. keys.json keeps
 * that second wrap as its `recovery` block and every backup carries it, so a backup can be
 * restored on another machine, whose credential store never held this home's key.
 */
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';

/** Crockford's base32: no I, L, O or U, so a code read aloud or from paper is not misread. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** 28 characters × 5 bits = 140 bits of entropy, shown in groups of four. */
export const RECOVERY_CODE_CHARS = 28;
const GROUP = 4;

/**
 * scrypt cost: N=2^15, r=8, p=1 needs 32 MiB and roughly 50–100 ms per guess on a small server.
 * The code's 140 random bits are what stop a brute force; the KDF only multiplies that cost.
 * Stored in each block, so later releases can raise it without breaking old backups.
 */
export const RECOVERY_SCRYPT = { N: 2 ** 15, r: 8, p: 1 } as const;
/** Upper bounds accepted from a block (a tampered block must not make svc allocate gigabytes). */
const MAX_SCRYPT_N = 2 ** 20;
const MAX_SCRYPT_R = 16;
const MAX_SCRYPT_P = 4;
const SALT_BYTES = 16;

export interface RecoveryBlock {
  version: 1;
  kdf: 'scrypt';
  salt: string;
  n: number;
  r: number;
  p: number;
  alg: 'A256GCM';
  nonce: string;
  /** The database key, encrypted with the derived key; 32 bytes + 16-byte tag, base64. */
  wrapped_key: string;
  created_at: string;
}

export class RecoveryError extends Error {}

/** The home the block belongs to is bound in: a block copied into another home's backup does not open. */
const aad = (homeId: string) => Buffer.from(`svc recovery v1 ${homeId}`);

export function newRecoveryCode(): string {
  const bytes = randomBytes(RECOVERY_CODE_CHARS);
  let code = '';
  // 256 is a multiple of 32, so taking each byte modulo 32 is unbiased.
  for (let i = 0; i < RECOVERY_CODE_CHARS; i++) {
    if (i > 0 && i % GROUP === 0) code += '-';
    code += ALPHABET[bytes[i] % 32];
  }
  return code;
}

/** The code as typed: case, spaces and dashes do not matter; O reads as 0, I and L as 1. */
export function normalizeRecoveryCode(typed: string): string {
  const plain = typed.toUpperCase().replace(/[\s-]/g, '').replace(/O/g, '0').replace(/[IL]/g, '1');
  if (plain.length !== RECOVERY_CODE_CHARS || [...plain].some((c) => !ALPHABET.includes(c))) {
    throw new RecoveryError(`A recovery code has ${RECOVERY_CODE_CHARS} letters and digits (groups of ${GROUP}, e.g. ABCD-EFGH-…); this one does not.`);
  }
  return plain;
}

function derive(code: string, salt: Buffer, params: { n: number; r: number; p: number }): Buffer {
  const plain = normalizeRecoveryCode(code);
  return scryptSync(plain, salt, 32, { N: params.n, r: params.r, p: params.p, maxmem: 256 * params.n * params.r + 1024 * 1024 });
}

export function wrapWithRecoveryCode(code: string, dbKey: Buffer, homeId: string): RecoveryBlock {
  const salt = randomBytes(SALT_BYTES);
  const params = { n: RECOVERY_SCRYPT.N, r: RECOVERY_SCRYPT.r, p: RECOVERY_SCRYPT.p };
  const key = derive(code, salt, params);
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(aad(homeId));
  const body = Buffer.concat([cipher.update(dbKey), cipher.final(), cipher.getAuthTag()]);
  key.fill(0);
  return { version: 1, kdf: 'scrypt', salt: salt.toString('base64'), ...params, alg: 'A256GCM', nonce: nonce.toString('base64'), wrapped_key: body.toString('base64'), created_at: new Date().toISOString() };
}

/** Checks a block's shape and bounds; null when it is not a valid block. */
export function parseRecoveryBlock(value: unknown): RecoveryBlock | null {
  const b = value as Partial<RecoveryBlock> | null;
  if (!b || typeof b !== 'object') return null;
  if (b.version !== 1 || b.kdf !== 'scrypt' || b.alg !== 'A256GCM') return null;
  if (typeof b.salt !== 'string' || typeof b.nonce !== 'string' || typeof b.wrapped_key !== 'string' || typeof b.created_at !== 'string') return null;
  for (const [v, max] of [[b.n, MAX_SCRYPT_N], [b.r, MAX_SCRYPT_R], [b.p, MAX_SCRYPT_P]] as const) {
    if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > max) return null;
  }
  if ((b.n! & (b.n! - 1)) !== 0 || b.n! < 2) return null;
  if (Buffer.from(b.salt, 'base64').length !== SALT_BYTES || Buffer.from(b.nonce, 'base64').length !== 12 || Buffer.from(b.wrapped_key, 'base64').length !== 48) return null;
  return b as RecoveryBlock;
}

/** The database key, or a RecoveryError when the code (or the home the block is bound to) is wrong. */
export function unwrapWithRecoveryCode(code: string, block: RecoveryBlock, homeId: string): Buffer {
  const key = derive(code, Buffer.from(block.salt, 'base64'), block);
  const body = Buffer.from(block.wrapped_key, 'base64');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(block.nonce, 'base64'));
    decipher.setAAD(aad(homeId));
    decipher.setAuthTag(body.subarray(32));
    return Buffer.concat([decipher.update(body.subarray(0, 32)), decipher.final()]);
  } catch {
    throw new RecoveryError('The recovery code does not open this backup (a wrong code, or a backup of another home).');
  } finally {
    key.fill(0);
  }
}
