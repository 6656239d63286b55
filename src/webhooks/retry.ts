/**
 * What a failed webhook delivery leads to (docs/webhooks.md "Retries"): a pure decision from the
 * webhook's failure state, the event that failed and the clock. A failure of the event already
 * being retried counts one more attempt; a failure of another event starts at attempt 1. After
 * the schedule is used up the event is dropped; when failures have gone on unbroken for the
 * disable threshold the webhook is disabled, whatever the attempt.
 */
import type { DeliveryFailure, WebhookRow } from './repository.js';

export interface RetryPolicy {
  /** The wait before retry 1, 2, …; its length is how many retries an event gets. */
  retryDelaysMs: readonly number[];
  /** Unbroken failure this long disables the webhook. */
  disableAfterMs: number;
}

export function afterFailedAttempt(
  hook: Pick<WebhookRow, 'retry_seq' | 'attempts' | 'first_failure_at'>,
  seq: number,
  now: number,
  policy: RetryPolicy,
): { firstFailureAt: string; failure: DeliveryFailure } {
  const attempts = (hook.retry_seq === seq ? hook.attempts : 0) + 1;
  const firstFailureAt = hook.first_failure_at ?? new Date(now).toISOString();
  if (now - Date.parse(firstFailureAt) >= policy.disableAfterMs) return { firstFailureAt, failure: { then: 'disable' } };
  if (attempts > policy.retryDelaysMs.length) return { firstFailureAt, failure: { then: 'drop', seq } };
  return { firstFailureAt, failure: { then: 'retry', seq, attempts, nextAttemptAt: new Date(now + policy.retryDelaysMs[attempts - 1]).toISOString() } };
}
