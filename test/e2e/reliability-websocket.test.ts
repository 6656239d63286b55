/**
 * A slow WebSocket client is closed with 1013 while the others keep receiving (spec §6.4, issue
 * 10 item 2). test/e2e/websocket.test.ts proves the 1013 and a later resume; here two readers
 * are connected the whole time the slow one stalls, and must get every event live, in order,
 * without a close — before, during and after the slow client is dropped.
 *
 * The two readers run on a worker thread (test/fixtures/ws-readers.mjs): this thread seeds 1 MiB
 * of events at a time, and a reader sharing its event loop stops reading while a seed runs, so on
 * a loaded machine its socket could back up past 1 MiB and be closed as slow, which it would be.
 */
import t from 'tap';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import WebSocket from 'ws';
import { startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import type { Db } from '../../src/db/open.js';
import { appendEvent } from '../../src/events/log.js';
import { until } from '../helpers/until.js';
import { repoRoot } from '../helpers/svc.js';

const INBOX = 'a@ws.test';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Client {
  ws: WebSocket;
  ids: string[];
  closed: { code: number } | null;
}

interface Reader {
  ids: string[];
  closed: { code: number } | null;
}

/** Two subscribed readers on a worker thread of their own; their events and closes recorded here. */
async function readersOnWorker(t: typeof import('tap').default, svc: RunningSvc): Promise<[Reader, Reader]> {
  const readers: [Reader, Reader] = [
    { ids: [], closed: null },
    { ids: [], closed: null },
  ];
  const worker = new Worker(path.join(repoRoot, 'test', 'fixtures', 'ws-readers.mjs'), {
    workerData: { url: `${svc.url.replace(/^http/, 'ws')}/v0/ws`, token: svc.ownerToken, readers: readers.length },
  });
  t.teardown(() => worker.terminate());
  let subscribed = 0;
  const errors: string[] = [];
  worker.on('message', (m: { type: string; reader: number; eventId?: string; code?: number; message?: string }) => {
    if (m.type === 'subscribed') subscribed++;
    else if (m.type === 'event') readers[m.reader]!.ids.push(m.eventId!);
    else if (m.type === 'closed') readers[m.reader]!.closed = { code: m.code! };
    else if (m.type === 'error') errors.push(m.message!);
  });
  await until(() => `both readers subscribed (${subscribed}; errors: ${errors.join('; ') || 'none'})`, () => subscribed === readers.length);
  return readers;
}

async function connect(svc: RunningSvc): Promise<Client> {
  const ws = new WebSocket(`${svc.url.replace(/^http/, 'ws')}/v0/ws`, { headers: { authorization: `Bearer ${svc.ownerToken}` } });
  const client: Client = { ws, ids: [], closed: null };
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => {
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as { type: string; event_id?: string };
        if (frame.type === 'subscribed') resolve();
        else if (frame.type === 'ping') ws.send(JSON.stringify({ type: 'pong' }));
        else if (frame.type === 'event') client.ids.push(frame.event_id!);
      });
      ws.on('close', (code) => (client.closed = { code }));
      ws.send(JSON.stringify({ type: 'subscribe', event_types: ['message.received'] }));
    });
  });
  return client;
}

/** A message.received event of about `size` bytes, appended by a writer the service does not hear on its bus. */
function seed(db: Db, size: number): string {
  const message = { inbox_id: INBOX, thread_id: 'thr-1', message_id: `<${Math.random()}@ws.test>`, subject: 'Hello', text: 'x'.repeat(size), timestamp: new Date().toISOString() };
  return appendEvent(db, { eventType: 'message.received', inboxId: INBOX, payloadKey: 'message', payload: message, extra: { thread: { inbox_id: INBOX, thread_id: 'thr-1', subject: 'Hello' } } }).eventId;
}

t.test('a slow client is closed with 1013 while the others keep receiving every event live', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const db = openHomeDb(svc.home);
  t.teardown(() => db.close());
  const slow = await connect(svc);
  t.teardown(() => slow.ws.terminate());
  const [reader, small] = await readersOnWorker(t, svc);
  slow.ws.pause(); // stops reading: the kernel buffers fill, then the server's own queue grows

  const sent: string[] = [];
  // Enough to pass 1 MiB pending for the stalled client, in steps so delivery is live. Loopback
  // TCP buffers grow to several MiB on each side (tcp_wmem/tcp_rmem maxima, up to ~10 MiB
  // together) before the server's own queue grows at all: 32 MiB leaves no doubt.
  for (let i = 0; i < 32; i++) {
    sent.push(db.transaction(() => Array.from({ length: 4 }, () => seed(db, 256 * 1024)))().at(-1)!);
    await sleep(150);
  }
  // Everything so far reached the readers while the slow one stalled.
  const all = (db.prepare("SELECT event_id FROM events WHERE event_type = 'message.received' ORDER BY seq").all() as { event_id: string }[]).map((r) => r.event_id);
  const seen = (c: Reader) => `${c.ids.length} of ${all.length}${c.closed ? `, closed with ${c.closed.code}` : ''}`;
  await until(() => `the readers caught up (reader ${seen(reader)}; second reader ${seen(small)})`, () => reader.ids.length === all.length && small.ids.length === all.length);
  t.same(reader.ids, all, 'reader: every event, in order');
  t.same(small.ids, all, 'second reader: every event, in order');

  slow.ws.resume();
  await until('the slow client closed', () => slow.closed !== null);
  t.equal(slow.closed?.code, 1013, 'the slow client is closed with 1013');
  t.ok(slow.ids.length < all.length, `the slow client got only part of the backlog (${slow.ids.length} of ${all.length})`);

  // After the slow one is gone the others keep streaming.
  const after = [seed(db, 1_000), seed(db, 1_000)];
  await until('events after the close', () => after.every((id) => reader.ids.includes(id) && small.ids.includes(id)));
  t.same(reader.ids.slice(-2), after, 'the reader keeps receiving after the slow client was dropped');
  t.equal(reader.closed, null, 'the reader was never closed');
  t.equal(small.closed, null, 'the second reader was never closed');
});
