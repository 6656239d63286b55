/**
 * The outbound relay (ARCHITECTURE §6 part 4): takes queued jobs, delivers each recipient — to
 * the edge's own buffer when the edge routes the address, else over SMTP to the domain's MX (or
 * the smart host) — and records the outcome as a job state and a delivery report. It also turns
 * DSNs and ARF reports that arrive at the VERP return path / feedback address into reports.
 *
 * Loop: wake (new job, a retry falling due, an attempt ending) → select jobs with recipients due
 * → attempt them (at most MAX_PARALLEL_DELIVERIES jobs at once; one SMTP session per domain) →
 * commit (reports appended and fsynced first, then the job record) → schedule the next wake.
 *
 * Outcomes per recipient: 2xx after DATA → delivered; 5xx → bounced; 4xx, DNS trouble or no
 * reachable host → deferred and retried per the schedule; the schedule used up → bounced.
 * A report carries `code` only when a server answered with one: the home reads a `bounced`
 * without a code as "the provider failed to deliver" (message.failed), with one as a bounce.
 */
import net from 'node:net';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { DNSResolver } from './auth.js';
import { parseDeliveryReport } from './dsn.js';
import {
  MAX_PARALLEL_DELIVERIES,
  OUTBOUND_PRUNE_INTERVAL_MS,
  RELAY_CONNECT_TIMEOUT_MS,
  RELAY_GREETING_TIMEOUT_MS,
  RELAY_SOCKET_TIMEOUT_MS,
} from './limits.js';
import { isFinal, type OutboundJob, type OutboundStore, type RecipientState } from './outbound-store.js';
import { replyText, type NewReport, type ReportLog } from './reports.js';
import type { RecipientKind } from './routing.js';
import { envelopeSender, parseVerpTag, verpMacMatches } from './verp.js';

/** All non-local mail goes here instead of the recipient's MX (e.g. a provider's submission port). */
export interface SmartHost {
  host: string;
  port: number;
  /** Implicit TLS (port 465 style). Otherwise STARTTLS when offered. */
  secure?: boolean;
  username?: string;
  password?: string;
}

/** What the relay needs from the edge for recipients the edge hosts itself. */
export interface LocalRecipients {
  /** `mail` → the buffer, `report` → read as a DSN/ARF report, null → deliver over SMTP. */
  kindOf(address: string): RecipientKind | null;
  /** Whether the address's domain is routed here: an unknown address there may be an inbox whose routing is on its way. */
  routesDomainOf(address: string): boolean;
  /** A buffer key, reserved (and saved in the job) before the first try, so a repeat reuses it. */
  reserveKey(): string;
  /** Seals and stores the message under `key` as if received over SMTP; idempotent on the key. */
  deliver(input: { raw: Buffer; mailFrom: string; recipient: string; key: string }): Promise<void>;
}

export interface RelayOptions {
  store: OutboundStore;
  reports: ReportLog;
  /** EHLO name. */
  hostname: string;
  resolver: DNSResolver;
  /** Port of remote MX hosts (25; tests use a loopback sink). */
  deliveryPort: number;
  smartHost?: SmartHost;
  retryScheduleMs: readonly number[];
  local: LocalRecipients;
  /** HMAC key of the VERP tags (verp.ts): signs every job's return path and checks every report. */
  verpKey: Buffer;
  log?: (line: Record<string, unknown>) => void;
  now?: () => number;
}

/** One recipient's result of one attempt. `aborted`: the edge stopped mid-attempt; nothing is recorded. */
export type Outcome =
  | { status: 'delivered' | 'deferred' | 'bounced'; code?: number; message?: string }
  | { status: 'aborted' };

/** Mail hosts of a domain in preference order, or the outcome for all its recipients when there are none. */
type Route = { hosts: string[] } | { outcome: Outcome };

type SessionResult =
  | { kind: 'connect_failed'; err: SMTPConnection.SMTPError }
  | { kind: 'sent'; info: SMTPConnection.SentMessageInfo }
  | { kind: 'failed'; err: SMTPConnection.SMTPError };

interface Target {
  host: string;
  port: number;
  /** The MX name for SNI when `host` is an address. */
  servername?: string;
  /** false: opportunistic STARTTLS without certificate checks (MX). */
  verifyTls: boolean;
  ignoreTls?: boolean;
}

/** Why a report was not recorded: not a report, no verifying tag, recipients not on the job, nothing to say. */
export type DropReason = 'unreadable' | 'no_valid_tag' | 'recipient_not_on_job' | 'nothing_to_report';

const RETRY_AFTER_STORAGE_FAILURE_MS = 60_000;
/**
 * Mail from the home to an address on a domain this edge routes, but that the routing does not
 * list yet, is held this long after the job arrived before it is delivered like remote mail
 * (which for a routed domain usually means a bounce). The home pushes routing within seconds of
 * an inbox change and retries a failed push every 10 s, so a new inbox's first mail is not lost
 * to that race; an address that really is unknown is only delayed by this much.
 */
export const ROUTING_HOLD_MS = 2 * 60_000;
/** How often held recipients are looked at again; a routing push also wakes the relay at once. */
export const ROUTING_HOLD_RECHECK_MS = 1_000;
const MAX_TIMER_MS = 2 ** 31 - 1;

export class OutboundRelay {
  private readonly store: OutboundStore;
  private readonly reports: ReportLog;
  private readonly now: () => number;
  private readonly active = new Map<string, Promise<void>>();
  private readonly connections = new Set<SMTPConnection>();
  /** Jobs whose last commit failed: not retried before this time (in memory only). */
  private readonly holdUntil = new Map<string, number>();
  /** Jobs with recipients waiting for routing (ROUTING_HOLD_MS): looked at again at this time, or when routing changes. */
  private readonly heldForRouting = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private pruneTimer: NodeJS.Timeout | null = null;
  private stopping = false;
  private readonly dropped: Record<DropReason, number> = { unreadable: 0, no_valid_tag: 0, recipient_not_on_job: 0, nothing_to_report: 0 };

  constructor(private readonly options: RelayOptions) {
    this.store = options.store;
    this.reports = options.reports;
    this.now = options.now ?? Date.now;
  }

  /** Resumes unfinished jobs (queued, deferred, or interrupted mid-delivery) and starts pruning. */
  start(): void {
    this.stopping = false;
    void this.prune();
    this.pruneTimer = setInterval(() => void this.prune(), OUTBOUND_PRUNE_INTERVAL_MS);
    this.pruneTimer.unref();
    this.wake();
  }

  /** Closes SMTP sessions in flight (their recipients stay due and resume after a restart). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.timer = this.pruneTimer = null;
    for (const conn of this.connections) conn.close();
    await Promise.allSettled([...this.active.values()]);
  }

  /** Looks for due work now (a new job was queued). */
  wake(): void {
    if (this.stopping) return;
    this.schedule(0);
  }

  /** The routing table changed: recipients held for routing are looked at now. */
  routingChanged(): void {
    this.heldForRouting.clear();
    this.wake();
  }

  // -------------------------------------------------------------------------------------------
  // Reports that come back: DSNs to the VERP return path, ARF reports to the feedback address

  /**
   * Reads a message sent to report addresses of this edge and records what it reports, durably
   * (the SMTP 250 waits for this). A report counts only when a VERP tag that verifies ties it to
   * a job (the RCPT address, else for ARF the quoted original envelope sender), and only for that
   * job's recipients; everything else is dropped and counted (`dropped`). True when recorded.
   */
  async takeReportMail(raw: Buffer, addresses: string[]): Promise<boolean> {
    const parsed = parseDeliveryReport(raw);
    if (!parsed) return this.drop('unreadable', 'Mail to a report address was not a DSN or ARF report; it was accepted and dropped.');
    const job = this.taggedJob([...addresses, ...parsed.returnPaths]);
    if (!job) return this.drop('no_valid_tag', 'A report carried no valid VERP tag of an outbound job here; it was accepted and dropped.');
    const ref = job.ref;
    const onJob = (address: string) => job.recipients.find((r) => r.address.toLowerCase() === address.toLowerCase())?.address;
    const reports: NewReport[] = [];
    const bounced = new Map<string, FinalOutcome>();
    let strangers = 0;
    if (parsed.kind === 'dsn') {
      for (const r of parsed.recipients) {
        if (r.action !== 'failed' && r.action !== 'delayed') continue;
        const recipient = onJob(r.recipient);
        if (!recipient) {
          strangers++;
          continue;
        }
        const type = r.action === 'failed' ? 'bounced' : 'deferred';
        reports.push(withReply({ ref, type, recipient }, r.code, r.message));
        if (type === 'bounced') bounced.set(recipient.toLowerCase(), { status: 'bounced', code: r.code, message: r.message });
      }
    } else {
      const named = parsed.recipients.map(onJob).filter((a): a is string => a !== undefined);
      // Original-Rcpt-To is the report's own claim: a stranger there is refused. Feedback loops
      // often redact the original's To/Cc instead; then the tie says only "this job", so all of it.
      if (parsed.recipientsFrom === 'original-rcpt-to') strangers = parsed.recipients.length - named.length;
      const recipients = named.length > 0 || strangers > 0 ? named : job.recipients.map((r) => r.address);
      for (const recipient of recipients) reports.push(withReply({ ref, type: 'complained', recipient }, undefined, parsed.feedbackType ? `Feedback-Type: ${parsed.feedbackType}` : undefined));
    }
    if (strangers > 0) this.drop('recipient_not_on_job', 'A report named recipients that were not on its job; those were dropped.');
    if (reports.length === 0) {
      return strangers > 0 ? false : this.drop('nothing_to_report', 'A report named no failed, delayed or complaining recipient; it was accepted and dropped.');
    }
    await this.reports.append(reports);
    // A later bounce overrides what the job knew (the remote MX had accepted it, then gave up).
    if (bounced.size > 0) {
      for (const r of job.recipients) {
        const outcome = bounced.get(r.address.toLowerCase());
        if (outcome) settle(r, outcome);
      }
      await this.finishIfDone(job);
    }
    return true;
  }

  /** Reports dropped since start, by reason (`GET /reports/dropped`). */
  droppedReports(): Record<DropReason, number> {
    return { ...this.dropped };
  }

  /** The job one of `addresses` carries a verifying VERP tag for (constant-time MAC check), or null. */
  private taggedJob(addresses: string[]): OutboundJob | null {
    for (const address of addresses) {
      const tag = parseVerpTag(address);
      if (!tag) continue;
      const job = this.store.byVerpId(tag.id).find((j) => verpMacMatches(this.options.verpKey, j.ref, tag.mac));
      if (job) return job;
    }
    return null;
  }

  private drop(reason: DropReason, message: string): false {
    this.dropped[reason]++;
    this.options.log?.({ event: 'edge.report_dropped', reason, message });
    return false;
  }

  // -------------------------------------------------------------------------------------------
  // The loop

  private schedule(delayMs: number): void {
    if (this.stopping) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), Math.max(0, Math.min(delayMs, MAX_TIMER_MS)));
  }

  private run(): void {
    this.timer = null;
    if (this.stopping) return;
    const now = this.now();
    let nextDue = Infinity;
    for (const job of this.store.unfinished()) {
      if (this.active.has(job.ref)) continue;
      const due = Math.max(dueAt(job), this.holdUntil.get(job.ref) ?? 0, this.heldForRouting.get(job.ref) ?? 0);
      if (due > now) {
        nextDue = Math.min(nextDue, due);
        continue;
      }
      // A full house: the job stays due and is picked up when an attempt ends (which wakes the loop).
      if (this.active.size >= MAX_PARALLEL_DELIVERIES) continue;
      const attempt = this.attempt(job)
        .catch((err: unknown) => {
          this.holdUntil.set(job.ref, this.now() + RETRY_AFTER_STORAGE_FAILURE_MS);
          this.options.log?.({ event: 'edge.outbound_store_failed', code: (err as NodeJS.ErrnoException).code ?? 'unknown', message: 'An outbound job could not be updated on disk; it is tried again in a minute.' });
        })
        .finally(() => {
          this.active.delete(job.ref);
          this.wake();
        });
      this.active.set(job.ref, attempt);
    }
    if (nextDue !== Infinity) this.schedule(nextDue - now);
  }

  /**
   * One attempt for every due recipient of a job. Recipients waiting for routing (see
   * ROUTING_HOLD_MS) are left out: no attempt is counted and no report is written for them, and
   * the job is looked at again shortly.
   */
  private async attempt(job: OutboundJob): Promise<void> {
    const now = this.now();
    const ready = job.recipients.filter((r) => !isFinal(r.status) && Date.parse(r.next_attempt_at ?? '') <= now);
    const held = ready.filter((r) => this.awaitsRouting(job, r.address, now));
    const due = ready.filter((r) => !held.includes(r));
    if (due.length > 0) await this.attemptDue(job, due);
    if (held.length > 0) this.heldForRouting.set(job.ref, this.now() + ROUTING_HOLD_RECHECK_MS);
    else this.heldForRouting.delete(job.ref);
  }

  /** True while a recipient of `job` is unknown on a domain routed here and the hold has not run out. */
  private awaitsRouting(job: OutboundJob, address: string, now: number): boolean {
    const { local } = this.options;
    return local.kindOf(address) === null && local.routesDomainOf(address) && now < Date.parse(job.created_at) + ROUTING_HOLD_MS;
  }

  private async attemptDue(job: OutboundJob, due: RecipientState[]): Promise<void> {
    const { local } = this.options;
    let changed = false;
    if (job.status === 'queued') {
      job.status = 'delivering';
      changed = true;
    }
    for (const r of due) {
      if (local.kindOf(r.address) === 'mail' && !r.local_key) {
        r.local_key = local.reserveKey();
        changed = true;
      }
    }
    // The reserved keys are on disk before anything is stored under them.
    if (changed) await this.store.save(job);

    let raw: Buffer;
    try {
      raw = await this.store.readMime(job.ref);
    } catch {
      return this.commit(job, due.map((r) => [r, { status: 'bounced', message: 'The queued message is missing on the edge, or does not open with its current API token.' }]));
    }

    const groups = new Map<string, RecipientState[]>();
    for (const r of due) {
      const kind = local.kindOf(r.address);
      const key = kind ? `local:${r.address}` : this.options.smartHost ? 'smart-host' : `mx:${domainOf(r.address)}`;
      groups.set(key, [...(groups.get(key) ?? []), r]);
    }
    const results = await Promise.all(
      [...groups.entries()].map(async ([key, recipients]): Promise<[RecipientState, Outcome][]> => {
        if (key.startsWith('local:')) return [[recipients[0], await this.deliverLocally(job, recipients[0], raw)]];
        const outcomes = await this.deliverRemote(key === 'smart-host' ? null : key.slice(3), this.returnPath(job), recipients.map((r) => r.address), raw);
        return recipients.map((r) => [r, outcomes.get(r.address.toLowerCase()) ?? { status: 'deferred', message: 'No reply for this recipient.' }]);
      }),
    );
    await this.commit(job, results.flat());
  }

  /** Reports first (fsynced), then the job record: a crash in between repeats a report, never loses one. */
  private async commit(job: OutboundJob, results: [RecipientState, Outcome][]): Promise<void> {
    const schedule = this.options.retryScheduleMs;
    const updates: [RecipientState, RecipientState][] = [];
    const reports: NewReport[] = [];
    for (const [r, outcome] of results) {
      if (outcome.status === 'aborted') continue;
      const next: RecipientState = { ...r, attempts: r.attempts + 1 };
      if (outcome.status === 'deferred' && next.attempts > schedule.length) {
        settle(next, { status: 'bounced', code: outcome.code, message: `Gave up after ${next.attempts} attempts; last error: ${outcome.message ?? 'none'}` });
      } else if (outcome.status === 'deferred') {
        next.status = 'deferred';
        next.next_attempt_at = new Date(this.now() + schedule[next.attempts - 1]).toISOString();
        setReply(next, outcome.code, outcome.message);
      } else {
        settle(next, { ...outcome, status: outcome.status });
      }
      updates.push([r, next]);
      reports.push(withReply({ ref: job.ref, type: next.status as 'delivered' | 'deferred' | 'bounced', recipient: r.address }, next.code, next.message));
    }
    if (updates.length === 0) return;
    await this.reports.append(reports);
    for (const [r, next] of updates) {
      Object.assign(r, next);
      if (r.code === undefined) delete r.code;
      if (r.message === undefined) delete r.message;
    }
    this.holdUntil.delete(job.ref);
    await this.finishIfDone(job);
  }

  /** Saves the job; once every recipient is final it is `done` and its MIME is deleted. */
  private async finishIfDone(job: OutboundJob): Promise<void> {
    const done = job.recipients.every((r) => isFinal(r.status));
    if (done && job.status !== 'done') {
      job.status = 'done';
      job.finished_at = new Date(this.now()).toISOString();
    }
    await this.store.save(job);
    if (done) await this.store.removeMime(job.ref);
  }

  /** The job's envelope sender with its VERP tag (the home asks for `svc-bounce+<ref>@domain`). */
  private returnPath(job: OutboundJob): string {
    return envelopeSender(this.options.verpKey, job.ref, job.mail_from);
  }

  private async prune(): Promise<void> {
    try {
      await this.store.prune();
      await this.reports.prune();
    } catch {
      this.options.log?.({ event: 'edge.outbound_prune_failed', message: 'Old outbound records could not be removed; tried again in an hour.' });
    }
  }

  // -------------------------------------------------------------------------------------------
  // Delivery

  private async deliverLocally(job: OutboundJob, r: RecipientState, raw: Buffer): Promise<Outcome> {
    const { local } = this.options;
    try {
      if (local.kindOf(r.address) === 'report') {
        await this.takeReportMail(raw, [r.address.toLowerCase()]);
        return { status: 'delivered', code: 250, message: '2.0.0 Report taken by this edge' };
      }
      await local.deliver({ raw, mailFrom: this.returnPath(job), recipient: r.address.toLowerCase(), key: r.local_key ?? local.reserveKey() });
      return { status: 'delivered', code: 250, message: '2.0.0 Delivered on this edge' };
    } catch {
      // No code: no server answered, so running out of retries reads as a delivery failure, not a bounce.
      return { status: 'deferred', message: '4.3.0 Local delivery failed (storage problem or no routing); will retry' };
    }
  }

  /** One SMTP transaction for the recipients of one domain (or of the smart host); outcomes by lower-cased address. */
  private async deliverRemote(domain: string | null, mailFrom: string, recipients: string[], raw: Buffer): Promise<Map<string, Outcome>> {
    const all = (outcome: Outcome) => new Map(recipients.map((a) => [a.toLowerCase(), outcome]));
    const smart = this.options.smartHost;
    let targets: Target[];
    if (domain === null && smart) {
      const loopback = smart.host === 'localhost' || (net.isIP(smart.host) !== 0 && /^(127\.|::1$)/.test(smart.host));
      targets = [{ host: smart.host, port: smart.port, verifyTls: Boolean(smart.username) && !loopback }];
    } else {
      const route = await this.route(domain!);
      if ('outcome' in route) return all(route.outcome);
      targets = [];
      for (const host of route.hosts) {
        for (const address of await this.addressesOf(host)) targets.push({ host: address, port: this.options.deliveryPort, servername: net.isIP(host) ? undefined : host, verifyTls: false });
      }
      if (targets.length === 0) return all({ status: 'deferred', message: `4.4.4 No address found for the mail hosts of ${domain}` });
    }

    const envelope: SMTPConnection.Envelope = { from: mailFrom, to: recipients, size: raw.length, use8BitMime: raw.some((b) => b > 0x7f) };
    let lastFailure = 'No mail host could be reached';
    let lastCode: number | undefined;
    for (const target of targets) {
      if (this.stopping) return all({ status: 'aborted' });
      let result = await this.session(target, envelope, raw);
      // A broken STARTTLS handshake: opportunistic TLS falls back to plaintext on MX hosts.
      if (result.kind === 'connect_failed' && result.err.code === 'ETLS' && !target.verifyTls && !smart) {
        result = await this.session({ ...target, ignoreTls: true }, envelope, raw);
      }
      if (result.kind === 'connect_failed') {
        if (this.stopping) return all({ status: 'aborted' });
        lastFailure = result.err.response ? replyText(result.err.response) : `Connection to a mail host failed (${result.err.code ?? 'error'})`;
        lastCode = result.err.responseCode;
        continue;
      }
      return this.outcomes(recipients, result);
    }
    return all({ status: 'deferred', code: lastCode && lastCode >= 400 && lastCode < 600 ? lastCode : undefined, message: lastFailure });
  }

  /** Per-recipient outcomes of a session that got past the greeting. */
  private outcomes(recipients: string[], result: Exclude<SessionResult, { kind: 'connect_failed' }>): Map<string, Outcome> {
    const out = new Map<string, Outcome>();
    const rejected = (errors: SMTPConnection.SMTPError[] | undefined) => {
      for (const e of errors ?? []) {
        const recipient = (e as { recipient?: string }).recipient;
        if (recipient) out.set(recipient.toLowerCase(), fromReply(e.responseCode, e.response ?? e.message));
      }
    };
    if (result.kind === 'sent') {
      const code = replyCode(result.info.response) ?? 250;
      for (const a of result.info.accepted) out.set(String(a).toLowerCase(), { status: 'delivered', code, message: replyText(result.info.response ?? '') || undefined });
      rejected(result.info.rejectedErrors);
      return out;
    }
    const err = result.err;
    rejected(err.rejectedErrors ?? (err as { rejectedErrors?: SMTPConnection.SMTPError[] }).rejectedErrors);
    const general: Outcome =
      this.stopping && !err.responseCode
        ? { status: 'aborted' }
        : err.responseCode
          ? fromReply(err.responseCode, err.response ?? err.message)
          : { status: 'deferred', message: `The connection failed during the transaction (${err.code ?? 'error'})` };
    for (const a of recipients) if (!out.has(a.toLowerCase())) out.set(a.toLowerCase(), general);
    return out;
  }

  /** MX hosts by preference (equal preferences shuffled), the domain itself without MX (RFC 5321 §5.1). */
  private async route(domain: string): Promise<Route> {
    let records: { exchange: string; priority: number }[];
    try {
      records = (await this.options.resolver(domain, 'MX')) as unknown as { exchange: string; priority: number }[];
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENODATA') return { hosts: [domain] };
      if (code === 'ENOTFOUND') return { outcome: { status: 'bounced', code: 550, message: `5.1.2 The domain ${domain} does not exist` } };
      return { outcome: { status: 'deferred', message: `4.4.3 The mail hosts of ${domain} could not be looked up (${code ?? 'DNS error'})` } };
    }
    if (records.length === 0) return { hosts: [domain] };
    if (records.length === 1 && (records[0].exchange === '' || records[0].exchange === '.')) {
      return { outcome: { status: 'bounced', code: 556, message: `5.1.10 The domain ${domain} accepts no mail (null MX)` } };
    }
    const shuffled = records.map((r) => ({ ...r, order: Math.random() }));
    shuffled.sort((a, b) => a.priority - b.priority || a.order - b.order);
    return { hosts: shuffled.map((r) => r.exchange.replace(/\.$/, '')).filter((h) => h !== '') };
  }

  /** A and AAAA addresses of a mail host (IPv4 first); none when it has neither. */
  private async addressesOf(host: string): Promise<string[]> {
    if (net.isIP(host)) return [host];
    const lookup = async (rrtype: 'A' | 'AAAA') => {
      try {
        return (await this.options.resolver(host, rrtype)) as string[];
      } catch {
        return [];
      }
    };
    const [v4, v6] = await Promise.all([lookup('A'), lookup('AAAA')]);
    return [...v4, ...v6];
  }

  /** One SMTP session: connect, EHLO, STARTTLS when offered, AUTH for a smart host, one transaction, QUIT. */
  private session(target: Target, envelope: SMTPConnection.Envelope, raw: Buffer): Promise<SessionResult> {
    const smart = this.options.smartHost;
    const isSmart = smart !== undefined && target.host === smart.host && target.port === smart.port;
    return new Promise<SessionResult>((resolve) => {
      const conn = new SMTPConnection({
        host: target.host,
        port: target.port,
        name: this.options.hostname,
        secure: isSmart ? Boolean(smart.secure) : false,
        ignoreTLS: target.ignoreTls === true,
        opportunisticTLS: !target.verifyTls,
        requireTLS: target.verifyTls && !(isSmart && smart.secure),
        tls: { rejectUnauthorized: target.verifyTls, ...(target.servername ? { servername: target.servername } : {}) },
        connectionTimeout: RELAY_CONNECT_TIMEOUT_MS,
        greetingTimeout: RELAY_GREETING_TIMEOUT_MS,
        socketTimeout: RELAY_SOCKET_TIMEOUT_MS,
        logger: false,
      });
      this.connections.add(conn);
      let settled = false;
      let connected = false;
      const finish = (result: SessionResult) => {
        if (settled) return;
        settled = true;
        this.connections.delete(conn);
        if (result.kind === 'sent') conn.quit();
        else conn.close();
        resolve(result);
      };
      conn.on('error', (err) => finish(connected ? { kind: 'failed', err } : { kind: 'connect_failed', err }));
      conn.on('end', () => finish(connected ? { kind: 'failed', err: Object.assign(new Error('Connection closed'), { code: 'ECONNECTION' }) } : { kind: 'connect_failed', err: Object.assign(new Error('Connection closed'), { code: 'ECONNECTION' }) }));
      conn.connect((err) => {
        if (err) return finish({ kind: 'connect_failed', err });
        connected = true;
        const send = () =>
          conn.send(envelope, raw, (sendErr, info) => {
            if (sendErr) finish({ kind: 'failed', err: sendErr });
            else finish({ kind: 'sent', info });
          });
        if (isSmart && smart.username) {
          conn.login({ user: smart.username, pass: smart.password ?? '' }, (loginErr) => {
            // A refused login is the edge's own configuration: retry later, do not bounce.
            if (loginErr) finish({ kind: 'failed', err: Object.assign(loginErr, { responseCode: 451, response: '451 4.7.0 The smart host refused the edge\'s credentials' }) });
            else send();
          });
        } else send();
      });
    });
  }
}

/** When the job's next recipient falls due (ms); Infinity when none is left. */
function dueAt(job: OutboundJob): number {
  let due = Infinity;
  for (const r of job.recipients) if (!isFinal(r.status)) due = Math.min(due, Date.parse(r.next_attempt_at ?? '') || 0);
  return due;
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

function replyCode(response: string | undefined): number | undefined {
  const match = /^([2-5]\d\d)/.exec(response ?? '');
  return match ? Number(match[1]) : undefined;
}

function fromReply(code: number | undefined, response: string | undefined): Outcome {
  const message = response ? replyText(response) : undefined;
  if (code === undefined) return { status: 'deferred', message };
  if (code >= 200 && code < 300) return { status: 'delivered', code, message };
  if (code >= 500 && code < 600) return { status: 'bounced', code, message };
  return { status: 'deferred', code, message };
}

type FinalOutcome = { status: 'delivered' | 'bounced'; code?: number; message?: string };

/** Marks a recipient final with its outcome. */
function settle(r: RecipientState, outcome: FinalOutcome): void {
  r.status = outcome.status;
  r.next_attempt_at = null;
  setReply(r, outcome.code, outcome.message);
}

/** Sets (or clears) the last reply; absent values are removed so the record stays minimal. */
function setReply(r: RecipientState, code: number | undefined, message: string | undefined): void {
  if (code === undefined) delete r.code;
  else r.code = code;
  if (message === undefined || message === '') delete r.message;
  else r.message = replyText(message);
}

function withReply<T extends Omit<NewReport, 'code' | 'message'>>(report: T, code: number | undefined, message: string | undefined): NewReport {
  return { ...report, ...(code !== undefined ? { code } : {}), ...(message ? { message: replyText(message) } : {}) };
}
