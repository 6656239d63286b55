/**
 * Delivery reports: the relay's outcomes (`delivered`, `deferred`, `bounced`) and the reports it
 * reads from inbound DSNs and ARF feedback (`bounced`, `deferred`, `complained`), in one durable,
 * ordered log the home reads with `GET /events?after=<id>`.
 *
 * On disk: `outbound/reports/<first id>.jsonl`, one JSON report per line, appended and fsynced
 * before the append resolves (concurrent appends share one write and one fsync). A segment is
 * closed after a day; segments whose newest report is older than the retention are removed,
 * except the newest segment, so ids keep increasing across restarts however quiet the edge was.
 *
 * Crash states: a torn last line (a write that never finished its fsync, so never shown) is cut
 * off at start-up; an unreadable line elsewhere is skipped.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { ensurePrivateDir, fsyncDirectoryAsync, PRIVATE_FILE_MODE } from './durable-files.js';
import { MAX_REPLY_CHARS, OUTBOUND_RETENTION_MS, REPORT_SEGMENT_MS } from './limits.js';

export const ReportType = Type.Union([Type.Literal('delivered'), Type.Literal('deferred'), Type.Literal('bounced'), Type.Literal('complained')]);
export type ReportType = Static<typeof ReportType>;

/** One report as `GET /events` shows it. */
export const DeliveryReport = Type.Object({
  /** The cursor of this report: opaque to the home, increasing. */
  id: Type.String(),
  ref: Type.String(),
  type: ReportType,
  recipient: Type.String(),
  /** RFC 3339 UTC with milliseconds. */
  at: Type.String(),
  /** The SMTP reply code (remote, or from the DSN's Diagnostic-Code / Status). */
  code: Type.Optional(Type.Integer()),
  /** The remote SMTP reply or the DSN's diagnostic, at most 500 characters. */
  message: Type.Optional(Type.String()),
});
export type DeliveryReport = Static<typeof DeliveryReport>;

/** A report before it has an id and a time. */
export type NewReport = Omit<DeliveryReport, 'id' | 'at'> & { at?: string };

/** Ids are zero-padded decimal sequence numbers, so text order is log order. */
const ID_DIGITS = 16;
export const REPORT_ID_PATTERN = `^[0-9]{${ID_DIGITS}}$`;
const SEGMENT_SUFFIX = '.jsonl';

function formatId(seq: number): string {
  return String(seq).padStart(ID_DIGITS, '0');
}

interface Segment {
  file: string;
  firstSeq: number;
  /** When its first report was written (ms), for rotation. */
  startedAt: number;
  /** When its newest report was written (ms), for pruning. */
  lastAt: number;
}

interface PendingAppend {
  reports: DeliveryReport[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface ReportPage {
  events: DeliveryReport[];
  next: string;
}

export class ReportLog {
  readonly dir: string;
  private readonly reports: DeliveryReport[] = [];
  private readonly segments: Segment[] = [];
  private nextSeq = 1;
  private pending: PendingAppend[] = [];
  private flushing: Promise<void> | null = null;
  /** After a failed write the segment may end in a torn line; the next write starts a new one. */
  private tornTail = false;

  constructor(
    outboundDir: string,
    private readonly now: () => number = Date.now,
  ) {
    this.dir = path.join(outboundDir, 'reports');
  }

  /** Loads every segment (reports of the last days are small); cuts a torn last line. */
  open(): void {
    ensurePrivateDir(this.dir);
    const names = fs.readdirSync(this.dir).filter((n) => n.endsWith(SEGMENT_SUFFIX) && /^\d+$/.test(n.slice(0, -SEGMENT_SUFFIX.length))).sort();
    for (const name of names) {
      const file = path.join(this.dir, name);
      const text = fs.readFileSync(file, 'utf8');
      const complete = text.endsWith('\n') ? text : text.slice(0, text.lastIndexOf('\n') + 1);
      if (complete.length !== text.length) fs.truncateSync(file, Buffer.byteLength(complete));
      const segment: Segment = { file, firstSeq: Number(name.slice(0, -SEGMENT_SUFFIX.length)), startedAt: Infinity, lastAt: 0 };
      for (const line of complete.split('\n')) {
        if (line === '') continue;
        const report = parseLine(line);
        if (!report) continue;
        const seq = Number(report.id);
        if (seq < this.nextSeq) continue;
        this.reports.push(report);
        this.nextSeq = seq + 1;
        const at = Date.parse(report.at);
        segment.startedAt = Math.min(segment.startedAt, at);
        segment.lastAt = Math.max(segment.lastAt, at);
      }
      // The newest segment fixes the next id even when it holds nothing readable.
      this.nextSeq = Math.max(this.nextSeq, segment.firstSeq);
      if (segment.startedAt === Infinity) segment.startedAt = this.now();
      this.segments.push(segment);
    }
  }

  /** Appends reports durably; resolves once they are fsynced and visible to `page`. */
  append(reports: NewReport[]): Promise<DeliveryReport[]> {
    if (reports.length === 0) return Promise.resolve([]);
    return new Promise<DeliveryReport[]>((resolve, reject) => {
      const at = new Date(this.now()).toISOString();
      const full = reports.map((r) => cleanReport({ ...r, id: '', at: r.at ?? at }));
      this.pending.push({ reports: full, resolve: () => resolve(full), reject });
      this.flushing ??= this.flush();
    });
  }

  /** Reports strictly after `after` (an id, or null from the beginning), oldest first. */
  page(after: string | null, limit: number): ReportPage {
    const start = after === null ? 0 : firstAfter(this.reports, after);
    const events = this.reports.slice(start, start + limit);
    return { events, next: events.at(-1)?.id ?? after ?? '' };
  }

  /** Waits for appends already accepted (used on stop). */
  async settle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /** Removes segments whose newest report is past the retention (never the newest segment). */
  async prune(): Promise<void> {
    const cutoff = this.now() - OUTBOUND_RETENTION_MS;
    while (this.segments.length > 1 && this.segments[0].lastAt < cutoff) {
      const segment = this.segments.shift()!;
      const nextFirst = this.segments[0].firstSeq;
      await fsp.rm(segment.file, { force: true });
      const keep = this.reports.findIndex((r) => Number(r.id) >= nextFirst);
      this.reports.splice(0, keep === -1 ? this.reports.length : keep);
    }
  }

  private async flush(): Promise<void> {
    try {
      while (this.pending.length > 0) await this.writeGroup();
    } finally {
      this.flushing = null;
    }
  }

  /** Numbers a group, writes it with one append and one fsync, then makes it visible. */
  private async writeGroup(): Promise<void> {
    const group = this.pending;
    this.pending = [];
    const firstSeq = this.nextSeq;
    let seq = firstSeq;
    for (const entry of group) for (const report of entry.reports) report.id = formatId(seq++);
    const now = this.now();
    let segment = this.segments.at(-1);
    const rotate = !segment || this.tornTail || now - segment.startedAt >= REPORT_SEGMENT_MS;
    if (rotate) segment = { file: path.join(this.dir, formatId(firstSeq) + SEGMENT_SUFFIX), firstSeq, startedAt: now, lastAt: now };
    const text = group.flatMap((e) => e.reports.map((r) => JSON.stringify(r) + '\n')).join('');
    let handle: fsp.FileHandle | null = null;
    try {
      handle = await fsp.open(segment!.file, 'a', PRIVATE_FILE_MODE);
      await handle.appendFile(text);
      await handle.sync();
      await handle.close();
      handle = null;
      if (rotate) await fsyncDirectoryAsync(this.dir);
    } catch (err) {
      await handle?.close().catch(() => undefined);
      // The ids are not reused: a partly written line is cut at the next start, a whole one is kept.
      this.nextSeq = seq;
      this.tornTail = true;
      for (const entry of group) entry.reject(err);
      return;
    }
    this.nextSeq = seq;
    this.tornTail = false;
    if (rotate) this.segments.push(segment!);
    segment!.lastAt = now;
    for (const entry of group) {
      this.reports.push(...entry.reports);
      entry.resolve();
    }
  }
}

/** Reply texts are cut to the documented length and stripped of control characters. */
export function replyText(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]+/g, ' ').replace(/\r?\n/g, ' ').trim().slice(0, MAX_REPLY_CHARS);
}

function cleanReport(report: DeliveryReport): DeliveryReport {
  const out: DeliveryReport = { id: report.id, ref: report.ref, type: report.type, recipient: report.recipient, at: report.at };
  if (report.code !== undefined) out.code = report.code;
  if (report.message !== undefined) out.message = replyText(report.message);
  return out;
}

function parseLine(line: string): DeliveryReport | null {
  try {
    const parsed: unknown = JSON.parse(line);
    return Value.Check(DeliveryReport, parsed) && new RegExp(REPORT_ID_PATTERN).test(parsed.id) ? parsed : null;
  } catch {
    return null;
  }
}

function firstAfter(reports: DeliveryReport[], after: string): number {
  let lo = 0;
  let hi = reports.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (reports[mid].id <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
