/**
 * Mail that lands behind the pull's listing cursor (src/inbound/pipeline.ts): the edge's relay
 * stores local mail under a key it reserved before its first try (docs/edge.md), which sorts
 * before keys issued meanwhile. While mail keeps arriving a pull does not end, so it must look
 * behind its cursor itself: the object is committed while the pull still runs, once, and deleted
 * at the edge only after that. Real parts: an edge buffer on disk served over the in-process
 * hand-over (src/edge/local-handover.ts), a real database, sealing and opening; and the buffer's
 * long-poll wakes for such an object too.
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { MessageChannel } from 'node:worker_threads';
import { openDatabase } from '../../src/db/open.js';
import { SealedBuffer } from '../../src/edge/buffer.js';
import { serveLocalHandover } from '../../src/edge/local-handover.js';
import { sealInbound } from '../../src/edge/sealed.js';
import { LocalEdgeClient } from '../../src/inbound/local-edge-client.js';
import { homeKeyPair } from '../../src/inbound/home-key.js';
import { commitKey, isCommitHandled } from '../../src/inbound/commit-keys.js';
import { pullObjects } from '../../src/inbound/pipeline.js';
import { openInbound } from '../../workers/pool/tasks.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';
import { simpleMail } from '../helpers/mail.js';

const INBOX = 'agent@example.com';
/** New mail arrives this often while the pull runs, so it never catches up and ends. */
const ARRIVAL_EVERY_MS = 50;
/** Bounds the run: without a look behind the cursor the object would wait past all of these. */
const ARRIVALS_MAX = 400;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('an object landing behind the cursor during a long pull is committed while the pull runs, once, then deleted', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, INBOX);
  const home = await homeKeyPair(db);

  const buffer = new SealedBuffer(tempDir());
  buffer.open();
  const channel = new MessageChannel();
  const served = serveLocalHandover(channel.port1, buffer);
  t.teardown(() => served.close());
  const edge = new LocalEdgeClient(channel.port2);

  const seal = (subject: string) =>
    sealInbound(
      {
        envelope: { mail_from: 'alice@sender.test', rcpt_to: [INBOX], client_ip: '127.0.0.1', helo: 'edge.test', received_at: new Date().toISOString() },
        auth: { spf: { result: 'pass', domain: 'sender.test' }, dkim: { result: 'none', signatures: [] }, dmarc: { result: 'pass', policy: 'none', domain: 'sender.test' }, arc: { result: 'none' } },
        spam: null,
      },
      Buffer.from(simpleMail({ from: 'alice@sender.test', to: INBOX, subject })),
      home.publicJwk,
    );
  const land = async (subject: string, key?: string) =>
    buffer.commit(await seal(subject), { receivedAt: new Date().toISOString(), recipients: [INBOX], keyId: 'test', ...(key ? { key } : {}) });
  const stored = (key: string) => isCommitHandled(db, commitKey(key, INBOX));

  // Reserved first, as the relay does before its first try; stored only once the pull is past it.
  const reserved = buffer.reserveKey();
  const first = await land('first');
  const stopped = new AbortController();
  t.teardown(() => stopped.abort());
  const pull = pullObjects({ db, edge, open: (jwe) => openInbound({ jwe, privateJwk: home.privateJwk }), publish: () => {} }, stopped.signal);
  let pullEnded = false;
  void pull.finally(() => (pullEnded = true));

  const arrived = [first];
  while (!stored(first) && arrived.length < ARRIVALS_MAX) {
    arrived.push(await land(`before ${arrived.length}`));
    await sleep(ARRIVAL_EVERY_MS);
  }
  t.ok(stored(first), 'the pull is past the reserved key');
  // With newer mail in the same moment, so the lister finds work after its cursor and is not idle.
  const [behind, ...beside] = await Promise.all([land('behind', reserved), land('beside 1'), land('beside 2')]);
  t.equal(behind, reserved, 'the object lands under the key reserved before the others');
  t.ok(reserved < first, 'which sorts before every key the pull has listed');

  // Mail keeps coming until the object is stored, or the bound.
  let storedWhileArriving = false;
  while (arrived.length < ARRIVALS_MAX && !pullEnded) {
    if (stored(reserved)) {
      storedWhileArriving = true;
      break;
    }
    arrived.push(await land(`after ${arrived.length}`));
    await sleep(ARRIVAL_EVERY_MS);
  }
  t.notOk(pullEnded, 'the pull was still running while mail arrived');
  t.ok(storedWhileArriving, `committed during the pull, after ${arrived.length} arrivals`);

  const outcome = await pull;
  t.match(outcome, { ended: 'done' }, 'the pull ended once mail stopped');
  for (const key of [...arrived, reserved, ...beside]) if (!stored(key)) t.fail(`${key} was not stored`);
  const rows = db.prepare('SELECT source_key, COUNT(*) AS n FROM messages GROUP BY source_key HAVING n > 1').all();
  t.same(rows, [], 'none stored twice');
  t.equal((db.prepare('SELECT COUNT(*) AS n FROM messages').get() as { n: number }).n, arrived.length + 1 + beside.length, 'every object stored');
  t.equal(buffer.listObjects(null, 1_000).items.length, 0, 'and deleted at the edge after its commit');
});

t.test("the edge's long-poll wakes for an object landing behind the waiter's key", async (t) => {
  const buffer = new SealedBuffer(tempDir());
  buffer.open();
  const reserved = buffer.reserveKey();
  const newest = await buffer.commit('jwe-newest', { receivedAt: new Date().toISOString(), recipients: [INBOX], keyId: 'k' });
  let answered: boolean | null = null;
  const waiting = buffer.waitForNewer(newest, 10_000, new Promise<void>(() => {})).then((available) => (answered = available));
  await sleep(50);
  t.equal(answered, null, 'nothing newer than the newest key: it waits');
  await buffer.commit('jwe-behind', { receivedAt: new Date().toISOString(), recipients: [INBOX], keyId: 'k', key: reserved });
  t.equal(await waiting, true, 'woken by the object under the earlier reserved key');
  t.equal(buffer.latest, newest, 'which sorts behind the newest');
});
