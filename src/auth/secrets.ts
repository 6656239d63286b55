/** Random secrets and their at-rest form (SHA-256, compared in constant time). */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const newSecret = (prefix: string, bytes = 32) => prefix + randomBytes(bytes).toString('base64url');

export const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
