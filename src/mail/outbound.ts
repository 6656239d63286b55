/**
 * Outbound mail, from a validated composition to a queued message: replies and forwards derive
 * recipients, subject, threading and (forwards) the original body and attachments; the MIME is
 * built once, at queue time, so what is stored is exactly what is sent; the checks of spec §4.5
 * run in order; `queueOutbound` stores the message (label `queued`) and its outbox row in one
 * transaction. `recordSendOutcome` is the one place a send's outcome is written, with its event;
 * the outbox row's move to `done` that goes with it is src/mail/outbox.ts's moveOutbox.
 */
import type { Db } from '../db/open.js';
import { uuidv7 } from '../db/ids.js';
import { appendEvent } from '../events/log.js';
import type { InboxRow } from '../auth/access.js';
import { ApiError } from '../core/errors.js';
import { bumpSearchGeneration } from '../core/pagination.js';
import type { ComposedMime, MimeSpec } from '../../workers/pool/compose.js';
import { checkAttachmentCount, checkComplete, checkSubject, dedupeRecipients, outgoingAttachment, parseRecipients, tooLarge, type Composition, type OutgoingAttachment, type Recipient, type StoredAttachmentRow } from './compose.js';
import type { DkimKey } from './dkim-keys.js';
import { markSendFinal } from './idempotency.js';
import { visibleSql, type Visibility } from './labels.js';
import { listVerdict } from './lists.js';
import { bareAddress } from './serialize.js';
import { MAX_MESSAGE_BYTES, MAX_REFERENCES } from './limits.js';
import { joinThread, MAX_INDEXED_BODY, newThread, previewOf, stableAttachmentId } from './store.js';
import { indexMessage, searchText } from './search-index.js';
import { prepared } from '../db/statements.js';
import { readTransport } from './transport.js';
import { storeRawMime } from './raw-mime.js';
import { storedExtract } from './extracted-span.js';
import { domainOf, rememberAddress, rememberCorrespondent } from './correspondents.js';

export type OutboundKind = 'send' | 'reply' | 'forward';

/** What a reply or forward needs from the original message. */
export interface OriginalMessage {
  rowid: number;
  inboxId: string;
  threadId: string;
  messageId: string;
  from: string | null;
  replyTo: string[];
  to: string[];
  cc: string[];
  subject: string | null;
  text: string | null;
  html: string | null;
  inReplyTo: string | null;
  references: string[];
  timestamp: string;
  direction: 'inbound' | 'outbound';
}

const list = (json: string | null): string[] => (json ? (JSON.parse(json) as string[]) : []);

export function loadOriginal(db: Db, inboxId: string, messageId: string, v: Visibility): OriginalMessage | null {
  const id = messageId.trim().startsWith('<') ? messageId.trim() : `<${messageId.trim()}>`;
  const row = prepared(
    db,
    `SELECT m.id, m.inbox_id, m.thread_id, m.message_id, m.from_address, m.reply_to, m.to_addresses, m.cc_addresses, m.subject, m.text, m.html, m.in_reply_to, m.refs, m.timestamp, m.direction
     FROM messages m WHERE m.inbox_id = ? AND m.message_id = ? AND ${visibleSql('m', v)}`,
  ).get(inboxId, id) as
    | { id: number; inbox_id: string; thread_id: string; message_id: string; from_address: string | null; reply_to: string | null; to_addresses: string; cc_addresses: string | null; subject: string | null; text: string | null; html: string | null; in_reply_to: string | null; refs: string | null; timestamp: string; direction: 'inbound' | 'outbound' }
    | undefined;
  if (!row) return null;
  return {
    rowid: row.id,
    inboxId: row.inbox_id,
    threadId: row.thread_id,
    messageId: row.message_id,
    from: row.from_address,
    replyTo: list(row.reply_to),
    to: list(row.to_addresses),
    cc: list(row.cc_addresses),
    subject: row.subject,
    text: row.text,
    html: row.html,
    inReplyTo: row.in_reply_to,
    references: list(row.refs),
    timestamp: row.timestamp,
    direction: row.direction,
  };
}

/** The original's attachments with their content, for forwarding. */
export function originalAttachments(db: Db, rowid: number): OutgoingAttachment[] {
  const rows = prepared(db, 'SELECT filename, content_type, content_disposition, content_id, content FROM attachments WHERE message_rowid = ? ORDER BY rowid').all(rowid) as StoredAttachmentRow[];
  return rows.map(outgoingAttachment);
}


export interface Threading {
  threadId: string | null;
  inReplyTo: string | null;
  references: string[];
}

function threadingAfter(original: OriginalMessage): Threading {
  const earlier = original.references.length ? original.references : original.inReplyTo ? [original.inReplyTo] : [];
  return { threadId: original.threadId, inReplyTo: original.messageId, references: [...earlier.filter((r) => r !== original.messageId), original.messageId].slice(-MAX_REFERENCES) };
}

function prefixed(prefix: 'Re' | 'Fwd', subject: string | null): string {
  const s = (subject ?? '').trim();
  const already = prefix === 'Re' ? /^re:/i : /^(fwd?|fw):/i;
  return already.test(s) ? s : `${prefix}: ${s}`.trimEnd();
}

const recipientsOf = (displays: string[]) => parseRecipients(displays.filter((d) => bareAddress(d)), 'original');

/**
 * A reply: recipients default to the original's Reply-To (else From; for our own sent mail, its
 * To); reply-all adds the original To and Cc; the inbox's own address is never a recipient.
 * Subject `Re: …`, In-Reply-To/References from the original, same thread.
 */
export function deriveReply(inboxId: string, original: OriginalMessage, c: Composition, replyAll: boolean): { composition: Composition; threading: Threading } {
  const self = (r: Recipient) => r.address !== inboxId;
  let to = c.to;
  if (to.length === 0) {
    const back = original.direction === 'outbound' ? original.to : original.replyTo.length ? original.replyTo : original.from ? [original.from] : [];
    to = recipientsOf(back);
  }
  let cc = c.cc;
  if (replyAll) {
    to = [...to, ...recipientsOf(original.to)];
    cc = [...cc, ...recipientsOf(original.cc)];
  }
  const [dto, dcc, dbcc] = dedupeRecipients(to.filter(self), cc.filter(self), c.bcc.filter(self));
  return { composition: { ...c, to: dto, cc: dcc, bcc: dbcc, subject: checkSubject(prefixed('Re', original.subject)) }, threading: threadingAfter(original) };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);

/** A forward: `Fwd: …` unless a subject is given, the original below a header block, its attachments first. */
export function deriveForward(original: OriginalMessage, c: Composition, attachments: OutgoingAttachment[]): { composition: Composition; threading: Threading } {
  const header = [
    '---------- Forwarded message ---------',
    `From: ${original.from ?? ''}`,
    `Date: ${new Date(original.timestamp).toUTCString()}`,
    `Subject: ${original.subject ?? ''}`,
    `To: ${original.to.join(', ')}`,
    ...(original.cc.length ? [`Cc: ${original.cc.join(', ')}`] : []),
  ];
  const text = `${c.text ?? ''}${c.text ? '\n\n' : ''}${header.join('\n')}\n\n${original.text ?? ''}`;
  const html =
    c.html !== null || original.html !== null
      ? `${c.html ?? (c.text ? `<p>${escapeHtml(c.text).replace(/\n/g, '<br>')}</p>` : '')}<div>${header.map(escapeHtml).join('<br>')}</div><br>${original.html ?? `<pre>${escapeHtml(original.text ?? '')}</pre>`}`
      : null;
  const all = [...attachments, ...c.attachments];
  checkAttachmentCount(all.length);
  return { composition: { ...c, subject: c.subject ?? checkSubject(prefixed('Fwd', original.subject)), text, html, attachments: all }, threading: threadingAfter(original) };
}

// ---- building the message ----

export interface PreparedSend {
  inbox: InboxRow;
  kind: OutboundKind;
  composition: Composition;
  threading: Threading;
  messageId: string;
  timestamp: string;
  raw: Uint8Array;
  /** Reply-free text and HTML for search and preview, derived in the pool with the MIME, before any transaction. */
  extracted: { text: string | null; html: string | null };
}

/** Builds the message and derives its extracted text and HTML (the pool's `composeOutbound`). */
export type ComposeMime = (spec: MimeSpec) => Promise<ComposedMime>;

export const fromHeader = (inbox: Pick<InboxRow, 'inbox_id' | 'display_name'>) =>
  inbox.display_name ? `${/[()<>[\]:;@\\,."]/.test(inbox.display_name) ? JSON.stringify(inbox.display_name) : inbox.display_name} <${inbox.inbox_id}>` : inbox.inbox_id;

/** Validates the final composition and builds its MIME (in the pool); 413 when it is 5 MiB or more. */
export async function prepareSend(inbox: InboxRow, kind: OutboundKind, composition: Composition, threading: Threading, compose: ComposeMime, dkim: DkimKey | null): Promise<PreparedSend> {
  checkComplete(composition);
  const estimate = composition.attachments.reduce((n, a) => n + Math.ceil(a.content.byteLength / 3) * 4, 0) + Buffer.byteLength(composition.text ?? '') + Buffer.byteLength(composition.html ?? '');
  if (estimate >= MAX_MESSAGE_BYTES) throw tooLarge(estimate);
  const messageId = `<${uuidv7()}@${inbox.domain}>`;
  const timestamp = new Date().toISOString();
  const c = composition;
  const { raw, extracted } = await compose({
    from: fromHeader(inbox),
    to: c.to.map((r) => r.display),
    cc: c.cc.map((r) => r.display),
    replyTo: c.replyTo.map((r) => r.display),
    subject: c.subject,
    text: c.text,
    html: c.html,
    messageId,
    inReplyTo: threading.inReplyTo,
    references: threading.references,
    date: timestamp,
    headers: c.headers,
    dkim: dkim ? { domainName: dkim.domain, keySelector: dkim.selector, privateKey: dkim.privateKey } : null,
    attachments: c.attachments.map((a) => ({ ...a, content: new Uint8Array(a.content.buffer, a.content.byteOffset, a.content.byteLength) })),
  });
  if (raw.byteLength >= MAX_MESSAGE_BYTES) throw tooLarge(raw.byteLength);
  return { inbox, kind, composition, threading, messageId, timestamp, raw, extracted };
}

export const allRecipients = (c: Composition): Recipient[] => [...c.to, ...c.cc, ...c.bcc];

/** Recipients refused by the send lists (and, for replies, the reply lists too). */
export function refusedRecipients(db: Db, inboxId: string, kind: OutboundKind, recipients: readonly string[]): string[] {
  const directions = kind === 'reply' ? (['send', 'reply'] as const) : (['send'] as const);
  return recipients.filter((address) => directions.some((direction) => ['block', 'not_allowed'].includes(listVerdict(db, { inboxId, direction, address }))));
}

/** The checks of spec §4.5 after size, in order: lists, inbox status, transport. */
export function sendChecks(db: Db, inbox: InboxRow, kind: OutboundKind, c: Composition): void {
  const refused = refusedRecipients(
    db,
    inbox.inbox_id,
    kind,
    allRecipients(c).map((r) => r.address),
  );
  if (refused.length > 0) {
    throw new ApiError('message_rejected', `The send lists of this inbox refuse ${refused.length === 1 ? 'a recipient' : `${refused.length} recipients`}: ${refused.slice(0, 5).join(', ')}.`, {
      fix: 'Remove the refused recipients, or ask the owner to change the allow/block lists.',
      extra: { recipients: refused },
    });
  }
  if (inbox.status !== 'active') {
    throw new ApiError('inbox_paused', `The inbox ${inbox.inbox_id} is paused; it cannot send.`, { fix: 'Set the inbox `status` back to `active` to send from it.' });
  }
  const transport = readTransport(db);
  if (!transport.edge && !transport.smtp) {
    throw new ApiError('service_unavailable', 'No mail transport is configured, so nothing can be sent.', {
      fix: 'The owner pairs an edge or sets an SMTP smart host with `svc transport set` (PUT /v0/owner/transport; `svc serve --local-edge` does this by itself).',
    });
  }
}

// ---- queueing ----

const json = <T>(items: T[]): string | null => (items.length ? JSON.stringify(items) : null);

/** `svc-bounce+<ref>@<domain>`: bounces and delivery reports name the message they are about. */
export const returnPath = (ref: string, domain: string) => `svc-bounce+${ref}@${domain}`;

/**
 * Stores the message as sent mail with label `queued` (plus the caller's labels) and its outbox
 * row. Runs inside the caller's transaction; the caller wakes the outbox after the commit.
 */
export function queueOutbound(db: Db, send: PreparedSend, extraLabels: readonly string[] = []): { rowid: number; messageId: string; threadId: string } {
  const { inbox, composition: c, threading, messageId, timestamp, extracted } = send;
  const threadId = (threading.threadId && threadExists(db, threading.threadId, inbox.inbox_id) ? touchThread(db, threading.threadId, timestamp) : null) ??
    joinThread(db, inbox.inbox_id, [...(threading.inReplyTo ? [threading.inReplyTo] : []), ...threading.references], timestamp) ??
    newThread(db, inbox.inbox_id, c.subject, timestamp);
  const from = fromHeader(inbox);
  const headers: Record<string, string> = {
    ...c.headers,
    From: from,
    ...(c.to.length ? { To: c.to.map((r) => r.display).join(', ') } : {}),
    ...(c.cc.length ? { Cc: c.cc.map((r) => r.display).join(', ') } : {}),
    ...(c.replyTo.length ? { 'Reply-To': c.replyTo[0].display } : {}),
    ...(c.subject !== null ? { Subject: c.subject } : {}),
    'Message-ID': messageId,
    Date: new Date(timestamp).toUTCString(),
    ...(threading.inReplyTo ? { 'In-Reply-To': threading.inReplyTo } : {}),
    ...(threading.references.length ? { References: threading.references.join(' ') } : {}),
  };
  const stored = storedExtract(c.text, extracted.text);
  const rowid = Number(
    prepared(
      db,
      `INSERT INTO messages (inbox_id, thread_id, message_id, from_address, sender, to_addresses, cc_addresses, bcc_addresses, reply_to, subject, preview,
         text, html, extracted_text, extracted_from, extracted_length, extracted_html, headers, in_reply_to, refs, size, timestamp, direction, send_status, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'outbound', 'queued', ?, ?)`,
    ).run(
      inbox.inbox_id,
      threadId,
      messageId,
      from,
      inbox.inbox_id,
      JSON.stringify(c.to.map((r) => r.display)),
      json(c.cc.map((r) => r.display)),
      json(c.bcc.map((r) => r.display)),
      json(c.replyTo.map((r) => r.display)),
      c.subject,
      previewOf(extracted.text),
      c.text,
      c.html,
      stored.extracted_text,
      stored.extracted_from,
      stored.extracted_length,
      extracted.html,
      JSON.stringify(headers),
      threading.inReplyTo,
      json(threading.references),
      send.raw.byteLength,
      timestamp,
      timestamp,
      timestamp,
    ).lastInsertRowid,
  );
  const addLabel = prepared(db, 'INSERT OR IGNORE INTO message_labels (message_rowid, label) VALUES (?, ?)');
  for (const label of ['queued', ...c.labels, ...extraLabels]) addLabel.run(rowid, label);
  const addAttachment = prepared(
    db,
    'INSERT INTO attachments (message_rowid, attachment_id, filename, content_type, content_disposition, content_id, size, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  c.attachments.forEach((a, i) => addAttachment.run(rowid, stableAttachmentId(messageId, i), a.filename, a.contentType, a.contentDisposition, a.contentId, a.content.byteLength, a.content));
  storeRawMime(db, rowid, send.raw);
  // Whom the inbox writes to, it corresponds with: a lookalike of their domains is flagged (docs/manipulation.md).
  for (const r of [...c.to, ...c.cc, ...c.bcc]) {
    rememberCorrespondent(db, inbox.inbox_id, domainOf(r.address), timestamp);
    // A first contact counts against the guarded policy's daily limit (src/mail/guard.ts).
    rememberAddress(db, inbox.inbox_id, r.address, timestamp);
  }
  const participants = [from, ...c.to.map((r) => r.display), ...c.cc.map((r) => r.display)].join(' ');
  indexMessage(db, rowid, timestamp, searchText(inbox.inbox_id, c.subject ?? '', participants, (c.text ?? '').slice(0, MAX_INDEXED_BODY)));
  bumpSearchGeneration(db);

  const ref = uuidv7();
  prepared(
    db,
    `INSERT INTO outbox (message_rowid, inbox_id, ref, kind, mail_from, recipients, state, attempts, next_attempt_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, 'queued', 0, ?, ?, ?)`,
  ).run(rowid, inbox.inbox_id, ref, send.kind, returnPath(ref, inbox.domain), JSON.stringify(allRecipients(c).map((r) => r.address)), timestamp, timestamp, timestamp);
  return { rowid, messageId, threadId };
}

function threadExists(db: Db, threadId: string, inboxId: string): boolean {
  return prepared(db, 'SELECT 1 FROM threads WHERE thread_id = ? AND inbox_id = ?').get(threadId, inboxId) !== undefined;
}

function touchThread(db: Db, threadId: string, timestamp: string): string {
  prepared(db, 'UPDATE threads SET updated_at = max(updated_at, ?) WHERE thread_id = ?').run(timestamp, threadId);
  return threadId;
}

// ---- outcomes ----

export type SendOutcome =
  | { status: 'sent'; reason?: string | null; recipients?: string[] }
  | { status: 'rejected'; reason: 'provider_rejected'; detail?: string }
  | { status: 'failed'; reason: string }
  | { status: 'send_unknown'; reason: string };

/** Final states release the idempotency key after 24 hours; send_unknown is not final until resolved. */
const FINAL = new Set(['sent', 'rejected', 'failed']);
const SEND_LABELS = ['queued', 'sent', 'send_unknown', 'failed', 'rejected'];

interface OutboundRow {
  id: number;
  inbox_id: string;
  thread_id: string;
  message_id: string;
  send_status: string | null;
}

export function outboundMessage(db: Db, rowid: number): OutboundRow | null {
  return (prepared(db, "SELECT id, inbox_id, thread_id, message_id, send_status FROM messages WHERE id = ? AND direction = 'outbound'").get(rowid) as OutboundRow | undefined) ?? null;
}

/**
 * Moves a sent message to its outcome: send label and `send_status`/`send_reason`, the event of
 * spec §6.2, the idempotency key's clock started. Called only by moveOutbox (src/mail/outbox.ts),
 * after its guarded move of the outbox row to `done`, inside the caller's transaction; returns
 * the event's seq for publishing.
 */
export function recordSendOutcome(db: Db, rowid: number, outcome: SendOutcome): number | null {
  const row = outboundMessage(db, rowid);
  if (!row) return null;
  const now = new Date().toISOString();
  const reason = outcome.status === 'sent' ? (outcome.reason ?? null) : outcome.reason;
  prepared(db, 'UPDATE messages SET send_status = ?, send_reason = ?, updated_at = ? WHERE id = ?').run(outcome.status, reason, now, rowid);
  const remove = prepared(db, 'DELETE FROM message_labels WHERE message_rowid = ? AND label = ?');
  for (const label of SEND_LABELS) if (label !== outcome.status) remove.run(rowid, label);
  prepared(db, 'INSERT OR IGNORE INTO message_labels (message_rowid, label) VALUES (?, ?)').run(rowid, outcome.status);
  if (FINAL.has(outcome.status)) markSendFinal(db, row.inbox_id, row.message_id, now);
  const ids = { inbox_id: row.inbox_id, thread_id: row.thread_id, message_id: row.message_id, timestamp: now };
  const recipients = outcome.status === 'sent' ? (outcome.recipients ?? outboxRecipients(db, rowid)) : [];
  const event =
    outcome.status === 'sent'
      ? { eventType: 'message.sent', payloadKey: 'send', payload: { ...ids, recipients, ...(reason ? { reason } : {}) } }
      : outcome.status === 'rejected'
        ? { eventType: 'message.rejected', payloadKey: 'reject', payload: { ...ids, reason } }
        : outcome.status === 'failed'
          ? { eventType: 'message.failed', payloadKey: 'failure', payload: { ...ids, reason } }
          : { eventType: 'message.send_unknown', payloadKey: 'outcome', payload: { ...ids, reason } };
  return appendEvent(db, { ...event, inboxId: row.inbox_id, messageRowid: rowid }).seq;
}

export function outboxRecipients(db: Db, rowid: number): string[] {
  const row = prepared(db, 'SELECT recipients FROM outbox WHERE message_rowid = ?').get(rowid) as { recipients: string } | undefined;
  return row ? (JSON.parse(row.recipients) as string[]) : [];
}
