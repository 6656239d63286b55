/**
 * The `guarded` send policy (issue 20 §4, docs/guarded.md): a guarded credential's send goes out
 * at once unless the outbound guard finds a reason to hold it for the owner, and then it becomes
 * a draft awaiting approval with those reasons, exactly as under `approval`.
 *
 * The checks, each of which the owner can turn off (settings key `outbound_guard`):
 * - the content detectors of src/mail/outbound-guard.ts on what the recipient sees: the subject,
 *   text and HTML (rendered too), attachments as a client shows them, the display name in From
 *   and every header svc writes (credentials, private keys, card numbers, IBANs, national ids,
 *   the home's own secrets: webhook signing secrets, edge tokens, the SMTP password, the inbound
 *   private key, and the secrets the owner adds);
 * - `new_recipients`: more than `per_message` addresses this inbox has never written to or heard
 *   from in one message, or more than `per_day` such first contacts in 24 hours (those already
 *   made, plus the ones in approved schedules not yet sent, plus this message's).
 *
 * Everything here reads; nothing writes. The guard runs before the send's transaction on the
 * composition the send would queue (a reply's quote and a forward's original included), so a
 * stranger's text that an agent passes on is scanned outside any write transaction, in linear time
 * (the detectors' rule). The owner's settings and the home's secrets are read on each check: a
 * change applies to the next send.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { ApiError } from '../core/errors.js';
import { randomUUID } from 'node:crypto';
import { GUARD_DETECTORS } from './outbound-guard.js';
import { inspectContent, type GuardContent, type GuardFinding } from './guard-content.js';
import type { Composition, Recipient } from './compose.js';
import type { Threading } from './outbound.js';
import { MAX_RECIPIENTS } from './limits.js';
import { bareAddress } from './correspondents.js';

/** Every check the owner can turn on or off: the content detectors and the recipient volume. */
export const GUARD_CHECKS = [...GUARD_DETECTORS, 'new_recipients'] as const;
export type GuardCheck = (typeof GUARD_CHECKS)[number];

export type { GuardFinding } from './guard-content.js';

/** What each check looks for, as the owner's settings page and docs/guarded.md say it. */
export const GUARD_CHECK_DESCRIPTIONS: Readonly<Record<GuardCheck, string>> = {
  credentials: 'API keys, access tokens and passwords (AWS, GitHub, GitLab, Slack, Stripe, Google, OpenAI, Anthropic, JWTs, svc keys, password= assignments)',
  private_keys: 'PEM and PGP private keys',
  card_numbers: 'payment card numbers (issuer prefix and Luhn check)',
  iban: 'bank account numbers (IBAN with its check digits)',
  national_ids: 'national identity numbers (US SSN, UK National Insurance, German tax id, Spanish DNI/NIE)',
  home_secrets: 'secrets of this svc home: webhook signing secrets, edge tokens, the SMTP password, the inbound key, and the secrets you add here',
  new_recipients: 'many recipients this inbox has never corresponded with, in one message or within 24 hours',
};

/** First contacts per message and per 24 hours, by default and at most. */
export const DEFAULT_NEW_PER_MESSAGE = 10;
export const DEFAULT_NEW_PER_DAY = 30;
export const MAX_NEW_LIMIT = 100_000;
/** Owner-added secrets: at most this many, each 16–256 characters (the detector's bounds). */
export const MAX_OWNER_SECRETS = 200;
export const MIN_SECRET_CHARS = 16;
export const MAX_SECRET_CHARS = 256;
/** Approved schedules whose recipients count against the day's first contacts. */
const MAX_SCHEDULED_COUNTED = 1_000;
const DAY_MS = 24 * 60 * 60 * 1000;

interface OwnerSecret {
  secret_id: string;
  value: string;
  created_at: string;
}

/** The stored settings (inside the encrypted database). */
interface StoredGuardSettings {
  disabled: GuardCheck[];
  new_recipients: { per_message: number; per_day: number };
  secrets: OwnerSecret[];
}

/** The owner's view: every check with whether it runs, the volume limits, the added secrets by their last 4 characters. */
export interface GuardSettingsView {
  checks: { name: GuardCheck; enabled: boolean; description: string }[];
  new_recipients: { per_message: number; per_day: number };
  secrets: { secret_id: string; hint: string; created_at: string }[];
}

/** The owner's change: checks switched by name, volume limits, secrets added (values) and removed (ids). */
export interface GuardSettingsPatch {
  checks?: Partial<Record<string, boolean>>;
  new_recipients?: { per_message?: number; per_day?: number };
  add_secrets?: string[];
  remove_secrets?: string[];
}

const KEY = 'outbound_guard';
const DEFAULTS: StoredGuardSettings = { disabled: [], new_recipients: { per_message: DEFAULT_NEW_PER_MESSAGE, per_day: DEFAULT_NEW_PER_DAY }, secrets: [] };

function readSettings(db: Db): StoredGuardSettings {
  const row = prepared(db, 'SELECT value FROM settings WHERE key = ?').get(KEY) as { value: string } | undefined;
  if (!row) return DEFAULTS;
  const stored = JSON.parse(row.value) as Partial<StoredGuardSettings>;
  return {
    disabled: (stored.disabled ?? []).filter((c) => (GUARD_CHECKS as readonly string[]).includes(c)),
    new_recipients: { ...DEFAULTS.new_recipients, ...stored.new_recipients },
    secrets: stored.secrets ?? [],
  };
}

const hint = (secret: string) => `…${secret.slice(-4)}`;

export function guardSettingsView(db: Db): GuardSettingsView {
  const s = readSettings(db);
  return {
    checks: GUARD_CHECKS.map((name) => ({ name, enabled: !s.disabled.includes(name), description: GUARD_CHECK_DESCRIPTIONS[name] })),
    new_recipients: { ...s.new_recipients },
    secrets: s.secrets.map((x) => ({ secret_id: x.secret_id, hint: hint(x.value), created_at: x.created_at })),
  };
}

const invalid = (message: string, fix: string) => new ApiError('validation_error', message, { fix });

/** Checks an owner's change before any transaction: known check names, sane limits, secrets of the detector's size. */
export function checkGuardPatch(patch: GuardSettingsPatch): GuardSettingsPatch {
  for (const name of Object.keys(patch.checks ?? {})) {
    if (!(GUARD_CHECKS as readonly string[]).includes(name)) throw invalid(`\`checks\` names an unknown check: ${JSON.stringify(name.slice(0, 64))}.`, `Use one of ${GUARD_CHECKS.join(', ')}.`);
  }
  for (const secret of patch.add_secrets ?? []) {
    if (secret.length < MIN_SECRET_CHARS || secret.length > MAX_SECRET_CHARS) {
      throw invalid(`Each added secret must have ${MIN_SECRET_CHARS}–${MAX_SECRET_CHARS} characters; one has ${secret.length}.`, 'Shorter strings turn up in ordinary mail by chance; add the whole secret.');
    }
  }
  return patch;
}

/**
 * Applies a checked change; a read-modify-write that runs inside the caller's transaction.
 * Returns the new view. A secret added twice is kept once; unknown ids to remove are ignored.
 */
export function writeGuardSettings(db: Db, patch: GuardSettingsPatch, now = new Date()): GuardSettingsView {
  const s = readSettings(db);
  const disabled = new Set(s.disabled);
  for (const [name, on] of Object.entries(patch.checks ?? {})) {
    if (on === true) disabled.delete(name as GuardCheck);
    else if (on === false) disabled.add(name as GuardCheck);
  }
  const removed = new Set(patch.remove_secrets ?? []);
  const secrets = s.secrets.filter((x) => !removed.has(x.secret_id));
  for (const value of patch.add_secrets ?? []) {
    if (!secrets.some((x) => x.value === value)) secrets.push({ secret_id: `gsec_${randomUUID()}`, value, created_at: now.toISOString() });
  }
  if (secrets.length > MAX_OWNER_SECRETS) throw invalid(`The guard keeps at most ${MAX_OWNER_SECRETS} secrets of yours; this change would make ${secrets.length}.`, 'Remove secrets you no longer use first.');
  const next: StoredGuardSettings = {
    disabled: GUARD_CHECKS.filter((c) => disabled.has(c)),
    new_recipients: { ...s.new_recipients, ...(patch.new_recipients ?? {}) },
    secrets,
  };
  prepared(db, 'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(KEY, JSON.stringify(next));
  return guardSettingsView(db);
}

// ---------------------------------------------------------------------------------------------
// The check

/** Secret strings of this home that never leave in mail. */
function homeSecrets(db: Db, s: StoredGuardSettings): string[] {
  const out = s.secrets.map((x) => x.value);
  for (const r of prepared(db, 'SELECT secret FROM webhooks').all() as { secret: string }[]) out.push(r.secret);
  const setting = (key: string) => (prepared(db, 'SELECT value FROM settings WHERE key = ?').get(key) as { value: string } | undefined)?.value;
  const json = (key: string): unknown => {
    const v = setting(key);
    try {
      return v === undefined ? undefined : JSON.parse(v);
    } catch {
      return undefined;
    }
  };
  const local = setting('local_edge_token');
  if (local) out.push(local);
  const pageKey = setting('page_token_key');
  if (pageKey) out.push(pageKey);
  const transport = json('transport') as { edge?: { token?: string } | null; smtp?: { password?: string } | null } | undefined;
  if (transport?.edge?.token) out.push(transport.edge.token);
  if (transport?.smtp?.password) out.push(transport.smtp.password);
  const inbound = json('inbound_key_pair') as { privateJwk?: { d?: string } } | undefined;
  if (inbound?.privateJwk?.d) out.push(inbound.privateJwk.d);
  return out.filter((x) => typeof x === 'string' && x.length >= MIN_SECRET_CHARS);
}

/** Header values and display names scanned (a header line is far shorter). */
const MAX_OTHER_CHARS = 16 * 1024;

/** This message's recipients that the inbox has never written to nor heard from. */
function firstContacts(db: Db, inboxId: string, recipients: readonly string[]): string[] {
  const known = prepared(db, 'SELECT 1 FROM correspondent_addresses WHERE inbox_id = ? AND address = ?');
  const fresh = new Set<string>();
  for (const address of recipients) if (address !== inboxId && !known.get(inboxId, address)) fresh.add(address);
  return [...fresh];
}

/** First contacts already made in the last 24 hours, plus those in approved schedules not yet sent. */
function firstContactsToday(db: Db, inboxId: string, now: number, excludeDraftId: string | null): Set<string> {
  const since = new Date(now - DAY_MS).toISOString();
  const made = prepared(db, 'SELECT address FROM correspondent_addresses WHERE inbox_id = ? AND introduced_at >= ?').all(inboxId, since) as { address: string }[];
  const out = new Set(made.map((r) => r.address));
  const scheduled = prepared(
    db,
    "SELECT draft_id, to_addresses, cc_addresses, bcc_addresses FROM drafts WHERE inbox_id = ? AND send_status IN ('scheduled', 'sending') AND approved = 1 LIMIT ?",
  ).all(inboxId, MAX_SCHEDULED_COUNTED) as { draft_id: string; to_addresses: string | null; cc_addresses: string | null; bcc_addresses: string | null }[];
  const pending: string[] = [];
  for (const d of scheduled) {
    if (d.draft_id === excludeDraftId) continue;
    for (const json of [d.to_addresses, d.cc_addresses, d.bcc_addresses]) if (json) for (const display of JSON.parse(json) as string[]) pending.push(bareAddress(display));
  }
  for (const address of firstContacts(db, inboxId, pending)) out.add(address);
  for (const reserved of RESERVED.get(inboxId)?.values() ?? []) for (const address of reserved) out.add(address);
  return out;
}

function volumeFinding(db: Db, inboxId: string, recipients: readonly Recipient[], limits: StoredGuardSettings['new_recipients'], now: number, draftId: string | null): GuardFinding | null {
  const fresh = firstContacts(db, inboxId, recipients.slice(0, MAX_RECIPIENTS).map((r) => r.address.toLowerCase()));
  if (fresh.length === 0) return null;
  if (fresh.length > limits.per_message) {
    return { detector: 'new_recipients', detail: `${fresh.length} recipients this inbox has never corresponded with (more than ${limits.per_message} in one message)` };
  }
  const today = firstContactsToday(db, inboxId, now, draftId);
  const total = new Set([...today, ...fresh]).size;
  if (total > limits.per_day) {
    return { detector: 'new_recipients', detail: `${total} first contacts within 24 hours with this message and approved schedules (more than ${limits.per_day})` };
  }
  return null;
}

/**
 * `draftId`: the draft being sent or scheduled; `threading`: the In-Reply-To and References the
 * send will carry (an agent may choose them for a draft).
 */
export interface GuardOptions {
  now?: number;
  draftId?: string | null;
  threading?: Pick<Threading, 'inReplyTo' | 'references'> | null;
}

/** What the guard checks of one send: the content scan's input (null when every content check is off), and the first-contact finding. */
export interface GuardInputs {
  content: GuardContent | null;
  volume: GuardFinding | null;
}

/**
 * Reads what the guard needs for a send (the owner's settings, the home's secrets, the inbox's
 * correspondents) and makes the first-contact finding; the content scan itself is
 * `inspectContent` (src/mail/guard-content.ts), which the send path runs in the CPU pool.
 * `draftId` is the draft being sent or scheduled, whose own schedule does not count twice
 * against the day's first contacts.
 */
export function guardInputs(db: Db, inboxId: string, c: Composition, opts: GuardOptions = {}): GuardInputs {
  const s = readSettings(db);
  const inbox = prepared(db, 'SELECT display_name FROM inboxes WHERE inbox_id = ?').get(inboxId) as { display_name: string | null } | undefined;
  const enabled = GUARD_DETECTORS.filter((d) => !s.disabled.includes(d));
  const content: GuardContent | null =
    enabled.length === 0
      ? null
      : {
          subject: c.subject,
          text: c.text,
          html: c.html,
          attachments: c.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content })),
          homeSecrets: enabled.includes('home_secrets') ? homeSecrets(db, s) : [],
          other: otherFields(c, inbox?.display_name ?? null, opts.threading ?? null),
          enabled,
        };
  const volume = s.disabled.includes('new_recipients') ? null : volumeFinding(db, inboxId, [...c.to, ...c.cc, ...c.bcc], s.new_recipients, opts.now ?? Date.now(), opts.draftId ?? null);
  return { content, volume };
}

/** The findings of a check once its content was scanned: content first, then first contacts. */
export const heldFor = (inputs: GuardInputs, content: readonly GuardFinding[]): GuardFinding[] => [...content, ...(inputs.volume ? [inputs.volume] : [])];

/**
 * Why a guarded credential's send must wait for the owner, scanned on this thread: the draft
 * routes' check of a schedule, which is synchronous. Sends scan in the CPU pool (send-flow.ts).
 */
export function guardFindings(db: Db, inboxId: string, c: Composition, opts: GuardOptions = {}): GuardFinding[] {
  const inputs = guardInputs(db, inboxId, c, opts);
  return heldFor(inputs, inputs.content ? inspectContent(inputs.content) : []);
}

/**
 * A header name or an address as the words a reader makes of it (`X-ghp_…`, `x-ghp_…@collect.example`):
 * a token glued to a prefix by a dash or a dot is not "inside a longer token" there. Read besides
 * the name as written, so a token with its own dashes is still found whole.
 */
const asWords = (s: string) => s.replace(/[-.+=@]/g, ' ');

/**
 * Every header svc writes that carries the agent's (or a forwarded stranger's) text: From with
 * the inbox's display name (an `inbox_update` key can set it), To, Cc, Bcc and Reply-To whole
 * (names and addresses), the caller's headers by name and value, In-Reply-To and References,
 * and the attachments' file names and content IDs. The subject is a field of its own.
 */
function otherFields(c: Composition, displayName: string | null, threading: GuardOptions['threading']): { where: string; text: string }[] {
  const out: { where: string; text: string }[] = [];
  if (displayName) out.push({ where: 'the sender name (From)', text: displayName.slice(0, MAX_OTHER_CHARS) });
  for (const [name, value] of Object.entries(c.headers)) {
    out.push({ where: `the ${name.slice(0, 40)} header`, text: `${name}: ${value}\n${asWords(name)}`.slice(0, MAX_OTHER_CHARS) });
  }
  const names = [...c.to, ...c.cc, ...c.bcc, ...c.replyTo].map((r) => r.display).join('\n');
  if (names !== '') out.push({ where: 'the recipients', text: `${names}\n${asWords(names)}`.slice(0, MAX_OTHER_CHARS * 8) });
  const ids = threading ? [threading.inReplyTo ?? '', ...threading.references].filter((id) => id !== '').join('\n') : '';
  if (ids !== '') out.push({ where: 'the In-Reply-To and References headers', text: ids.slice(0, MAX_OTHER_CHARS * 4) });
  const files = c.attachments.flatMap((a) => [a.filename ?? '', a.contentId ?? '']).filter((f) => f !== '').join('\n');
  if (files !== '') out.push({ where: 'the attachment names', text: files.slice(0, MAX_OTHER_CHARS) });
  return out;
}

// ---------------------------------------------------------------------------------------------
// First contacts being sent right now

/**
 * First contacts of guarded sends that passed the guard and are being queued, per inbox: counted
 * by the daily limit until their commit, so that sends racing each other cannot together pass it.
 */
const RESERVED = new Map<string, Map<symbol, readonly string[]>>();

/** Counts `addresses` as first contacts of `inboxId` until the returned release is called (after the send's commit, or its failure). */
export function reserveFirstContacts(inboxId: string, addresses: readonly string[]): () => void {
  if (addresses.length === 0) return () => undefined;
  const token = Symbol('send');
  let forInbox = RESERVED.get(inboxId);
  if (!forInbox) RESERVED.set(inboxId, (forInbox = new Map()));
  forInbox.set(token, addresses);
  return () => {
    forInbox.delete(token);
    if (forInbox.size === 0 && RESERVED.get(inboxId) === forInbox) RESERVED.delete(inboxId);
  };
}

/** This message's recipients that the inbox has never corresponded with (the reservation a passing send makes). */
export function firstContactsOf(db: Db, inboxId: string, c: Composition): string[] {
  return firstContacts(db, inboxId, [...c.to, ...c.cc, ...c.bcc].slice(0, MAX_RECIPIENTS).map((r) => r.address.toLowerCase()));
}

/** One sentence naming the checks that held a send, for the `approval_required` message. */
export function heldBecause(findings: readonly GuardFinding[]): string {
  const details = findings.map((f) => f.detail);
  return details.length === 1 ? details[0] : `${details.slice(0, -1).join('; ')}; and ${details[details.length - 1]}`;
}
