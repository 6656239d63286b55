/**
 * A busy database is a reason to wait, never to quarantine mail (issue 17 §1, the write-lock rule
 * of issue 16). A second connection, in a thread of its own, plays a busy writer while the
 * inbound committer (commitBatch, on the service's own kind of connection) commits a real parsed
 * message: it holds svc.db's write lock with a write of its own, commits, and at once holds the
 * lock again for longer than SQLite's busy_timeout. Once it lets go, the message is stored
 * exactly once and nothing is quarantined. Before the rule, the commit read first in a deferred
 * transaction, lost its upgrade to the first commit (SQLITE_BUSY_SNAPSHOT, which busy_timeout
 * does not cover), timed out behind the second hold in its per-object fallback, and parked the
 * message as `commit_failed`.
 */
import t from 'tap';
import path from 'node:path';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { openDatabase } from '../../src/db/open.js';
import { commitBatch, type IngestDeps } from '../../src/inbound/ingest.js';
import { deriveText } from '../../src/mail/extract.js';
import { parseMime } from '../../workers/pool/parse.js';
import type { OpenedInbound } from '../../workers/pool/tasks.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';
import { simpleMail } from '../helpers/mail.js';

/** The first hold (with a write) covers the start of the commit. */
const FIRST_HOLD_MS = 1_000;
/** The second hold follows at once and outlasts the service's busy_timeout (5 s). */
const SECOND_HOLD_MS = 6_500;

/** The busy writer: signals once it holds the lock, then runs the two holds and exits. */
const HOLDER = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma("cipher='sqlcipher'");
db.pragma('legacy=4');
db.pragma(\`key="x'\${workerData.key}'"\`);
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
db.exec('BEGIN IMMEDIATE');
db.prepare("INSERT OR REPLACE INTO settings (key, value) VALUES ('security_test_hold', '1')").run();
parentPort.postMessage('holding');
pause(workerData.first);
db.exec('COMMIT');
db.exec('BEGIN IMMEDIATE');
pause(workerData.second);
db.exec('COMMIT');
db.close();
`;

t.test('a commit that meets a busy writer waits for it and stores the message; nothing is quarantined', async (t) => {
  const file = path.join(tempDir(), 'svc.db');
  const key = randomBytes(32);
  const db = openDatabase(file, key, { migrate: true });
  t.teardown(() => db.close());
  const inboxId = insertInbox(db, 'agent@example.com');
  const raw = Buffer.from(simpleMail({ to: inboxId, subject: 'arrives while busy', messageId: '<busy-1@example.org>', body: 'Hello.' }).replace(/\r?\n/g, '\r\n'));
  const parsed = await parseMime(raw);
  const mail: OpenedInbound = {
    envelope: { mail_from: 'someone@example.org', rcpt_to: [inboxId], client_ip: '127.0.0.1', helo: 'client.test', received_at: new Date().toISOString() },
    auth: { spf: { result: 'pass', domain: 'example.org' }, dkim: { result: 'none', signatures: [] }, dmarc: { result: 'none', policy: null, domain: null }, arc: { result: 'none' } },
    spam: null,
    raw,
    parsed,
    derived: deriveText(parsed),
  };
  const published: number[] = [];
  const deps: IngestDeps = {
    db,
    edge: null as never, // commitBatch never talks to the edge
    open: () => Promise.reject(new Error('not used')),
    publish: (seq) => published.push(seq),
  };

  const holder = new Worker(HOLDER, {
    eval: true,
    workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3-multiple-ciphers'), file, key: key.toString('hex'), first: FIRST_HOLD_MS, second: SECOND_HOLD_MS },
  });
  const exited = new Promise<number>((resolve) => holder.on('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    holder.once('message', () => resolve());
    holder.once('error', reject);
  });

  let committed: string[] = [];
  let thrown: unknown = null;
  try {
    committed = await commitBatch(deps, { ready: [{ key: 'obj-busy-1', size: raw.length, mail }], processed: 1 });
  } catch (err) {
    thrown = err;
  }
  t.equal(await exited, 0, 'the busy writer finished both holds');

  t.equal(thrown, null, 'the commit did not fail');
  t.same(committed, ['obj-busy-1'], 'the object is reported committed, so it is deleted at the edge');
  const stored = db.prepare('SELECT inbox_id, subject FROM messages WHERE source_key = ?').all('obj-busy-1:agent@example.com');
  t.same(stored, [{ inbox_id: inboxId, subject: 'arrives while busy' }], 'the message is stored exactly once');
  t.same(db.prepare('SELECT reason_code FROM inbound_quarantine').all(), [], 'nothing was quarantined');
  t.equal(published.length, 1, 'its event is published');
  t.equal((db.prepare("SELECT value FROM settings WHERE key = 'security_test_hold'").get() as { value: string }).value, '1', "the other writer's commit stands too");
});
