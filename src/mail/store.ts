/**
 * commitInbound: the one write path for received mail. In a single transaction it stores the
 * message (bodies, extracted reply text, headers, addresses, attachments, raw MIME), threads it,
 * labels it, indexes it for search and appends its `message.received*` event. Idempotent on the
 * edge's object key and on the Message-ID within the inbox, so a crash between commit and the
 * edge delete neither loses nor duplicates mail.
 */
import { createHash } from 'node:crypto';
import type { Db } from '../db/open.js';
import type { ParsedMail } from '../../workers/pool/parse.js';
import { uuidv7 } from '../db/ids.js';
import { appendEvent } from '../events/log.js';
import { bumpSearchGeneration } from '../core/pagination.js';
import { deriveText, type DerivedText } from './extract.js';
import type { ManipulationVerdict } from './manipulation.js';
import type { InboundAuth } from '../edge/sealed.js';
import { domainOf, knownDomains, rememberAddress, rememberCorrespondent, withSenderCheck } from './correspondents.js';
import { storedExtract } from './extracted-span.js';

export { PREVIEW_LENGTH, previewOf } from './extract.js';
import { HIDDEN_LABELS, INBOUND_HIDDEN_ORDER, SUSPICIOUS_LABEL, type InboundHiddenLabel } from './labels.js';
import { messageWithBody } from './messages.js';
import { keepSummary, threadSummaries } from './threads.js';
import { displayAddress, type ThreadRow } from './serialize.js';
import { prepared } from '../db/statements.js';
import { MAX_MESSAGE_ID, MAX_THREAD_REFS } from './limits.js';
import { storeRawMime } from './raw-mime.js';
import { bufferView } from '../core/bytes.js';
import { searchBodyWith } from './attachment-text.js';
import { indexMessage, searchText } from './search-index.js';
import type { AttachmentText } from '../attachment-text/schemas.js';

export interface InboundMail {
  inboxId: string;
  parsed: ParsedMail;
  raw: Uint8Array;
  /** The edge buffer object key; a second commit with the same key returns the first result. */
  sourceKey?: string;
  hiddenLabels?: InboundHiddenLabel[];
  /**
   * The From address passed authentication (src/inbound/ingest.ts isAuthenticatedSender); only
   * then may it become a known correspondent. Absent: not authenticated.
   */
  senderAuthenticated?: boolean;
  /** When the edge accepted the mail; defaults to now. */
  receivedAt?: string;
  /** deriveText(parsed), computed where the MIME was parsed; computed here, before the transaction, when absent. */
  derived?: DerivedText;
  /**
   * The manipulation verdict with the sender check (correspondents.ts senderVerdicts), computed by
   * a caller that commits inside a transaction of its own; computed here when absent.
   */
  manipulation?: ManipulationVerdict;
  /**
   * Each attachment's text, read before the commit (src/attachment-text/on-receive.ts); an absent
   * or null entry is read on the attachment's first read.
   */
  attachmentText?: readonly (AttachmentText | null)[];
  /** svc's SPF/DKIM/DMARC/ARC verdict of the message, kept for the owner's message view; absent: not known. */
  auth?: InboundAuth;
}

export interface CommitResult {
  messageRowid: number;
  messageId: string;
  threadId: string;
  /** The event's sequence number; the caller publishes it after the commit (null if it was purged). */
  seq: number | null;
  /** True when the mail was already stored; nothing was written and nothing should be published. */
  duplicate: boolean;
}

export { MAX_INDEXED_BODY } from './attachment-text.js';

const MSG_ID = /<[^<>\s]+>/g;

function messageIds(value: string | null | undefined): string[] {
  return value ? (value.match(MSG_ID) ?? []) : [];
}

export function stableAttachmentId(messageId: string, index: number): string {
  return `att_${createHash('sha256').update(`${messageId}\u0000${index}`).digest('hex').slice(0, 24)}`;
}

function disposition(value: string | null): string | null {
  if (value === null) return null;
  const v = value.toLowerCase();
  return v === 'inline' || v === 'attachment' ? v : null;
}

const json = <T>(list: T[]): string | null => (list.length ? JSON.stringify(list) : null);

function existing(db: Db, row: { id: number; message_id: string; thread_id: string }): CommitResult {
  const event = prepared(db, "SELECT seq FROM events WHERE message_rowid = ? AND event_type LIKE 'message.received%' ORDER BY seq LIMIT 1").get(row.id) as { seq: number } | undefined;
  return { messageRowid: row.id, messageId: row.message_id, threadId: row.thread_id, seq: event?.seq ?? null, duplicate: true };
}

/**
 * Stores one received message. Everything computed from the body (extraction, preview, header
 * record, search text) is done before the transaction, so the write lock is held for SQL only.
 */
export function commitInbound(db: Db, input: InboundMail): CommitResult {
  const { parsed } = input;
  const derived = input.derived ?? deriveText(parsed);
  const from = parsed.from[0];
  const participants = [from ? displayAddress(from) : '', ...parsed.to.map(displayAddress), ...parsed.cc.map(displayAddress)].join(' ');
  const indexed = searchText(input.inboxId, parsed.subject ?? '', participants, searchBodyWith(parsed.text, input.attachmentText?.map((r) => r?.text) ?? []));
  const parsedId = messageIds(parsed.messageId)[0];
  const inReplyTo = messageIds(parsed.inReplyTo);
  const refs = parsed.references.flatMap((r) => messageIds(r));
  const senderDomain = domainOf(from?.address);
  const verdict = input.manipulation ?? withSenderCheck(derived.manipulation, senderDomain, knownDomains(db, input.inboxId));
  return db.transaction((): CommitResult => {
    if (input.sourceKey !== undefined) {
      const same = prepared(db, 'SELECT id, message_id, thread_id FROM messages WHERE source_key = ?').get(input.sourceKey) as
        | { id: number; message_id: string; thread_id: string }
        | undefined;
      if (same) return existing(db, same);
    }
    const inbox = prepared(db, 'SELECT inbox_id, domain FROM inboxes WHERE inbox_id = ?').get(input.inboxId) as { inbox_id: string; domain: string } | undefined;
    if (!inbox) throw new Error(`commitInbound: no inbox ${input.inboxId}`);

    const messageId = parsedId && parsedId.length <= MAX_MESSAGE_ID ? parsedId : `<${uuidv7()}@${inbox.domain}>`;
    const dup = prepared(db, 'SELECT id, message_id, thread_id FROM messages WHERE inbox_id = ? AND message_id = ?').get(inbox.inbox_id, messageId) as
      | { id: number; message_id: string; thread_id: string }
      | undefined;
    if (dup) return existing(db, dup);

    const timestamp = input.receivedAt ? new Date(input.receivedAt).toISOString() : new Date().toISOString();
    const threadId = joinThread(db, inbox.inbox_id, [...inReplyTo, ...refs.slice(-MAX_THREAD_REFS)], timestamp) ?? newThread(db, inbox.inbox_id, parsed.subject, timestamp);

    const extract = storedExtract(parsed.text, derived.extractedText);
    const hidden = INBOUND_HIDDEN_ORDER.filter((l) => input.hiddenLabels?.includes(l));
    const rowid = Number(
      prepared(
        db,
        `INSERT INTO messages (inbox_id, thread_id, message_id, from_address, sender, to_addresses, cc_addresses, bcc_addresses, reply_to, subject, preview,
           text, html, extracted_text, extracted_from, extracted_length, extracted_html, actions, manipulation, headers, in_reply_to, refs, size, timestamp, direction, source_key, created_at, updated_at, hidden)
         VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'inbound', ?, ?, ?, ?)`,
      ).run(
        inbox.inbox_id,
        threadId,
        messageId,
        from ? displayAddress(from) : null,
        from ? from.address.toLowerCase() : null,
        JSON.stringify(parsed.to.map(displayAddress)),
        json(parsed.cc.map(displayAddress)),
        json(parsed.replyTo.map(displayAddress)),
        parsed.subject,
        derived.preview,
        parsed.text,
        parsed.html,
        extract.extracted_text,
        extract.extracted_from,
        extract.extracted_length,
        derived.extractedHtml,
        derived.actionsJson,
        JSON.stringify(verdict),
        derived.headersJson,
        inReplyTo[0] ?? null,
        json(refs),
        input.raw.byteLength,
        timestamp,
        input.sourceKey ?? null,
        timestamp,
        timestamp,
        // Its hidden label is added below; set here, the row is not written twice (migration 37's trigger finds it set).
        hidden.length > 0 ? 1 : 0,
      ).lastInsertRowid,
    );

    const addLabel = prepared(db, 'INSERT OR IGNORE INTO message_labels (message_rowid, label) VALUES (?, ?)');
    for (const label of ['received', 'unread', ...hidden, ...(verdict.suspicious ? [SUSPICIOUS_LABEL] : [])]) addLabel.run(rowid, label);
    // Only clean mail from an authenticated sender vouches for its address and domain
    // (src/mail/correspondents.ts): a forged From must not make a stranger "known".
    if (!verdict.suspicious && hidden.length === 0 && input.senderAuthenticated === true) {
      rememberCorrespondent(db, inbox.inbox_id, senderDomain, timestamp);
      rememberAddress(db, inbox.inbox_id, from?.address, null);
    }

    const addAttachment = prepared(
      db,
      `INSERT INTO attachments (message_rowid, attachment_id, filename, content_type, content_disposition, content_id, size, content, text, text_status, text_truncated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    parsed.attachments.forEach((a, i) => {
      const contentId = a.contentId ? a.contentId.replace(/^<|>$/g, '') : null;
      const read = input.attachmentText?.[i] ?? null;
      addAttachment.run(rowid, stableAttachmentId(messageId, i), a.filename, a.contentType, disposition(a.contentDisposition), contentId, a.content.byteLength, bufferView(a.content), read?.text ?? null, read?.status ?? null, read?.truncated ? 1 : 0);
    });
    storeRawMime(db, rowid, input.raw);
    if (input.auth) prepared(db, 'UPDATE messages SET auth = ? WHERE id = ?').run(JSON.stringify(input.auth), rowid);
    indexMessage(db, rowid, timestamp, indexed);
    bumpSearchGeneration(db);

    // The event carries the message and its thread as a reader of this event type sees them:
    // the hidden label that selected the variant is visible to them, other hidden mail is not.
    const message = messageWithBody(db, rowid, { text: parsed.text, html: parsed.html, extracted_text: derived.extractedText, extracted_html: derived.extractedHtml, actions: derived.actionsJson, manipulation: JSON.stringify(verdict) });
    const thread = prepared(db, 'SELECT thread_id, inbox_id, subject, created_at, updated_at FROM threads WHERE thread_id = ?').get(threadId) as ThreadRow;
    const view = { excluded: HIDDEN_LABELS.filter((l) => !(hidden as readonly string[]).includes(l)) };
    const [summary] = threadSummaries(db, [thread], view);
    keepSummary(db, summary, view);
    const { seq } = appendEvent(db, {
      eventType: hidden.length ? `message.received.${hidden[0]}` : 'message.received',
      inboxId: inbox.inbox_id,
      payloadKey: 'message',
      payload: message,
      extra: { thread: summary },
      messageRowid: rowid,
      bodiesFromMessage: true,
    });
    return { messageRowid: rowid, messageId, threadId, seq, duplicate: false };
  }).immediate();
}

/** The thread of the newest message in the inbox whose Message-ID the mail refers to. */
export function joinThread(db: Db, inboxId: string, referenced: string[], timestamp: string): string | null {
  if (referenced.length === 0) return null;
  const row = prepared(
    db,
    'SELECT thread_id FROM messages WHERE inbox_id = ? AND message_id IN (SELECT value FROM json_each(?)) ORDER BY timestamp DESC, id DESC LIMIT 1',
  ).get(inboxId, JSON.stringify([...new Set(referenced)])) as { thread_id: string } | undefined;
  if (!row) return null;
  prepared(db, 'UPDATE threads SET updated_at = max(updated_at, ?) WHERE thread_id = ?').run(timestamp, row.thread_id);
  return row.thread_id;
}

export function newThread(db: Db, inboxId: string, subject: string | null, timestamp: string): string {
  const threadId = uuidv7();
  prepared(db, 'INSERT INTO threads (thread_id, inbox_id, subject, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(threadId, inboxId, subject, timestamp, timestamp);
  return threadId;
}
