/** Event log retention (spec §6.3, §8): 30 days, longer only while a webhook still must deliver. */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { appendEvent, eventsAfter } from '../../src/events/log.js';
import { EventPruneSchedule, PRUNE_INTERVAL_MS, pruneEvents } from '../../src/events/retention.js';
import { tempDir } from '../helpers/svc.js';

const DAY = 24 * 3600 * 1000;

function fixture(): { db: Db; appendAged: (ageMs: number) => number; remaining: () => number[] } {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  const appendAged = (ageMs: number) => {
    const { seq } = appendEvent(db, { eventType: 'domain.verified', inboxId: null, payloadKey: 'domain', payload: { domain: 'x.test' } });
    db.prepare('UPDATE events SET created_at = ? WHERE seq = ?').run(new Date(Date.now() - ageMs).toISOString(), seq);
    return seq;
  };
  return { db, appendAged, remaining: () => eventsAfter(db, 0, 1000).map((e) => e.seq) };
}

t.test('events older than 30 days are deleted, younger ones stay', async (t) => {
  const { db, appendAged, remaining } = fixture();
  const old = [appendAged(40 * DAY), appendAged(31 * DAY)];
  const young = [appendAged(29 * DAY), appendAged(DAY), appendAged(0)];
  t.equal(pruneEvents(db), old.length);
  t.same(remaining(), young);
});

t.test('events a webhook still must deliver are kept past 30 days', async (t) => {
  const { db, appendAged, remaining } = fixture();
  const delivered = appendAged(45 * DAY);
  const undelivered = [appendAged(40 * DAY), appendAged(35 * DAY)];
  const young = appendAged(DAY);
  t.equal(pruneEvents(db, { oldestUndeliveredSeq: undelivered[0] }), 1);
  t.same(remaining(), [...undelivered, young], `seq ${delivered} went; the undelivered ones stay`);
  t.equal(pruneEvents(db, { oldestUndeliveredSeq: null }), 2, 'once delivered they go');
  t.same(remaining(), [young]);
});

t.test('a prune deletes large backlogs completely', async (t) => {
  const { db, appendAged, remaining } = fixture();
  db.transaction(() => {
    for (let i = 0; i < 12_000; i++) appendAged(31 * DAY);
  })();
  const young = appendAged(0);
  t.equal(pruneEvents(db), 12_000);
  t.same(remaining(), [young]);
});

t.test('the webhooks loop prunes at most once per hour', async (t) => {
  const { db, appendAged } = fixture();
  const schedule = new EventPruneSchedule();
  const start = Date.now();
  appendAged(31 * DAY);
  t.equal(schedule.pruneIfDue(db, { now: start }), 1, 'the first pass prunes at once');
  appendAged(31 * DAY);
  t.equal(schedule.pruneIfDue(db, { now: start + 1_000 }), null, 'a pass a second later does not');
  t.equal(schedule.pruneIfDue(db, { now: start + PRUNE_INTERVAL_MS - 1 }), null, 'nor just under an hour later');
  t.equal(schedule.pruneIfDue(db, { now: start + PRUNE_INTERVAL_MS }), 1, 'an hour later it prunes again');
  t.equal(PRUNE_INTERVAL_MS, 3600 * 1000);
});
