/**
 * Buffer object keys: UUIDv7 strings whose text order is their arrival order. The 12-bit
 * `rand_a` field carries a counter, so keys made in the same millisecond still increase and a
 * home that lists `after=<last key>` never skips an object.
 */
import { randomBytes } from 'node:crypto';

/** Strict shape of a key; anything else in a path or query is refused before touching the disk. */
export const OBJECT_KEY_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$';
const OBJECT_KEY = new RegExp(OBJECT_KEY_PATTERN);

export function isObjectKey(value: string): boolean {
  return OBJECT_KEY.test(value);
}

const MAX_SEQUENCE = 0xfff;

/** Issues strictly increasing keys; `observe` keeps them increasing across a restart even if the clock went back. */
export class ObjectKeyClock {
  private lastMs = 0;
  private sequence = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** Makes every later key sort after `key` (used with the newest key found on disk at start). */
  observe(key: string): void {
    const hex = key.replace(/-/g, '');
    const ms = parseInt(hex.slice(0, 12), 16);
    const sequence = parseInt(hex.slice(13, 16), 16);
    if (ms > this.lastMs || (ms === this.lastMs && sequence > this.sequence)) {
      this.lastMs = ms;
      this.sequence = sequence;
    }
  }

  next(): string {
    const now = this.now();
    if (now > this.lastMs) {
      this.lastMs = now;
      this.sequence = 0;
    } else if (this.sequence < MAX_SEQUENCE) {
      this.sequence++;
    } else {
      // 4096 keys in one millisecond: borrow the next millisecond rather than repeat a key.
      this.lastMs++;
      this.sequence = 0;
    }
    const b = randomBytes(16);
    b.writeUIntBE(this.lastMs, 0, 6);
    b[6] = 0x70 | (this.sequence >> 8);
    b[7] = this.sequence & 0xff;
    b[8] = 0x80 | (b[8] & 0x3f);
    const h = b.toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}
