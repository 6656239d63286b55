/**
 * The webhook retry decision (src/webhooks/retry.ts, docs/webhooks.md "Retries"), row by row,
 * with the schedule of the loop timing table: retry with the scheduled wait, drop after the last
 * retry, disable after unbroken failure for the threshold.
 */
import t from 'tap';
import { afterFailedAttempt, type RetryPolicy } from '../../src/webhooks/retry.js';
import { WEBHOOK_DISABLE_AFTER_MS, WEBHOOK_RETRY_SCHEDULE_MS } from '../../src/supervisor/loop-table.js';

const policy: RetryPolicy = { retryDelaysMs: WEBHOOK_RETRY_SCHEDULE_MS, disableAfterMs: WEBHOOK_DISABLE_AFTER_MS };
const now = Date.parse('2026-11-20T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const HOUR = 3600_000;

t.test('the schedule is the documented one: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; disable after 5 days', async (t) => {
  t.same(WEBHOOK_RETRY_SCHEDULE_MS, [5_000, 300_000, 1_800_000, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]);
  t.equal(WEBHOOK_DISABLE_AFTER_MS, 5 * 24 * HOUR);
});

const rows: { rule: string; hook: { retry_seq: number | null; attempts: number; first_failure_at: string | null }; seq: number; expect: ReturnType<typeof afterFailedAttempt> }[] = [
  {
    rule: 'a first failure schedules retry 1 after 5 s and starts the failure clock now',
    hook: { retry_seq: null, attempts: 0, first_failure_at: null },
    seq: 10,
    expect: { firstFailureAt: iso(now), failure: { then: 'retry', seq: 10, attempts: 1, nextAttemptAt: iso(now + 5_000) } },
  },
  {
    rule: 'another failure of the event being retried counts one more attempt and waits its step',
    hook: { retry_seq: 10, attempts: 3, first_failure_at: iso(now - HOUR) },
    seq: 10,
    expect: { firstFailureAt: iso(now - HOUR), failure: { then: 'retry', seq: 10, attempts: 4, nextAttemptAt: iso(now + 2 * HOUR) } },
  },
  {
    rule: 'a failure of a later event starts again at attempt 1, keeping the failure clock',
    hook: { retry_seq: 10, attempts: 7, first_failure_at: iso(now - HOUR) },
    seq: 11,
    expect: { firstFailureAt: iso(now - HOUR), failure: { then: 'retry', seq: 11, attempts: 1, nextAttemptAt: iso(now + 5_000) } },
  },
  {
    rule: 'the failure after the last retry drops the event',
    hook: { retry_seq: 10, attempts: 7, first_failure_at: iso(now - 30 * HOUR) },
    seq: 10,
    expect: { firstFailureAt: iso(now - 30 * HOUR), failure: { then: 'drop', seq: 10 } },
  },
  {
    rule: 'failing unbroken for 5 days disables the webhook, whatever the attempt',
    hook: { retry_seq: 12, attempts: 1, first_failure_at: iso(now - 5 * 24 * HOUR) },
    seq: 12,
    expect: { firstFailureAt: iso(now - 5 * 24 * HOUR), failure: { then: 'disable' } },
  },
  {
    rule: 'just under 5 days of failure still retries',
    hook: { retry_seq: 12, attempts: 1, first_failure_at: iso(now - 5 * 24 * HOUR + 1) },
    seq: 12,
    expect: { firstFailureAt: iso(now - 5 * 24 * HOUR + 1), failure: { then: 'retry', seq: 12, attempts: 2, nextAttemptAt: iso(now + 300_000) } },
  },
];

for (const row of rows) {
  t.test(row.rule, async (t) => {
    t.same(afterFailedAttempt(row.hook, row.seq, now, policy), row.expect);
  });
}

t.test('a test schedule of the same length shortens every wait but keeps the number of retries', async (t) => {
  const short: RetryPolicy = { retryDelaysMs: WEBHOOK_RETRY_SCHEDULE_MS.map(() => 50), disableAfterMs: WEBHOOK_DISABLE_AFTER_MS };
  t.match(afterFailedAttempt({ retry_seq: 1, attempts: 6, first_failure_at: iso(now) }, 1, now, short), { failure: { then: 'retry', attempts: 7, nextAttemptAt: iso(now + 50) } });
  t.match(afterFailedAttempt({ retry_seq: 1, attempts: 7, first_failure_at: iso(now) }, 1, now, short), { failure: { then: 'drop' } });
});
