/** UUIDv7: time-ordered identifiers for threads, drafts, keys and the rest (ARCHITECTURE §5). */
import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for 256 identifiers, drawn from the CSPRNG at once and each used once (as Node's
 * own `randomUUID` caches them): one call per identifier cost more than the rest of uuidv7, and a
 * received message takes several.
 */
const POOL = Buffer.alloc(16 * 256);
let used = POOL.length;

export function uuidv7(now = Date.now()): string {
  if (used === POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const b = Buffer.from(POOL.subarray(used, used + 16));
  POOL.fill(0, used, used + 16);
  used += 16;
  b.writeUIntBE(now, 0, 6);
  b[6] = 0x70 | (b[6] & 0x0f);
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
