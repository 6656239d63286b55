/** The sealed buffer on disk: every commit completes, keys follow commit order, deletes are idempotent. */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { SealedBuffer } from '../../src/edge/buffer.js';
import { SEALED_V2_MAGIC } from '../../src/edge/sealed.js';
import { tempDir } from '../helpers/svc.js';

const META = { receivedAt: '2025-01-02T03:04:05.678Z', recipients: ['bob@home.test'], keyId: 'kid' };

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not finish in ${ms} ms`)), ms)));
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

t.test('a commit issued right after the previous one resolved still completes', async (t) => {
  const buffer = new SealedBuffer(tempDir('svc-buffer-'));
  buffer.open();
  const keys: string[] = [];
  // Awaiting each commit in turn hits the moment the previous flush is just finishing.
  for (let i = 0; i < 50; i++) keys.push(await withTimeout(buffer.commit(`jwe-${i}`, META), 5_000, `commit ${i}`));
  t.equal(keys.length, 50);
  t.same([...keys].sort(), keys, 'keys increase in commit order');
  t.same(buffer.listObjects(null, 1000).items.map((o) => o.key), keys);
});

t.test('concurrent commits share groups, and listing is in key order with the right sizes', async (t) => {
  const dir = tempDir('svc-buffer-');
  const buffer = new SealedBuffer(dir);
  buffer.open();
  const bodies = Array.from({ length: 40 }, (_, i) => 'x'.repeat(i + 1));
  const keys = await withTimeout(Promise.all(bodies.map((b) => buffer.commit(b, META))), 10_000, 'concurrent commits');
  t.same([...keys].sort(), keys, 'keys issued in the order commits were queued');
  const listed = buffer.listObjects(null, 1000).items;
  t.same(listed.map((o) => o.size), bodies.map((b) => b.length));
  t.same(fs.readdirSync(path.join(dir, 'objects')).sort(), keys.map((k) => `${k}.jwe`));
  t.same(fs.readdirSync(path.join(dir, 'queue')).sort(), keys.map((k) => `${k}.json`));
});

t.test('a long-poll waiter wakes when a commit lands and not before', async (t) => {
  const buffer = new SealedBuffer(tempDir('svc-buffer-'));
  buffer.open();
  let woke: boolean | null = null;
  const waiting = buffer.waitForNewer(null, 5_000, new Promise(() => undefined)).then((v) => (woke = v));
  await new Promise((r) => setTimeout(r, 50));
  t.equal(woke, null, 'still waiting with an empty buffer');
  await buffer.commit('jwe', META);
  await waiting;
  t.equal(woke, true);
});

t.test('reopening applies the crash rules and keeps committed objects', async (t) => {
  const dir = tempDir('svc-buffer-');
  const first = new SealedBuffer(dir);
  first.open();
  const key = await first.commit('kept', META);
  const other = await first.commit('entry only', META);
  await first.deleteEntry(key); // object without entry: a legitimate state
  fs.rmSync(path.join(dir, 'objects', `${other}.jwe`)); // entry without object: an interrupted commit or delete
  fs.writeFileSync(path.join(dir, 'queue', 'stray.json.tmp'), '{');
  const second = new SealedBuffer(dir);
  second.open();
  t.same(second.listObjects(null, 100).items, [{ key, size: 4 }]);
  t.same(second.listEntries(null, 100).items, [], 'the orphaned entry is gone');
  t.same(fs.readdirSync(path.join(dir, 'queue')), [], 'and so is the temp file');
  t.ok((await second.commit('next', META)) > key, 'new keys sort after every object on disk');
});

t.test('a batch read stops at the byte cap but always answers one object; the rest is deferred, unknown keys are missing', async (t) => {
  const buffer = new SealedBuffer(tempDir('svc-buffer-'));
  buffer.open();
  const keys: string[] = [];
  for (const body of ['a'.repeat(60), 'b'.repeat(60), 'c'.repeat(10)]) keys.push(await buffer.commit(body, META));
  const unknown = '0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b';
  const capped = await buffer.readObjects([keys[0], unknown, keys[1], keys[2]], 100);
  t.same(capped.objects, [{ key: keys[0], jwe: 'a'.repeat(60) }, { key: keys[2], jwe: 'c'.repeat(10) }], 'objects that fit, in request order');
  t.same(capped.deferred, [keys[1]], 'the one that would pass the cap waits for the next request');
  t.same(capped.missing, [unknown]);
  const tiny = await buffer.readObjects([keys[1], keys[0]], 1);
  t.same(tiny.objects.map((o) => o.key), [keys[1]], 'one object even when it alone is over the cap');
  t.same(tiny.deferred, [keys[0]]);
});

t.test('a batch fetch carries binary (v2) objects by key only, in `separate`, and GET-style streams mark them binary', async (t) => {
  const buffer = new SealedBuffer(tempDir('svc-buffer-'));
  buffer.open();
  const binary = Buffer.concat([SEALED_V2_MAGIC, Buffer.from([0, 0, 0, 1, 0xff, 0x00, 0x80])]);
  const keys = [await buffer.commit('text-jwe', META), await buffer.commit(binary, META)];
  const answer = await buffer.readObjects(keys, 1_000);
  t.same(answer.objects, [{ key: keys[0], jwe: 'text-jwe' }]);
  t.same(answer.separate, [keys[1]]);
  t.same(answer.missing, []);
  const stream = await buffer.openObjectStream(keys[1]);
  t.equal(stream?.binary, true);
  const chunks: Buffer[] = [];
  for await (const chunk of stream!.stream) chunks.push(chunk as Buffer);
  t.ok(Buffer.concat(chunks).equals(binary), 'streamed byte for byte');
  const text = await buffer.openObjectStream(keys[0]);
  t.equal(text?.binary, false);
  text?.stream.destroy();
});

t.test('a batch delete removes objects and entries, reports absent keys, and is idempotent', async (t) => {
  const dir = tempDir('svc-buffer-');
  const buffer = new SealedBuffer(dir);
  buffer.open();
  const keys = [await buffer.commit('one', META), await buffer.commit('two', META)];
  t.same(await buffer.deleteObjects([keys[0]]), { deleted: [keys[0]], absent: [] });
  t.same(buffer.listObjects(null, 10).items.map((o) => o.key), [keys[1]]);
  t.same(buffer.listEntries(null, 10).items.map((e) => e.key), [keys[1]]);
  t.same(fs.readdirSync(path.join(dir, 'objects')), [`${keys[1]}.jwe`]);
  t.same(await buffer.deleteObjects(keys), { deleted: [keys[1]], absent: [keys[0]] });
  t.same(fs.readdirSync(path.join(dir, 'queue')), []);
});

t.test('on open, a queue entry that is not JSON or not the entry shape is dropped; a whole one is kept', async (t) => {
  const dir = tempDir('svc-buffer-');
  const first = new SealedBuffer(dir);
  first.open();
  const [kept, notJson, wrongShape] = await Promise.all(['a', 'b', 'c'].map((b) => first.commit(b, META)));
  fs.writeFileSync(path.join(dir, 'queue', `${notJson}.json`), '{"key":');
  fs.writeFileSync(path.join(dir, 'queue', `${wrongShape}.json`), JSON.stringify({ key: wrongShape, size: -1, received_at: META.receivedAt, recipients: META.recipients, key_id: 'kid' }));
  const reopened = new SealedBuffer(dir);
  reopened.open();
  t.same(reopened.listEntries(null, 10).items.map((e) => e.key), [kept]);
  t.same(fs.readdirSync(path.join(dir, 'queue')), [`${kept}.json`], 'the damaged entries are removed from disk');
});
