/** Buffer object keys: strict shape, and text order is arrival order even within one millisecond. */
import t from 'tap';
import { isObjectKey, ObjectKeyClock } from '../../src/edge/object-key.js';

t.test('keys made in the same millisecond still increase', async (t) => {
  const clock = new ObjectKeyClock(() => 1_700_000_000_000);
  const keys = Array.from({ length: 5000 }, () => clock.next());
  t.same([...keys].sort(), keys, 'already sorted');
  t.equal(new Set(keys).size, keys.length, 'all distinct');
  t.ok(keys.every(isObjectKey), 'every key has the strict shape');
});

t.test('a clock that went back does not produce keys older than one observed on disk', async (t) => {
  const later = new ObjectKeyClock(() => 1_800_000_000_000).next();
  const clock = new ObjectKeyClock(() => 1_700_000_000_000);
  clock.observe(later);
  const next = clock.next();
  t.ok(next > later, `${next} sorts after ${later}`);
});

t.test('keys sort by time across milliseconds', async (t) => {
  let now = 1_700_000_000_000;
  const clock = new ObjectKeyClock(() => now);
  const a = clock.next();
  now += 1;
  const b = clock.next();
  t.ok(a < b);
});

t.test('anything but a lower-case UUIDv7 is not a key (no path tricks get through)', async (t) => {
  for (const bad of ['', '..', '../routing', '..%2Frouting.json', 'routing.json', '0190a1b2-c3d4-4e5f-8a6b-7c8d9e0f1a2b', '0190A1B2-C3D4-7E5F-8A6B-7C8D9E0F1A2B', '0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b/..', '0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b\n']) {
    t.notOk(isObjectKey(bad), JSON.stringify(bad));
  }
  t.ok(isObjectKey('0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b'));
});
