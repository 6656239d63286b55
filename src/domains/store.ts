/**
 * Registered domains (docs/domains.md): their rows, views, and the writes of their state machine.
 * Which status follows which is the table in ./states.ts, consulted by every write here:
 *
 *   pending ──apply──▶ provisioning ──edge routes it──▶ verifying ──records valid + self-test back──▶ verified
 *                           ▲                              │  ▲                                          │
 *                           │ apply                 invalid│  │verify                              verify │
 *                           │                              ▼  │                                          ▼
 *                         failed ◀─────────────────────────┘  └───────────────── failed / verifying ◀───┘
 *   any but torn_down ──teardown──▶ tearing_down ──edge no longer routes it──▶ torn_down ──apply──▶ provisioning
 *
 * Every change of status (and `domain.verified`) is written as one conditional UPDATE on the
 * status it was read in, so a request that changed it meanwhile wins. The writes here open no
 * transaction: they run inside the caller's (src/requests/domains.ts for the owner's calls, the
 * provisioning loop, the inbound commit for the self-test). The request and response schemas are
 * in ./schemas.ts.
 */
import type { Db } from '../db/open.js';
import { uuidv7 } from '../db/ids.js';
import { appendEvent } from '../events/log.js';
import { ApiError, notFound } from '../core/errors.js';
import { DEFAULT_LIMIT, pageFromRows, readCursor, type PageBinding } from '../core/pagination.js';
import type { Principal } from '../auth/principal.js';
import { normalizeDomainName } from './names.js';
import { domainPlan, domainPlanWithKey, type DomainPlan, type PlannedRecord } from './plan.js';
import { storedDkimKey } from '../mail/dkim-keys.js';
import type { RecordCheck } from './checks.js';
import { domainTransition, loopTarget, sdkDomainStatus, sdkRecordStatus, type DomainStatus, type DomainTransition, type DomainTrigger, type RecordState, type SdkRecordStatus } from './states.js';
import { isSdkRecordType, type ExtraRecordType, type RecordType, type SdkRecordType } from './record-types.js';
import type { CreateDomainBody, UpdateDomainBody } from './schemas.js';

export { DOMAIN_STATUSES, ROUTED_STATUSES, type DomainStatus } from './states.js';
export type { CreateDomainBody, UpdateDomainBody } from './schemas.js';
/** Statuses in which the edge must not route the domain at all, not even its inboxes. */
export const UNROUTED_STATUSES: readonly DomainStatus[] = ['tearing_down', 'torn_down'];

export interface DomainRow {
  domain_id: string;
  domain: string;
  status: DomainStatus;
  reason: string | null;
  feedback_enabled: number;
  subdomains_enabled: number;
  tracking_enabled: number;
  checks: string;
  checked_at: string | null;
  selftest_token: string | null;
  selftest_sent_at: string | null;
  selftest_received_at: string | null;
  created_at: string;
  updated_at: string;
  verified_at: string | null;
  /** What svc published through the DNS provider (migration 18, docs/dns-providers.md). */
  dns_zone: string | null;
  dns_added: string;
  dns_published_at: string | null;
  /** The pod that owns the domain (migration 24, docs/pods.md); null for the whole home. */
  pod_id: string | null;
}

export interface DomainRecordView<T extends RecordType = RecordType> {
  type: T;
  name: string;
  value: string;
  priority?: number;
  status: SdkRecordStatus;
  state: RecordState;
  reason?: string;
  checked_at?: string;
}

const now = () => new Date().toISOString();

export function domainRow(db: Db, domainId: string): DomainRow {
  const row = db.prepare('SELECT * FROM domains WHERE domain_id = ?').get(domainId) as DomainRow | undefined;
  if (!row) throw notFound('domain');
  return row;
}

export function domainRowsIn(db: Db, statuses: readonly DomainStatus[]): DomainRow[] {
  return db.prepare(`SELECT * FROM domains WHERE status IN (${statuses.map(() => '?').join(', ')}) ORDER BY domain`).all(...statuses) as DomainRow[];
}

const storedChecks = (checksJson: string) => JSON.parse(checksJson) as RecordCheck[];

/** The planned records with the status of their last check (a check of another value is stale: pending). */
export function recordViews(records: PlannedRecord[], checksJson: string): DomainRecordView[] {
  const checks = storedChecks(checksJson);
  return records.map((r) => {
    const check = checks.find((c) => c.type === r.type && c.name === r.name && c.expected === r.value);
    const state = check?.status ?? 'pending';
    return {
      type: r.type,
      name: r.name,
      value: r.value,
      ...(r.priority !== undefined ? { priority: r.priority } : {}),
      status: sdkRecordStatus(state, check?.missing === true),
      state,
      ...(check?.reason ? { reason: check.reason } : {}),
      ...(check ? { checked_at: check.checked_at } : {}),
    };
  });
}

function itemView(row: DomainRow) {
  return {
    domain_id: row.domain_id,
    ...(row.pod_id === null ? {} : { pod_id: row.pod_id }),
    domain: row.domain,
    status: sdkDomainStatus(row.status, storedChecks(row.checks).some((c) => c.status === 'invalid')),
    state: row.status,
    reason: row.reason,
    feedback_enabled: row.feedback_enabled === 1,
    subdomains_enabled: row.subdomains_enabled === 1,
    tracking_enabled: row.tracking_enabled === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    verified_at: row.verified_at,
  };
}

/** The full domain: fields, records with their check status, and the self-test's progress. */
export async function domainView(db: Db, row: DomainRow) {
  return domainViewWith(db, row, await domainPlan(db, row.domain, { domainId: row.domain_id, feedbackEnabled: row.feedback_enabled === 1 }));
}

function domainViewWith(db: Db, row: DomainRow, plan: DomainPlan) {
  const views = recordViews(plan.records, row.checks);
  return {
    ...itemView(row),
    records: views.filter((r): r is DomainRecordView<SdkRecordType> => isSdkRecordType(r.type)),
    extra_records: views.filter((r): r is DomainRecordView<ExtraRecordType> => !isSdkRecordType(r.type)),
    checked_at: row.checked_at,
    selftest: {
      status: row.selftest_received_at ? 'received' : row.selftest_sent_at ? 'sent' : 'not_sent',
      sent_at: row.selftest_sent_at,
      received_at: row.selftest_received_at,
    },
  };
}

function checkTracking(value: boolean | undefined): void {
  if (value === true) {
    throw new ApiError('validation_error', 'svc does not track opens or clicks, so `tracking_enabled` cannot be true.', { fix: 'Omit `tracking_enabled` or send false.' });
  }
}

/** A new domain's name and flags, checked before any lookup: the name (400) and then `tracking_enabled` (400). */
export function checkDomainCreate(body: CreateDomainBody): { domain: string; body: CreateDomainBody } {
  const domain = normalizeDomainName(body.domain);
  checkTracking(body.tracking_enabled);
  return { domain, body };
}

/** Registers a checked domain as `pending` (409 when the name is taken); returns its id. Runs inside the caller's transaction. */
export function insertDomain(db: Db, create: ReturnType<typeof checkDomainCreate>, podId: string | null = null): string {
  const { domain, body } = create;
  const existing = db.prepare('SELECT domain_id FROM domains WHERE domain = ?').get(domain) as { domain_id: string } | undefined;
  if (existing) {
    throw new ApiError('already_exists', `The domain ${domain} is already registered.`, { fix: `Use the registered one: \`svc domains show ${domain}\` (GET /v0/domains/${existing.domain_id}).`, extra: { domain_id: existing.domain_id } });
  }
  const id = uuidv7();
  const at = now();
  db.prepare(
    'INSERT INTO domains (domain_id, domain, status, feedback_enabled, subdomains_enabled, tracking_enabled, created_at, updated_at, pod_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(id, domain, 'pending', body.feedback_enabled === false ? 0 : 1, body.subdomains_enabled ? 1 : 0, 0, at, at, podId);
  return id;
}

/** Changes a domain's flags (404 first, then `tracking_enabled`); returns the row as written. Runs inside the caller's transaction. */
export function updateDomain(db: Db, domainId: string, patch: UpdateDomainBody): DomainRow {
  const row = domainRow(db, domainId);
  checkTracking(patch.tracking_enabled);
  const flag = (v: boolean | undefined, current: number) => (v === undefined ? current : v ? 1 : 0);
  db.prepare('UPDATE domains SET feedback_enabled = ?, subdomains_enabled = ?, updated_at = ? WHERE domain_id = ?').run(
    flag(patch.feedback_enabled, row.feedback_enabled),
    flag(patch.subdomains_enabled, row.subdomains_enabled),
    now(),
    domainId,
  );
  return domainRow(db, domainId);
}

/**
 * Removes the registration; only when nothing is provisioned (never applied, or torn down). The
 * delete is guarded by the status it was read in, like every move: when an apply won meanwhile,
 * the domain is answered as provisioned (409). Runs inside the caller's transaction.
 */
export function deleteDomain(db: Db, domainId: string): void {
  const row = domainRow(db, domainId);
  const refuse = (status: DomainStatus) =>
    new ApiError('conflict', `The domain ${row.domain} is ${status}; it can be deleted only after teardown.`, {
      fix: status === 'tearing_down' ? 'Wait until its status is torn_down (the edge stops routing it within seconds), then delete it.' : `Run \`svc domains teardown ${row.domain}\` (it waits for status torn_down), then delete it.`,
    });
  if (ownerStep(row, 'delete').to !== 'gone') throw refuse(row.status);
  if (db.prepare('DELETE FROM domains WHERE domain_id = ? AND status = ?').run(domainId, row.status).changes === 0) throw refuse(domainRow(db, domainId).status);
}

export function listDomains(db: Db, p: Principal, query: { limit?: number; page_token?: string; ascending?: boolean }): Record<string, unknown> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const ascending = query.ascending ?? false;
  const binding: PageBinding = { route: 'domains.list', filters: { ascending }, principal: p };
  const params: (string | number)[] = [];
  const where = ['1 = 1'];
  // On a pod (docs/pods.md): that pod's domains only.
  if (p.pod !== undefined) {
    where.push('pod_id = ?');
    params.push(p.pod.podId);
  }
  if (query.page_token !== undefined) {
    where.push(`(created_at, domain_id) ${ascending ? '>' : '<'} (?, ?)`);
    params.push(...readCursor(db, query.page_token, binding, 2));
  }
  const order = ascending ? 'ASC' : 'DESC';
  const rows = db.prepare(`SELECT * FROM domains WHERE ${where.join(' AND ')} ORDER BY created_at ${order}, domain_id ${order} LIMIT ?`).all(...params, limit + 1) as DomainRow[];
  return pageFromRows(db, binding, 'domains', rows, limit, (r) => [r.created_at, r.domain_id], itemView);
}

const RESET_VERIFICATION = "checks = '[]', checked_at = NULL, selftest_token = NULL, selftest_sent_at = NULL, selftest_received_at = NULL";

/** The table's row for an owner call; every owner call has one in every status. */
function ownerStep(row: DomainRow, trigger: DomainTrigger): DomainTransition {
  const step = domainTransition(row.status, trigger);
  if (!step) throw new Error(`No domain transition for ${trigger} from ${row.status}.`);
  return step;
}

/**
 * Applies an owner call's row: idempotent when `unchanged`, else the guarded move to the new
 * status with a fresh verification. When the domain left the status it was read in meanwhile,
 * that other change stands and the call answers the domain as it now is.
 */
function ownerMove(db: Db, row: DomainRow, trigger: DomainTrigger): DomainRow {
  const to = ownerStep(row, trigger).to;
  if (typeof to !== 'string' || to === 'unchanged' || to === 'gone') return row;
  transition(db, row.domain_id, row.status, trigger, null);
  return domainRow(db, row.domain_id);
}

/** Provision or resume: idempotent while provisioning, verifying or verified. Runs inside the caller's transaction. */
export function applyDomain(db: Db, domainId: string): DomainRow {
  return ownerMove(db, domainRow(db, domainId), 'apply');
}

/**
 * Starts a new check: records back to pending, a new self-test. A domain never applied (or torn
 * down) is provisioned first, as apply does, because the AgentMail SDK has verify but no apply.
 * Runs inside the caller's transaction.
 */
export function requestVerification(db: Db, domainId: string): DomainRow {
  // From provisioning the row is `unchanged`: verification starts by itself once the edge routes it.
  return ownerMove(db, domainRow(db, domainId), 'verify');
}

/** Starts the teardown: the edge stops routing the domain. Runs inside the caller's transaction. */
export function teardownDomain(db: Db, domainId: string): DomainRow {
  return ownerMove(db, domainRow(db, domainId), 'teardown');
}

// ---- the one status write ----

/**
 * The only write of a domain's status (owner calls, the provisioning loop, the self-test hook):
 * moves a domain in `from` where the table's `trigger` row leads — with a fresh verification when
 * the row says so — only if it is still in `from` (a concurrent change wins). False when it was
 * not (any more) in `from`. A trigger with no move from `from` is a bug in the caller and throws.
 */
export function transition(db: Db, domainId: string, from: DomainStatus, trigger: DomainTrigger, reason: string | null, set: Record<string, string | null> = {}): boolean {
  const to = loopTarget(from, trigger);
  // Entering provisioning publishes the plan through the DNS provider again (docs/dns-providers.md).
  const reset = (domainTransition(from, trigger)?.resetsVerification ? `, ${RESET_VERIFICATION}` : '') + (to === 'provisioning' ? ', dns_published_at = NULL' : '');
  const extra = Object.keys(set).map((k) => `, ${k} = ?`).join('');
  const result = db.prepare(`UPDATE domains SET status = ?, reason = ?${reset}${extra}, updated_at = ? WHERE domain_id = ? AND status = ?`).run(to, reason, ...Object.values(set), now(), domainId, from);
  return result.changes === 1;
}

/**
 * Records what svc may own in the domain's zone: written BEFORE the provider is asked to add
 * anything (the records about to be added, plus those it already owns), so a teardown that starts
 * meanwhile, or a crash between the add and this write, still knows what to remove (removing a
 * record that was never added changes nothing). Whatever the domain's status now. Returns that
 * status, or null when the domain is gone.
 */
export function recordDnsIntent(db: Db, domainId: string, zone: string, records: unknown[]): DomainStatus | null {
  const row = db.prepare('UPDATE domains SET dns_zone = ?, dns_added = ?, updated_at = ? WHERE domain_id = ? RETURNING status').get(zone, JSON.stringify(records), now(), domainId) as { status: DomainStatus } | undefined;
  return row?.status ?? null;
}

/**
 * Records what svc now owns in the domain's zone after a publish (`published`) or a removal
 * (`added` empty), whatever the domain's status now: a teardown that started during the publish
 * must still find them. Only a domain still in `status` gets `dns_published_at` (and loses its
 * reason); true when it was.
 */
export function recordDnsPublished(db: Db, domainId: string, status: DomainStatus, zone: string, added: unknown[], published: boolean): boolean {
  const at = now();
  // One statement: the status it tests is the one the row has when dns_added is written.
  const row = db
    .prepare('UPDATE domains SET dns_zone = ?, dns_added = ?, dns_published_at = CASE WHEN status = ? THEN ? ELSE dns_published_at END, reason = CASE WHEN status = ? THEN NULL ELSE reason END, updated_at = ? WHERE domain_id = ? RETURNING status')
    .get(zone, JSON.stringify(added), status, published ? at : null, status, at, domainId) as { status: DomainStatus } | undefined;
  return row?.status === status;
}

/** Notes a reason without changing the status (e.g. "waiting for a transport"). */
export function noteReason(db: Db, domainId: string, status: DomainStatus, reason: string | null): void {
  db.prepare('UPDATE domains SET reason = ?, updated_at = ? WHERE domain_id = ? AND status = ? AND reason IS NOT ?').run(reason, now(), domainId, status, reason);
}

/**
 * Stores a DNS check; a failing one ends the verification as `failed` with a summary reason.
 * Runs inside the caller's transaction (the provisioning loop's), so the check and the move commit together.
 */
export function recordChecks(db: Db, row: DomainRow, checks: RecordCheck[]): 'valid' | 'invalid' | 'stale' {
  const invalid = checks.filter((c) => c.status === 'invalid');
  const at = now();
  const fresh = db.prepare("UPDATE domains SET checks = ?, checked_at = ?, updated_at = ? WHERE domain_id = ? AND status = 'verifying' AND selftest_sent_at IS NULL").run(JSON.stringify(checks), at, at, row.domain_id);
  if (fresh.changes === 0) return 'stale';
  if (invalid.length === 0) return 'valid';
  const summary = `${invalid.length} of ${checks.length} DNS records are not right yet: ${invalid.map((c) => c.reason).join(' ')} Fix them, then run \`svc domains verify ${row.domain}\`.`;
  transition(db, row.domain_id, 'verifying', 'dns_invalid', summary);
  return 'invalid';
}

// ---- the self-test ----

export const SELFTEST_HEADER = 'X-Svc-Selftest';
export const selftestAddress = (domain: string) => `svc-selftest@${domain}`;

/** Marks the self-test as handed to the transport, with the token it carries. */
export function recordSelftestSent(db: Db, domainId: string, token: string): boolean {
  const at = now();
  return db.prepare("UPDATE domains SET selftest_token = ?, selftest_sent_at = ?, updated_at = ? WHERE domain_id = ? AND status = 'verifying' AND selftest_sent_at IS NULL").run(token, at, at, domainId).changes === 1;
}

/**
 * The inbound hook: mail to `svc-selftest@<domain>` is never stored. When it carries the token of
 * the domain's pending self-test, the domain becomes `verified` and `domain.verified` is appended
 * in the same transaction: it runs inside the caller's (the inbound page commit,
 * src/inbound/ingest.ts). Returns the event's seq, or null.
 */
export function receiveSelftest(db: Db, recipient: string, headers: [string, string][]): number | null {
  const domain = recipient.slice(recipient.lastIndexOf('@') + 1).toLowerCase();
  // Parsed headers are [lower-case name, the whole raw line]: the value follows the first colon.
  const line = headers.find(([name]) => name.toLowerCase() === SELFTEST_HEADER.toLowerCase())?.[1];
  const value = line?.slice(line.indexOf(':') + 1).replace(/\s+/g, '').trim();
  if (!value) return null;
  const from: DomainStatus = 'verifying';
  const step = domainTransition(from, 'selftest_back')!;
  const row = db.prepare('SELECT * FROM domains WHERE domain = ? AND status = ? AND selftest_token = ?').get(domain, from, value) as DomainRow | undefined;
  if (!row) return null;
  const at = now();
  if (!transition(db, row.domain_id, from, 'selftest_back', null, { selftest_received_at: at, verified_at: at })) return null;
  // The event carries the domain as GET /v0/domains/{id} answers it now (the SDK's Domain). A
  // domain that sent its self-test has its DKIM key, so its plan is read here, in the transaction.
  const verified = domainRow(db, row.domain_id);
  const key = storedDkimKey(db, verified.domain);
  const view = key ? domainViewWith(db, verified, domainPlanWithKey(db, verified.domain, key, { domainId: verified.domain_id, feedbackEnabled: verified.feedback_enabled === 1 })) : itemView(verified);
  return appendEvent(db, {
    eventType: step.event!,
    inboxId: null,
    payloadKey: 'domain',
    payload: { ...view, timestamp: at },
  }).seq;
}

/** True for the address the self-test is sent to (any routed domain's `svc-selftest@`). */
export const isSelftestRecipient = (address: string) => address.toLowerCase().startsWith('svc-selftest@');
