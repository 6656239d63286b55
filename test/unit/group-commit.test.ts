/**
 * Group commit and the write gate: writes of one event-loop turn share a transaction and a WAL
 * sync; a failing write is rolled back alone; while another thread holds the gate the request
 * thread keeps serving and commits once it is released; a thread that died holding the gate
 * does not keep the others out.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { groupCommit } from '../../src/db/group-commit.js';
import { openDatabase, syncWal, type Db } from '../../src/db/open.js';
import { WriteGate } from '../../src/db/write-gate.js';
import { tempDir } from '../helpers/svc.js';

function open(gate?: WriteGate): Db {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true, gate });
  db.exec('CREATE TABLE t (v TEXT NOT NULL UNIQUE)');
  return db;
}

const values = (db: Db) => (db.prepare('SELECT v FROM t ORDER BY v').all() as { v: string }[]).map((r) => r.v);

t.test('writes of one turn share a commit; one that throws is rolled back and rejected alone', async (t) => {
  const db = open();
  t.teardown(() => db.close());
  const insert = (v: string) => () => db.prepare('INSERT INTO t (v) VALUES (?)').run(v).changes;
  const results = await Promise.allSettled([
    groupCommit(db, insert('a')),
    groupCommit(db, () => {
      insert('b')();
      insert('a')(); // duplicate: throws after writing 'b'
    }),
    groupCommit(db, insert('c')),
  ]);
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
  t.same(values(db), ['a', 'c'], "the failed write's own changes ('b') are gone, the others committed");
  t.equal(await groupCommit(db, () => 42), 42, 'a later turn commits on its own');
  t.equal(db.pragma('synchronous', { simple: true }), 1, 'SQLite does not fsync inside the lock (NORMAL); the WAL sync follows the commit');
});

t.test('the WAL sync is shared by callers that overlap and its descriptor closes with the connection', async (t) => {
  const db = open();
  const wal = `${db.name}-wal`;
  const walDescriptors = () =>
    fs.readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`) === wal;
      } catch {
        return false;
      }
    }).length;
  db.prepare("INSERT INTO t (v) VALUES ('x')").run();
  await Promise.all([syncWal(db), syncWal(db), groupCommit(db, () => db.prepare("INSERT INTO t (v) VALUES ('y')").run()), syncWal(db)]);
  t.same(values(db), ['x', 'y']);
  t.equal(walDescriptors(), 2, "SQLite's descriptor of the WAL and the one kept for syncing it");
  db.close();
  t.equal(walDescriptors(), 0, 'closing the connection closes both');
});

/** Another thread of the service: takes the gate, says so, holds it for `ms`, then releases (or dies holding it). */
const HOLDER = `
const { workerData, parentPort, threadId } = require('node:worker_threads');
const word = new Int32Array(workerData.gate);
if (Atomics.compareExchange(word, 0, 0, threadId + 1) !== 0) throw new Error('gate not free');
parentPort.postMessage('holding');
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.ms);
if (workerData.release) {
  parentPort.postMessage('releasing');
  if (workerData.flag) Atomics.store(new Int32Array(workerData.flag), 0, 1);
  Atomics.store(word, 0, 0);
  Atomics.notify(word, 0);
}
`;

function holder(gate: WriteGate, ms: number, release: boolean, flag?: SharedArrayBuffer) {
  const worker = new Worker(HOLDER, { eval: true, workerData: { gate: gate.buffer, ms, release, flag } });
  const messages: string[] = [];
  const holding = new Promise<void>((resolve, reject) => {
    worker.on('message', (m: string) => {
      messages.push(m);
      if (m === 'holding') resolve();
    });
    worker.once('error', reject);
  });
  const exited = new Promise<number>((resolve) => worker.on('exit', resolve));
  return { worker, messages, holding, exited };
}

t.test('while another thread holds the gate, the request thread keeps running and commits after the release', async (t) => {
  const gate = new WriteGate();
  const db = open(gate);
  t.teardown(() => db.close());
  const other = holder(gate, 400, true);
  await other.holding;
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 10);
  const order: string[] = [];
  const committed = groupCommit(db, () => db.prepare("INSERT INTO t (v) VALUES ('after')").run()).then(() => order.push(`committed after ${other.messages.join(',')}`));
  await committed;
  clearInterval(ticker);
  t.same(order, ['committed after holding,releasing'], 'the commit waited for the release');
  t.ok(ticks >= 5, `the event loop ran while the commit waited (${ticks} timer ticks)`);
  t.same(values(db), ['after']);
  t.notOk(gate.held(), 'the request thread released the gate after its commit');
  t.equal(await other.exited, 0);
});

t.test('a thread that died holding the gate is freed by the supervisor', async (t) => {
  const gate = new WriteGate();
  const db = open(gate);
  t.teardown(() => db.close());
  const other = holder(gate, 0, false);
  await other.holding;
  const threadId = other.worker.threadId;
  t.equal(await other.exited, 0, 'the holder ended without releasing');
  gate.releaseDeadHolder(threadId + 1); // another thread's id: no effect
  t.equal(new Int32Array(gate.buffer)[0], threadId + 1, 'still marked as held by the dead thread');
  gate.releaseDeadHolder(threadId);
  t.ok(gate.acquireSync(), 'the gate is free again');
  gate.release();
  db.prepare("INSERT INTO t (v) VALUES ('later')").run();
  await groupCommit(db, () => db.prepare("INSERT INTO t (v) VALUES ('grouped')").run());
  t.same(values(db), ['grouped', 'later']);
});

t.test('a transaction on a gated connection takes and releases the gate, also when it throws', async (t) => {
  const gate = new WriteGate();
  const db = open(gate);
  t.teardown(() => db.close());
  let heldInside = false;
  db.transaction(() => {
    heldInside = gate.held();
    db.prepare("INSERT INTO t (v) VALUES ('a')").run();
  })();
  t.ok(heldInside, 'held during the transaction');
  t.notOk(gate.held(), 'released after it');
  t.throws(() =>
    db.transaction(() => {
      db.prepare("INSERT INTO t (v) VALUES ('b')").run();
      throw new Error('boom');
    })(),
  );
  t.notOk(gate.held(), 'released after a transaction that threw');
  t.same(values(db), ['a']);
});

t.test('a single write outside a transaction runs as a transaction of its own: it waits for the gate and is synced', async (t) => {
  const gate = new WriteGate();
  const db = open(gate);
  t.teardown(() => db.close());
  const released = new SharedArrayBuffer(4);
  const other = holder(gate, 300, true, released);
  await other.holding;
  db.prepare("INSERT INTO t (v) VALUES ('single')").run();
  t.equal(Atomics.load(new Int32Array(released), 0), 1, 'the write ran only after the other thread released the gate');
  t.notOk(gate.held(), 'and released it');
  const returned = db.prepare("INSERT INTO t (v) VALUES ('returning') RETURNING v").get() as { v: string };
  t.equal(returned.v, 'returning', 'a write that returns rows works the same way');
  t.notOk(db.inTransaction);
  const inside = db.transaction(() => db.prepare("INSERT INTO t (v) VALUES ('inside')").run().changes)();
  t.equal(inside, 1, 'inside a transaction it is part of that transaction');
  t.same(values(db), ['inside', 'returning', 'single']);
  t.equal(await other.exited, 0);
});
