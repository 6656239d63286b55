/**
 * The event hub (src/events/hub.ts) shares the service's thread fairly: a client that takes every
 * frame at once (its socket never backs up) gets at most one log read per event-loop turn, so a
 * long backlog, or a log that writers keep growing, never holds the thread while other clients,
 * the log poll and the HTTP API wait. Before, one fast client was served in a single synchronous
 * loop for as long as rows kept coming: on a loaded machine a second reader received nothing for
 * 30 s and the log poll stopped (test/e2e/reliability-websocket.test.ts flaked on it).
 *
 * Real database, real bus and hub; the socket is a stand-in with the `ws` surface the hub uses
 * whose buffer always drains at once, like a reader on another thread of a fast machine.
 */
import t from 'tap';
import path from 'node:path';
import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import type { WebSocket } from 'ws';
import { openDatabase, type Db } from '../../src/db/open.js';
import { appendEvent } from '../../src/events/log.js';
import { EventHub } from '../../src/events/hub.js';
import { Bus } from '../../src/supervisor/bus.js';
import type { Principal } from '../../src/auth/principal.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const INBOX = 'turns@example.com';
const OWNER: Principal = { kind: 'owner', id: 'owner', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };
const EVENTS = 1_000;

/**
 * Records every frame sent, in one order shared by all sockets. The send callback runs on
 * process.nextTick, as ws's does when the kernel takes the write at once: before the event loop
 * moves on, so a hub that reads again from the callback would never let the loop turn.
 */
class DrainingSocket extends EventEmitter {
  readonly OPEN = 1;
  readonly CLOSED = 3;
  readyState = 1;
  bufferedAmount = 0;
  readonly events: string[] = [];
  closed: number | null = null;
  constructor(
    readonly name: string,
    readonly order: string[],
  ) {
    super();
  }
  send(data: string, cb?: (err?: Error | null) => void): void {
    const frame = JSON.parse(data) as { type: string; event_id?: string };
    if (frame.type === 'event') {
      this.events.push(frame.event_id!);
      this.order.push(this.name);
    }
    if (cb) process.nextTick(() => cb(null));
  }
  close(code: number): void {
    this.closed = code;
    this.readyState = this.CLOSED;
    this.emit('close', code);
  }
  ping(): void {}
  terminate(): void {
    this.close(1006);
  }
  subscribe(): void {
    this.emit('message', Buffer.from(JSON.stringify({ type: 'subscribe', event_types: ['message.received'] })), false);
  }
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A fresh database with the inbox the events belong to. */
function homeDb(t: typeof import('tap').default): Db {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, INBOX);
  return db;
}

/** `n` message.received events appended in one transaction, as a writer the hub does not hear on its bus. */
function appendEvents(db: Db, n: number): { seq: number; eventId: string }[] {
  return db.transaction(() =>
    Array.from({ length: n }, () => {
      const message = { inbox_id: INBOX, thread_id: 'thr-1', message_id: `<${Math.random()}@example.com>`, subject: 'Hello', text: 'x', timestamp: new Date().toISOString() };
      return appendEvent(db, { eventType: 'message.received', inboxId: INBOX, payloadKey: 'message', payload: message });
    }),
  )();
}

t.test('a client that takes everything at once gets one log read per turn, and another client is served alongside', async (t) => {
  const db = homeDb(t);
  const ids = appendEvents(db, EVENTS).map((e) => e.eventId);
  const hub = new EventHub(db, new Bus(), { pingMs: 600_000, pongTimeoutMs: 600_000 });
  const order: string[] = [];
  const [a, b] = [new DrainingSocket('a', order), new DrainingSocket('b', order)];
  // Both replay the whole log from its start.
  hub.accept(a as unknown as WebSocket, OWNER, null, 0);
  hub.accept(b as unknown as WebSocket, OWNER, null, 0);
  a.subscribe();
  t.ok(a.events.length > 0 && a.events.length <= 100, `the subscribe's own turn sends one read's worth (${a.events.length} of ${EVENTS})`);
  b.subscribe();
  for (let i = 0; i < 10_000 && (a.events.length < EVENTS || b.events.length < EVENTS); i++) await turn();
  t.same(a.events, ids, 'the first client got every event, in order');
  t.same(b.events, ids, 'the second client got every event, in order');
  const aDone = order.lastIndexOf('a');
  const bFirst = order.indexOf('b');
  t.ok(bFirst < aDone, `the second client was served before the first had everything (its first event at ${bFirst}, the first client's last at ${aDone})`);
  t.equal(a.closed, null);
  t.equal(b.closed, null);
  await hub.close();
});

t.test('new rows announced on the bus are sent one read per turn: a timer set meanwhile runs before the client has them all', async (t) => {
  const db = homeDb(t);
  const bus = new Bus();
  const hub = new EventHub(db, bus, { pingMs: 600_000, pongTimeoutMs: 600_000 });
  const socket = new DrainingSocket('a', []);
  // Opened at the head of an empty log: live events only.
  hub.accept(socket as unknown as WebSocket, OWNER, null, 0);
  socket.subscribe();
  await turn();
  const written = appendEvents(db, EVENTS);
  let timerSawEvents: number | null = null;
  setTimeout(() => (timerSawEvents = socket.events.length), 0);
  // What the inbound loop's commit posts.
  bus.publish({ kind: 'event', seq: written.at(-1)!.seq });
  t.ok(socket.events.length > 0 && socket.events.length <= 100, `the publishing turn sends one read's worth (${socket.events.length} of ${EVENTS})`);
  for (let i = 0; i < 10_000 && socket.events.length < EVENTS; i++) await turn();
  t.same(socket.events, written.map((w) => w.eventId), 'every event, in order');
  t.ok(timerSawEvents !== null && timerSawEvents < EVENTS, `a timer ran while the events were being sent (after ${timerSawEvents} of ${EVENTS})`);
  await hub.close();
});

t.test('an event committed and announced just after a connection caught up is sent without waiting for another', async (t) => {
  const db = homeDb(t);
  const bus = new Bus();
  appendEvents(db, 100);
  const hub = new EventHub(db, bus, { pingMs: 600_000, pongTimeoutMs: 600_000 });
  const socket = new DrainingSocket('a', []);
  hub.accept(socket as unknown as WebSocket, OWNER, null, 0);
  socket.subscribe();
  for (let i = 0; i < 100 && socket.events.length < 100; i++) await turn();
  t.equal(socket.events.length, 100, 'the backlog');
  // Committed and announced in the next timers phase, right after the connection's last read.
  const late = await new Promise<{ seq: number; eventId: string }>((resolve) =>
    setTimeout(() => {
      const [written] = appendEvents(db, 1);
      bus.publish({ kind: 'event', seq: written.seq });
      resolve(written);
    }, 0),
  );
  for (let i = 0; i < 20 && socket.events.length < 101; i++) await turn();
  t.equal(socket.events.at(-1), late.eventId, 'the new event is sent on its own notice');
  await hub.close();
});
