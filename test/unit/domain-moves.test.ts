/**
 * The domain status writes (src/domains/store.ts) on a real database: every row of
 * docs/domains.md "State machine" that moves a domain, applied through the store's functions
 * (the owner's apply, verify, teardown and delete, the loop's `transition`, the self-test hook), from
 * its from-states; and the guard: a move from a status the domain is no longer in changes
 * nothing, and a self-test for a domain that is not verifying verifies nothing.
 */
import t, { type Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { DOMAIN_STATUSES, DOMAIN_TRANSITIONS, type DomainStatus, type DomainTrigger } from '../../src/domains/states.js';
import { applyDomain, checkDomainCreate, deleteDomain, domainRow, insertDomain, receiveSelftest, recordSelftestSent, requestVerification, SELFTEST_HEADER, teardownDomain, transition } from '../../src/domains/store.js';
import { tempDir } from '../helpers/svc.js';

const OWNER_CALLS = { apply: applyDomain, verify: requestVerification, teardown: teardownDomain } as const;
type OwnerCall = keyof typeof OWNER_CALLS;
const LOOP_TRIGGERS: readonly DomainTrigger[] = ['routed', 'unrouted', 'dns_invalid', 'selftest_timeout', 'selftest_refused'];

function store(t: Test): Db {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  return db;
}

let n = 0;
/** A registered domain put in `status`, with a self-test under way (so a fresh check is visible). */
async function domainIn(db: Db, status: DomainStatus): Promise<string> {
  const id = db.transaction(() => insertDomain(db, checkDomainCreate({ domain: `d${++n}.example.com` })))();
  db.prepare("UPDATE domains SET status = ?, selftest_token = 'tok', selftest_sent_at = '2026-01-01T00:00:00.000Z', checks = '[{}]' WHERE domain_id = ?").run(status, id);
  return id;
}

const freshCheck = (db: Db, id: string) => {
  const row = domainRow(db, id);
  return row.checks === '[]' && row.selftest_token === null && row.selftest_sent_at === null;
};

for (const row of DOMAIN_TRANSITIONS) {
  if (typeof row.to !== 'string' || row.to === 'gone' || row.trigger === 'selftest_back' || row.trigger === 'delete') continue;
  t.test(`${row.trigger} from ${row.from.join(', ')} → ${row.to}`, async (t) => {
    const db = store(t);
    for (const from of row.from) {
      const id = await domainIn(db, from);
      if (row.trigger in OWNER_CALLS) OWNER_CALLS[row.trigger as OwnerCall](db, id);
      else t.equal(transition(db, id, from, row.trigger, 'why'), true, `${from}: moved`);
      const expected = row.to === 'unchanged' ? from : row.to;
      t.equal(domainRow(db, id).status, expected, `${from}: status`);
      t.equal(freshCheck(db, id), row.resetsVerification === true, `${from}: fresh check`);
    }
  });
}

t.test('the loop moves nothing from a status the domain is no longer in', async (t) => {
  const db = store(t);
  for (const trigger of LOOP_TRIGGERS) {
    const row = DOMAIN_TRANSITIONS.find((r) => r.trigger === trigger)!;
    const from = row.from[0];
    for (const now of DOMAIN_STATUSES.filter((s) => s !== from)) {
      const id = await domainIn(db, now);
      t.equal(transition(db, id, from, trigger, 'why'), false, `${trigger} read in ${from}, now ${now}`);
      t.equal(domainRow(db, id).status, now, `${trigger}: still ${now}`);
      t.equal(domainRow(db, id).reason, null, `${trigger}: no reason written`);
    }
  }
});

t.test('a loop trigger the table has no move for throws', async (t) => {
  const db = store(t);
  const id = await domainIn(db, 'verified');
  t.throws(() => transition(db, id, 'verified', 'routed', null));
  t.equal(domainRow(db, id).status, 'verified');
});

t.test('delete: gone from pending and torn_down, 409 conflict from any other status', async (t) => {
  const db = store(t);
  for (const status of DOMAIN_STATUSES) {
    const id = await domainIn(db, status);
    const gone = status === 'pending' || status === 'torn_down';
    if (gone) {
      deleteDomain(db, id);
      t.throws(() => domainRow(db, id), { code: 'not_found' }, `${status}: deleted`);
    } else {
      t.throws(() => deleteDomain(db, id), { code: 'conflict' }, `${status}: refused`);
      t.equal(domainRow(db, id).status, status, `${status}: kept`);
    }
  }
});

const selftestMail = (token: string): [string, string][] => [[SELFTEST_HEADER.toLowerCase(), `${SELFTEST_HEADER}: ${token}`]];
const verifiedEvents = (db: Db) => (db.prepare("SELECT count(*) AS n FROM events WHERE event_type = 'domain.verified'").get() as { n: number }).n;

t.test('the self-test back: verifying → verified with domain.verified, once', async (t) => {
  const db = store(t);
  const id = await domainIn(db, 'verifying');
  db.prepare('UPDATE domains SET selftest_token = NULL, selftest_sent_at = NULL WHERE domain_id = ?').run(id);
  t.ok(recordSelftestSent(db, id, 'the-token'));
  const domain = domainRow(db, id).domain;
  t.equal(receiveSelftest(db, `svc-selftest@${domain}`, selftestMail('other-token')), null, 'another token verifies nothing');
  const seq = receiveSelftest(db, `svc-selftest@${domain}`, selftestMail('the-token'));
  t.type(seq, 'number', 'the event seq is returned');
  const row = domainRow(db, id);
  t.equal(row.status, 'verified');
  t.equal(row.reason, null);
  t.ok(row.verified_at && row.selftest_received_at, 'received and verified stamped');
  t.equal(verifiedEvents(db), 1);
  t.equal(receiveSelftest(db, `svc-selftest@${domain}`, selftestMail('the-token')), null, 'a second copy changes nothing');
  t.equal(verifiedEvents(db), 1, 'one event');
});

t.test('the self-test back for a domain that is not verifying any more verifies nothing', async (t) => {
  const db = store(t);
  for (const status of DOMAIN_STATUSES.filter((s) => s !== 'verifying')) {
    const id = await domainIn(db, status);
    t.equal(receiveSelftest(db, `svc-selftest@${domainRow(db, id).domain}`, selftestMail('tok')), null, status);
    t.equal(domainRow(db, id).status, status);
  }
  t.equal(verifiedEvents(db), 0);
});
