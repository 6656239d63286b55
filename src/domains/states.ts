/**
 * The domain state machine (docs/domains.md "State machine") as one table: DOMAIN_TRANSITIONS.
 * The owner's apply, verify, teardown and delete, the provisioning loop's moves and the self-test
 * hook look up their row there for the next status and whether the call is refused. Pure.
 * Invariants: only the self-test coming back makes a domain `verified` (with `domain.verified`);
 * a domain is deleted only when nothing is provisioned (`pending` or `torn_down`).
 */

export const DOMAIN_STATUSES = ['pending', 'provisioning', 'verifying', 'verified', 'failed', 'tearing_down', 'torn_down'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];

/**
 * What happens to a domain: the owner's calls (`apply`, `verify`, `teardown`, `delete`) and the
 * provisioning loop's findings (`routed`: the edge accepted a routing with it; `unrouted`: the
 * edge accepted one without it, or there is no edge; `dns_invalid`; `selftest_timeout`;
 * `selftest_refused`), and the self-test coming back (`selftest_back`).
 */
export type DomainTrigger = 'apply' | 'verify' | 'teardown' | 'delete' | 'routed' | 'unrouted' | 'dns_invalid' | 'selftest_back' | 'selftest_timeout' | 'selftest_refused';

export interface DomainTransition {
  from: readonly DomainStatus[];
  trigger: DomainTrigger;
  /** The next status; `unchanged` (idempotent calls), `gone` (deleted), or refused with `409 conflict`. */
  to: DomainStatus | 'unchanged' | 'gone' | { refused: 'conflict' };
  /** A new check from scratch: records back to pending, a new self-test. */
  resetsVerification?: boolean;
  event?: 'domain.verified';
}

/** Statuses in which the edge routes the domain (svc-selftest@, VERP return paths, svc-feedback@). */
export const ROUTED_STATUSES: readonly DomainStatus[] = ['provisioning', 'verifying', 'verified', 'failed'];

/** The domain transitions, first matching row wins. docs/domains.md has the same rows; test/unit/domain-states.test.ts checks each. */
export const DOMAIN_TRANSITIONS: readonly DomainTransition[] = [
  { from: ['provisioning', 'verifying', 'verified'], trigger: 'apply', to: 'unchanged' },
  { from: ['pending', 'failed', 'tearing_down', 'torn_down'], trigger: 'apply', to: 'provisioning', resetsVerification: true },
  { from: ['provisioning'], trigger: 'verify', to: 'unchanged' },
  { from: ['verifying', 'verified', 'failed'], trigger: 'verify', to: 'verifying', resetsVerification: true },
  // The AgentMail SDK has no apply: its verify must take a domain that was never applied (or torn down) live.
  { from: ['pending', 'tearing_down', 'torn_down'], trigger: 'verify', to: 'provisioning', resetsVerification: true },
  { from: ['tearing_down', 'torn_down'], trigger: 'teardown', to: 'unchanged' },
  { from: ['pending', ...ROUTED_STATUSES], trigger: 'teardown', to: 'tearing_down', resetsVerification: true },
  { from: ['pending', 'torn_down'], trigger: 'delete', to: 'gone' },
  { from: [...ROUTED_STATUSES, 'tearing_down'], trigger: 'delete', to: { refused: 'conflict' } },
  { from: ['provisioning'], trigger: 'routed', to: 'verifying' },
  { from: ['tearing_down'], trigger: 'unrouted', to: 'torn_down' },
  { from: ['verifying'], trigger: 'dns_invalid', to: 'failed' },
  { from: ['verifying'], trigger: 'selftest_back', to: 'verified', event: 'domain.verified' },
  { from: ['verifying'], trigger: 'selftest_timeout', to: 'failed' },
  { from: ['verifying'], trigger: 'selftest_refused', to: 'failed' },
];

/**
 * The AgentMail SDK's names (its `VerificationStatus` and `RecordStatus` enums) for svc's
 * lifecycle, which responses keep in `state` (docs/domains.md "Statuses for the AgentMail SDK").
 * A failed domain with an invalid record is `INVALID` (fix the DNS); otherwise `FAILED` (the
 * self-test did not come back).
 */
export const SDK_DOMAIN_STATUSES = ['NOT_STARTED', 'PENDING', 'INVALID', 'FAILED', 'VERIFYING', 'VERIFIED'] as const;
export type SdkDomainStatus = (typeof SDK_DOMAIN_STATUSES)[number];
const SDK_STATUS_OF: Record<DomainStatus, SdkDomainStatus> = {
  pending: 'NOT_STARTED',
  provisioning: 'PENDING',
  verifying: 'VERIFYING',
  verified: 'VERIFIED',
  failed: 'FAILED',
  tearing_down: 'NOT_STARTED',
  torn_down: 'NOT_STARTED',
};
export function sdkDomainStatus(state: DomainStatus, anyRecordInvalid: boolean): SdkDomainStatus {
  return state === 'failed' && anyRecordInvalid ? 'INVALID' : SDK_STATUS_OF[state];
}

/** A record's check as svc states it, and as the SDK names it: not checked yet reads `MISSING` (not seen in DNS). */
export const RECORD_STATES = ['pending', 'valid', 'invalid'] as const;
export type RecordState = (typeof RECORD_STATES)[number];
export const SDK_RECORD_STATUSES = ['MISSING', 'INVALID', 'VALID'] as const;
export type SdkRecordStatus = (typeof SDK_RECORD_STATUSES)[number];
export function sdkRecordStatus(state: RecordState, missing: boolean): SdkRecordStatus {
  return state === 'valid' ? 'VALID' : state === 'invalid' && !missing ? 'INVALID' : 'MISSING';
}

/** The row for `trigger` from `from`, or null when the trigger does not apply there (the loop's findings, e.g. `routed` of a verified domain). */
export function domainTransition(from: DomainStatus, trigger: DomainTrigger): DomainTransition | null {
  return DOMAIN_TRANSITIONS.find((r) => r.trigger === trigger && r.from.includes(from)) ?? null;
}

/** The status the loop's `trigger` moves a domain in `from` to; throws for a pair the table does not have (a bug). */
export function loopTarget(from: DomainStatus, trigger: DomainTrigger): DomainStatus {
  const to = domainTransition(from, trigger)?.to;
  if (typeof to !== 'string' || to === 'unchanged' || to === 'gone') throw new Error(`No domain move for ${trigger} from ${from}.`);
  return to;
}
