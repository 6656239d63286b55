/**
 * Seeds received mail the way the inbound pipeline does: real MIME parsed by mailparser
 * (parseMime), committed with commitInbound. Works on a running service's home (through
 * openHomeDb) or on an open database.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../../src/db/open.js';
import { commitInbound, type CommitResult, type InboundMail } from '../../src/mail/store.js';
import { parseMime } from '../../workers/pool/parse.js';
import { openHomeDb } from './db.js';

export const fixturesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'mail');

/** The bytes of test/fixtures/mail/<name>. */
export function fixture(name: string): Buffer {
  return fs.readFileSync(path.join(fixturesDir, name));
}

export interface SeedOptions {
  inboxId: string;
  sourceKey?: string;
  hiddenLabels?: InboundMail['hiddenLabels'];
  receivedAt?: string;
  /** The From passed authentication, so its sender may become a known correspondent. */
  senderAuthenticated?: boolean;
  /** svc's authentication verdict to keep with the message (what the edge evaluated). */
  auth?: InboundMail['auth'];
}

/** Parses `raw` (bytes, MIME text, or a fixture file name ending in .eml) and commits it. */
export async function seedMail(target: string | Db, raw: Uint8Array | string, opts: SeedOptions): Promise<CommitResult> {
  const bytes = typeof raw === 'string' ? (raw.endsWith('.eml') && !raw.includes('\n') ? fixture(raw) : Buffer.from(raw.replace(/\r?\n/g, '\r\n'))) : raw;
  const parsed = await parseMime(bytes);
  const db = typeof target === 'string' ? openHomeDb(target) : target;
  try {
    return commitInbound(db, { inboxId: opts.inboxId, parsed, raw: bytes, sourceKey: opts.sourceKey, hiddenLabels: opts.hiddenLabels, senderAuthenticated: opts.senderAuthenticated, receivedAt: opts.receivedAt, auth: opts.auth });
  } finally {
    if (typeof target === 'string') db.close();
  }
}

/** A minimal RFC 5322 message for tests that only need a few fields. */
export function simpleMail(fields: { from?: string; to?: string; cc?: string; subject?: string; messageId?: string; inReplyTo?: string; references?: string; body?: string }): string {
  const lines = [
    `From: ${fields.from ?? 'Sender <sender@example.org>'}`,
    `To: ${fields.to ?? 'agent@example.com'}`,
    ...(fields.cc ? [`Cc: ${fields.cc}`] : []),
    `Subject: ${fields.subject ?? 'Hello'}`,
    ...(fields.messageId ? [`Message-ID: ${fields.messageId}`] : []),
    ...(fields.inReplyTo ? [`In-Reply-To: ${fields.inReplyTo}`] : []),
    ...(fields.references ? [`References: ${fields.references}`] : []),
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    fields.body ?? 'Hello there.',
    '',
  ];
  return lines.join('\r\n');
}

/**
 * A delivery status notification (RFC 3464) as a remote MTA sends it: `to` is the envelope
 * return path it answers, `recipient` the address that failed; the original's headers carry
 * `messageId` when given.
 */
export function dsnReport(to: string, recipient: string, messageId?: string): string {
  return [
    'From: Mail Delivery System <mailer-daemon@remote.example>',
    `To: ${to}`,
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="B"',
    '',
    '--B',
    'Content-Type: text/plain',
    '',
    'The mailbox does not exist.',
    '--B',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.remote.example',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    'Action: failed',
    'Status: 5.1.1',
    'Diagnostic-Code: smtp; 550 5.1.1 No such user',
    '',
    ...(messageId === undefined ? [] : ['--B', 'Content-Type: text/rfc822-headers', '', `Message-ID: ${messageId}`, 'Subject: Quarterly numbers', '']),
    '--B--',
    '',
  ].join('\r\n');
}

/**
 * An abuse feedback report (ARF, RFC 5965) to `feedbackAddress`: the report fields given, and the
 * original message's headers quoted as `text/rfc822-headers`.
 */
export function arfReport(feedbackAddress: string, report: { originalMailFrom?: string; originalRcptTo?: string }, quotedHeaders: string[]): string {
  return [
    'From: Feedback Loop <fbl@remote.example>',
    `To: ${feedbackAddress}`,
    'Subject: Abuse report',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="F"',
    '',
    '--F',
    'Content-Type: text/plain',
    '',
    'A recipient marked this message as spam.',
    '--F',
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'User-Agent: fbl/1.0',
    'Version: 1',
    ...(report.originalMailFrom ? [`Original-Mail-From: <${report.originalMailFrom}>`] : []),
    ...(report.originalRcptTo ? [`Original-Rcpt-To: <${report.originalRcptTo}>`] : []),
    '',
    '--F',
    'Content-Type: text/rfc822-headers',
    '',
    ...quotedHeaders,
    '',
    '--F--',
    '',
  ].join('\r\n');
}
