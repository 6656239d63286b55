/**
 * Reads the two kinds of report that come back to the VERP return path and the feedback address:
 * delivery status notifications (RFC 3464: `multipart/report; report-type=delivery-status`) and
 * ARF feedback reports (RFC 5965: `multipart/report; report-type=feedback-report`). Pure
 * functions over the raw bytes; anything else (or anything malformed) reads as null.
 *
 * Only the report parts are decoded; nothing of the original message's body is looked at.
 */
import { MAX_REPORT_DEPTH, MAX_REPORT_PARTS } from './limits.js';

/** `Action` values of RFC 3464 §2.3.3. */
export type DsnAction = 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded';

export interface DsnRecipient {
  /** From `Final-Recipient` (else `Original-Recipient`), without the address type. */
  recipient: string;
  action: DsnAction;
  /** The enhanced status code (`5.1.1`), when given. */
  status: string | null;
  /** The SMTP reply code from `Diagnostic-Code: smtp; 550 …`, else derived from `status` (5 → 550, 4 → 450). */
  code: number | undefined;
  /** The diagnostic text (or the status), for the report's message. */
  message: string | undefined;
}

export type DeliveryReportMail =
  | { kind: 'dsn'; recipients: DsnRecipient[]; originalMessageId: string | null; returnPaths: string[] }
  | {
      kind: 'arf';
      /** `abuse`, `fraud`, `virus`, `other`, `not-spam`, … as the reporter wrote it (lower-cased). */
      feedbackType: string | null;
      /** `Original-Rcpt-To` fields, else the embedded message's To/Cc addresses. */
      recipients: string[];
      /** Where `recipients` came from: the report's own claim, or the (often redacted) original's headers. */
      recipientsFrom: 'original-rcpt-to' | 'original-headers';
      originalMessageId: string | null;
      /**
       * Envelope senders of the original as the report quotes them (ARF `Original-Mail-From`, the
       * embedded original's `Return-Path`): where a feedback loop's report carries the VERP tag.
       */
      returnPaths: string[];
    };

interface Entity {
  headers: Map<string, string[]>;
  body: string;
}

interface ContentType {
  type: string;
  params: Map<string, string>;
}

/** The report a message carries, or null when it is not a DSN or ARF report this edge can read. */
export function parseDeliveryReport(raw: Buffer): DeliveryReportMail | null {
  const report = findReport(parseEntity(raw.toString('utf8')), 0, { parts: 0 });
  if (!report) return null;
  const reportType = report.type.params.get('report-type')?.toLowerCase();
  const parts = splitMultipart(report.entity.body, report.type.params.get('boundary')!);
  if (!parts) return null;
  const entities = parts.slice(0, MAX_REPORT_PARTS).map(parseEntity);
  const original = entities.find((e) => ORIGINAL_TYPES.has(contentType(e).type));
  const originalHeaders = original ? originalHeaderFields(original) : null;
  const originalMessageId = originalHeaders ? messageIdOf(originalHeaders) : null;
  const originalReturnPaths = originalHeaders ? (originalHeaders.get('return-path') ?? []).map(bareAddress).filter((a): a is string => a !== null) : [];

  if (reportType === 'delivery-status') {
    const status = entities.find((e) => STATUS_TYPES.has(contentType(e).type));
    if (!status) return null;
    const recipients = dsnRecipients(decodedBody(status));
    return recipients.length > 0 ? { kind: 'dsn', recipients, originalMessageId, returnPaths: originalReturnPaths } : null;
  }
  if (reportType === 'feedback-report') {
    const feedback = entities.find((e) => contentType(e).type === 'message/feedback-report');
    if (!feedback) return null;
    const fields = parseFields(decodedBody(feedback));
    const rcptTo = (fields.get('original-rcpt-to') ?? []).map(bareAddress).filter((a): a is string => a !== null);
    const recipients = rcptTo.length > 0 ? rcptTo : originalHeaders ? headerAddresses(originalHeaders, ['to', 'cc']) : [];
    const mailFrom = (fields.get('original-mail-from') ?? []).map(bareAddress).filter((a): a is string => a !== null);
    return { kind: 'arf', feedbackType: fields.get('feedback-type')?.[0]?.toLowerCase() ?? null, recipients: unique(recipients), recipientsFrom: rcptTo.length > 0 ? 'original-rcpt-to' : 'original-headers', originalMessageId, returnPaths: unique([...mailFrom, ...originalReturnPaths]) };
  }
  return null;
}

const STATUS_TYPES = new Set(['message/delivery-status', 'message/global-delivery-status']);
const ORIGINAL_TYPES = new Set(['message/rfc822', 'message/global', 'text/rfc822-headers', 'message/rfc822-headers', 'message/global-headers']);
const ACTIONS = new Set<DsnAction>(['failed', 'delayed', 'delivered', 'relayed', 'expanded']);

/** The first `multipart/report` at the top or nested in multiparts (some MTAs wrap it). */
function findReport(entity: Entity, depth: number, budget: { parts: number }): { entity: Entity; type: ContentType } | null {
  const type = contentType(entity);
  if (!type.type.startsWith('multipart/')) return null;
  const boundary = type.params.get('boundary');
  if (!boundary) return null;
  if (type.type === 'multipart/report') return { entity, type };
  if (depth >= MAX_REPORT_DEPTH) return null;
  for (const part of splitMultipart(entity.body, boundary) ?? []) {
    if (++budget.parts > MAX_REPORT_PARTS) return null;
    const found = findReport(parseEntity(part), depth + 1, budget);
    if (found) return found;
  }
  return null;
}

function dsnRecipients(body: string): DsnRecipient[] {
  const out: DsnRecipient[] = [];
  // The first group holds per-message fields; each later group describes one recipient.
  for (const group of body.split(/\r?\n(?:[ \t]*\r?\n)+/)) {
    const fields = parseFields(group);
    const action = fields.get('action')?.[0]?.trim().toLowerCase().split(/[\s(]/)[0] as DsnAction | undefined;
    const recipient = typedAddress(fields.get('final-recipient')?.[0]) ?? typedAddress(fields.get('original-recipient')?.[0]);
    if (!action || !ACTIONS.has(action) || !recipient) continue;
    const status = /^[245]\.\d{1,3}\.\d{1,3}/.exec(fields.get('status')?.[0]?.trim() ?? '')?.[0] ?? null;
    const diagnostic = fields.get('diagnostic-code')?.[0]?.trim();
    const diagText = diagnostic ? diagnostic.replace(/^[A-Za-z0-9-]+\s*;\s*/, '') : undefined;
    const diagCode = diagText ? /^([245]\d\d)(?:[\s-]|$)/.exec(diagText)?.[1] : undefined;
    const code = diagCode ? Number(diagCode) : status ? Number(status[0]) * 100 + 50 : undefined;
    out.push({ recipient, action, status, code, message: diagText || (status ? `Status ${status}` : undefined) });
  }
  return out;
}

/** Header block and body of a MIME entity (CRLF or LF line ends). */
function parseEntity(text: string): Entity {
  const match = /\r?\n\r?\n/.exec(text);
  const head = match ? text.slice(0, match.index) : text;
  const body = match ? text.slice(match.index + match[0].length) : '';
  return { headers: parseFields(head), body };
}

/** `Name: value` lines with folded continuations → lower-cased name → values in order. */
function parseFields(text: string): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  const unfolded = text.replace(/\r?\n[ \t]+/g, ' ');
  for (const line of unfolded.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!/^[!-9;-~]+$/.test(name)) continue;
    const values = fields.get(name) ?? [];
    values.push(line.slice(colon + 1).trim());
    fields.set(name, values);
  }
  return fields;
}

function contentType(entity: Entity): ContentType {
  const value = entity.headers.get('content-type')?.[0] ?? 'text/plain';
  const [typePart, ...rest] = splitParams(value);
  const params = new Map<string, string>();
  for (const param of rest) {
    const eq = param.indexOf('=');
    if (eq <= 0) continue;
    let v = param.slice(eq + 1).trim();
    if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1).replace(/\\(.)/g, '$1');
    params.set(param.slice(0, eq).trim().toLowerCase(), v);
  }
  return { type: typePart.trim().toLowerCase(), params };
}

/** Splits on `;` outside quoted strings. */
function splitParams(value: string): string[] {
  const out: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '\\' && quoted && i + 1 < value.length) {
      current += c + value[++i];
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === ';' && !quoted) {
      out.push(current);
      current = '';
    } else current += c;
  }
  out.push(current);
  return out;
}

/** The parts between `--boundary` lines, or null when the boundary never appears. */
function splitMultipart(body: string, boundary: string): string[] | null {
  const delimiter = `--${boundary}`;
  const lines = body.split(/\r?\n/);
  const parts: string[] = [];
  let current: string[] | null = null;
  let seen = false;
  for (const line of lines) {
    const trimmed = line.replace(/[ \t]+$/, '');
    if (trimmed === delimiter || trimmed === `${delimiter}--`) {
      seen = true;
      if (current) parts.push(current.join('\r\n'));
      if (trimmed.endsWith('--') && trimmed !== delimiter) return parts;
      current = [];
      if (parts.length >= MAX_REPORT_PARTS) return parts;
      continue;
    }
    current?.push(line);
  }
  if (current && current.length > 0) parts.push(current.join('\r\n'));
  return seen ? parts : null;
}

function decodedBody(entity: Entity): string {
  const encoding = entity.headers.get('content-transfer-encoding')?.[0]?.trim().toLowerCase();
  if (encoding === 'base64') return Buffer.from(entity.body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (encoding === 'quoted-printable') {
    const bytes = entity.body.replace(/=\r?\n/g, '').replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return entity.body;
}

/** The header fields of the embedded original (a whole message or only its headers). */
function originalHeaderFields(entity: Entity): Map<string, string[]> {
  return parseEntity(decodedBody(entity)).headers;
}

function messageIdOf(headers: Map<string, string[]>): string | null {
  const value = headers.get('message-id')?.[0];
  const match = value ? /<[^<>\s]+>/.exec(value) : null;
  return match ? match[0] : null;
}

/** `rfc822; user@example.com` → `user@example.com`. */
function typedAddress(value: string | undefined): string | null {
  if (!value) return null;
  const semi = value.indexOf(';');
  return bareAddress(semi === -1 ? value : value.slice(semi + 1));
}

function bareAddress(value: string): string | null {
  const inner = /<([^<>]*)>/.exec(value)?.[1] ?? value;
  const address = inner.trim();
  return /^[^\s@<>",;]+@[^\s@<>",;]+$/.test(address) ? address : null;
}

/** Addresses in address-list headers (angle-bracketed or bare), good enough to match recipients. */
function headerAddresses(headers: Map<string, string[]>, names: string[]): string[] {
  const out: string[] = [];
  for (const name of names) {
    for (const value of headers.get(name) ?? []) {
      for (const match of value.matchAll(/<([^<>\s]+@[^<>\s]+)>|([^\s<>",;:]+@[^\s<>",;:]+)/g)) out.push(match[1] ?? match[2]);
    }
  }
  return out;
}

function unique(addresses: string[]): string[] {
  const seen = new Set<string>();
  return addresses.filter((a) => {
    const key = a.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
