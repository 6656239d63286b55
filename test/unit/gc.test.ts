/**
 * The garbage-collection hint used after large mail (src/core/gc.ts): it really frees dead
 * buffers, minor and full, and the meter runs it only every few megabytes.
 */
import t from 'tap';
import { collectGarbage, GarbageMeter } from '../../src/core/gc.js';

const MIB = 1024 * 1024;
const arrayBufferBytes = () => process.memoryUsage().arrayBuffers;
const tick = () => new Promise((r) => setTimeout(r, 50));

/** Allocates `count` buffers of 64 KiB that nothing keeps. */
function litter(count: number): void {
  const kept: Uint8Array[] = [];
  for (let i = 0; i < count; i++) kept.push(new Uint8Array(64 * 1024).fill(i));
  kept.length = 0;
}

for (const kind of ['minor', 'full'] as const) {
  t.test(`a ${kind} collection frees buffers that died young`, async (t) => {
    collectGarbage('full');
    await tick();
    const before = arrayBufferBytes();
    litter(320); // 20 MiB
    t.ok(arrayBufferBytes() - before > 16 * MIB, 'the dead buffers still count before the collection');
    collectGarbage(kind);
    await tick(); // V8 sweeps array buffers just after the collection
    t.ok(arrayBufferBytes() - before < 4 * MIB, `freed: ${((arrayBufferBytes() - before) / MIB).toFixed(1)} MiB left`);
  });
}

t.test('the meter collects once per 4 MiB of chunks passed along', async (t) => {
  collectGarbage('full');
  await tick();
  const before = arrayBufferBytes();
  const meter = new GarbageMeter();
  for (let i = 0; i < 320; i++) {
    const chunk = new Uint8Array(64 * 1024).fill(i);
    meter.add(chunk.length);
  }
  await tick();
  t.ok(arrayBufferBytes() - before < 8 * MIB, `at most about one meter's worth waits: ${((arrayBufferBytes() - before) / MIB).toFixed(1)} MiB`);
});
