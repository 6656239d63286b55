/**
 * The content half of the outbound guard (src/mail/guard.ts, docs/guarded.md): pure, with no
 * database, so that the send path runs it in the CPU pool (workers/pool/tasks.ts `inspectGuard`)
 * and the request thread never scans half a megabyte of an agent's (or a stranger's forwarded)
 * text. Reads attachments as a client shows them (src/mail/shown-attachment.ts), runs the enabled
 * detectors of src/mail/outbound-guard.ts, and holds as `unchecked` whatever is longer than they
 * read (fail closed).
 */
import { GUARD_DETECTORS, inspectOutgoing, MAX_SCANNED_CHARS, type GuardDetector } from './outbound-guard.js';
import { attachmentView } from './shown-attachment.js';

/** A reason the guard held a send: which check (a detector, `new_recipients`, or `unchecked`: longer than the detectors read), and where and what, never the secret. */
export interface GuardFinding {
  detector: GuardDetector | 'new_recipients' | 'unchecked';
  detail: string;
}

/** What the content scan reads of one message: structured-cloneable, for the pool. */
export interface GuardContent {
  subject: string | null;
  text: string | null;
  html: string | null;
  attachments: { filename: string | null; contentType: string | null; content: Uint8Array }[];
  homeSecrets: string[];
  /** Header values, display names, file names. */
  other: { where: string; text: string }[];
  /** The content checks the owner left on. */
  enabled: GuardDetector[];
}

/** Bytes of an attachment decoded for the detectors: they read MAX_SCANNED_CHARS characters at most (UTF-16 takes two bytes a character, UTF-8 up to four). */
const MAX_DECODED_BYTES = MAX_SCANNED_CHARS * 4;

/**
 * An attachment as the detectors read it (src/mail/shown-attachment.ts): its text in its charset
 * and what a client shows of it, or null for a binary file. Text-like by its type (`text/*`,
 * `message/*`, `+xml`, RTF, JSON…) or name, or with no type worth trusting (octet-stream, none)
 * and a byte-order mark or no NUL byte in its first 4 KiB.
 */
export function attachmentText(a: { filename: string | null; contentType: string | null; content: Uint8Array }): { text: string; shown: string[]; truncated: boolean } | null {
  const view = attachmentView({ ...a, content: a.content.subarray(0, MAX_DECODED_BYTES) }, MAX_SCANNED_CHARS);
  return view.text === null ? null : { text: view.text, shown: view.shown, truncated: view.truncated };
}

/** The content findings of one message: the enabled detectors, then `unchecked` for what is longer than they read. */
export function inspectContent(c: GuardContent): GuardFinding[] {
  const enabled = new Set<GuardDetector>(GUARD_DETECTORS.filter((d) => c.enabled.includes(d)));
  if (enabled.size === 0) return [];
  const attachments: { filename: string | null; text: string; shown: string[] }[] = [];
  const unread: string[] = [];
  for (const a of c.attachments) {
    const read = attachmentText(a);
    if (read === null) continue;
    attachments.push({ filename: a.filename, ...read });
    const cut = a.content.byteLength > MAX_DECODED_BYTES || read.text.length > MAX_SCANNED_CHARS || read.truncated || read.shown.some((view) => view.length > MAX_SCANNED_CHARS);
    if (cut) unread.push(`attachment ${JSON.stringify((a.filename ?? 'unnamed').slice(0, 40))}`);
  }
  for (const [where, value] of [['the subject', c.subject], ['the text', c.text], ['the HTML', c.html]] as const) if (value !== null && value.length > MAX_SCANNED_CHARS) unread.push(where);
  const findings: GuardFinding[] = inspectOutgoing({ subject: c.subject, text: c.text, html: c.html, attachments, homeSecrets: c.homeSecrets, other: c.other }, enabled);
  // What the detectors do not read could hold anything: held rather than let out unread (fail closed).
  if (unread.length > 0) findings.push({ detector: 'unchecked', detail: `${unread.join(', ')} ${unread.length === 1 ? 'is' : 'are'} longer than the guard reads (${MAX_SCANNED_CHARS / 1024} KiB of text)` });
  return findings;
}
