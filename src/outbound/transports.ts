/**
 * Handing a composed message to the provider (ARCHITECTURE §6): the paired edges' relay
 * (`POST /outbound` through the one edge client, src/inbound/edge-client.ts; idempotent on the
 * message's ref, so a repeat never sends twice, and failing over between edges only when that
 * cannot send twice) or an SMTP
 * smart host. Each answers one `Handover`:
 *   accepted  — the provider took it (→ `sent`);
 *   rejected  — a permanent 5xx at submission (→ `rejected`, `provider_rejected`);
 *   retry     — nothing was handed over (connection, auth, 4xx): safe to try again;
 *   unknown   — the message was handed over but the answer was lost (→ ask the edge, or `send_unknown`).
 */
import { Readable } from 'node:stream';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { Db } from '../db/open.js';
import type { EdgeSettings, SmtpSettings } from '../mail/transport.js';
import { EdgeClient, EdgeUnavailable, NOT_RELAYING, edgeErrorCode, type EdgeOutboundStatus } from '../inbound/edge-client.js';
import { edgesHealth, recordEdgeFailure, recordEdgeSuccess } from '../mail/edge-health.js';
import { forgetHandover, handoverEdges, recordHandover } from './edge-handovers.js';

export interface OutboundJob {
  ref: string;
  mailFrom: string;
  recipients: string[];
  raw: Uint8Array;
}

export type Handover =
  | { kind: 'accepted'; recipients: string[] }
  | { kind: 'rejected'; code: number | null }
  | { kind: 'retry'; error: string }
  | { kind: 'unknown'; error: string };

export interface Transport {
  readonly name: 'edge' | 'smtp';
  send(job: OutboundJob): Promise<Handover>;
}

// ---- edge relay ----

/**
 * The relay of the paired edges (docs/outbound.md "Several edges"): a job goes to the first
 * healthy edge in list order (then to the others in list order), each idempotent on the ref. It
 * moves on to the next edge only when the one tried certainly took nothing (no connection, or
 * refused unread); any other failure may have left the job there, so it is retried later and,
 * before it goes anywhere else, every edge it may have reached is asked (src/outbound/edge-handovers.ts).
 */
export class EdgeRelay implements Transport {
  readonly name = 'edge' as const;
  constructor(
    private readonly db: Db,
    private readonly edges: readonly EdgeSettings[],
  ) {}

  #client(url: string): EdgeClient {
    const edge = this.edges.find((e) => e.url === url)!;
    return new EdgeClient(edge.url, edge.token);
  }

  /** Healthy edges first, each group in list order. */
  #order(): EdgeSettings[] {
    const healthy = new Set(edgesHealth(this.db, this.edges.map((e) => e.url)).flatMap(({ url, health }) => (health.healthy ? [url] : [])));
    return [...this.edges.filter((e) => healthy.has(e.url)), ...this.edges.filter((e) => !healthy.has(e.url))];
  }

  async send(job: OutboundJob): Promise<Handover> {
    const { db } = this;
    const paired = new Set(this.edges.map((e) => e.url));
    // An edge that is no longer paired cannot be asked; the owner removed it.
    const mayHold = new Set(handoverEdges(db, job.ref).filter((url) => paired.has(url)));
    let lastError = 'edge_unreachable';
    for (const edge of this.#order()) {
      // Never hand the job to this edge while another may still send it: ask that one first.
      for (const other of [...mayHold].filter((url) => url !== edge.url)) {
        let known: EdgeOutboundStatus | null;
        try {
          known = await this.#client(other).outboundStatus(job.ref);
        } catch (err) {
          recordEdgeFailure(db, other, edgeErrorCode(err));
          return { kind: 'retry', error: edgeErrorCode(err) };
        }
        if (known) return { kind: 'accepted', recipients: job.recipients };
        forgetHandover(db, job.ref, other);
        mayHold.delete(other);
      }
      const fresh = !mayHold.has(edge.url);
      recordHandover(db, job.ref, edge.url);
      mayHold.add(edge.url);
      try {
        const answer = await this.#client(edge.url).sendOutbound({ ref: job.ref, mail_from: job.mailFrom, recipients: job.recipients, raw: Buffer.from(job.raw).toString('base64') });
        recordEdgeSuccess(db, edge.url);
        return answer.accepted ? { kind: 'accepted', recipients: job.recipients } : { kind: 'rejected', code: answer.status };
      } catch (err) {
        if (err instanceof EdgeUnavailable && err.status === NOT_RELAYING) {
          // A receive-only edge is not unhealthy (its pulls work); it is skipped for sending.
          lastError = 'edge_does_not_relay';
          forgetHandover(db, job.ref, edge.url);
          mayHold.delete(edge.url);
          continue;
        }
        lastError = edgeErrorCode(err);
        recordEdgeFailure(db, edge.url, lastError);
        // The edge certainly took nothing this time: try the next one now.
        if (err instanceof EdgeUnavailable && err.notSent) {
          if (fresh) {
            forgetHandover(db, job.ref, edge.url);
            mayHold.delete(edge.url);
          }
          continue;
        }
        // It may or may not have stored it; the ref makes a repeat there harmless, and no other
        // edge gets it before this one says it does not have it.
        return { kind: 'retry', error: lastError };
      }
    }
    return { kind: 'retry', error: lastError };
  }

  /**
   * What the edges know of a ref: the edges it may have reached are asked (every paired edge when
   * none is recorded); null when none has it; throws when one that may have it cannot be asked.
   */
  async status(ref: string): Promise<EdgeOutboundStatus | null> {
    const paired = this.edges.map((e) => e.url);
    const recorded = handoverEdges(this.db, ref).filter((url) => paired.includes(url));
    for (const url of recorded.length > 0 ? recorded : paired) {
      const known = await this.#client(url).outboundStatus(ref);
      if (known) return known;
    }
    return null;
  }
}

// ---- SMTP smart host ----

interface SmtpError extends Error {
  code?: string;
  responseCode?: number;
}

/** A silent smart host is given up on after this long; the longest wait is the message's DATA over a slow uplink. */
const SMTP_SOCKET_TIMEOUT_MS = 60_000;
/** Idle connections are kept this long for the next message (a greeting can cost 100 ms or more). */
const IDLE_CLOSE_MS = 10_000;
const MAX_IDLE = 16;

export class SmtpSmartHost implements Transport {
  readonly name = 'smtp' as const;
  readonly #idle: { connection: SMTPConnection; timer: NodeJS.Timeout }[] = [];

  constructor(
    private readonly smtp: SmtpSettings,
    private readonly hostname: string,
  ) {}

  /** Closes the idle connections. */
  close(): void {
    for (const { connection, timer } of this.#idle.splice(0)) {
      clearTimeout(timer);
      connection.quit();
    }
  }

  #park(connection: SMTPConnection): void {
    if (this.#idle.length >= MAX_IDLE) return connection.quit();
    const entry = {
      connection,
      timer: setTimeout(() => {
        this.#idle.splice(this.#idle.indexOf(entry), 1);
        connection.quit();
      }, IDLE_CLOSE_MS).unref(),
    };
    this.#idle.push(entry);
  }

  /** A ready connection: an idle one after a successful RSET, else a new one (connected and logged in). */
  async #connection(): Promise<SMTPConnection> {
    while (this.#idle.length > 0) {
      const { connection, timer } = this.#idle.pop()!;
      clearTimeout(timer);
      const ok = await new Promise<boolean>((resolve) => {
        connection.once('error', () => resolve(false));
        try {
          connection.reset((err) => resolve(!err));
        } catch {
          resolve(false);
        }
      });
      connection.removeAllListeners('error');
      if (ok) return connection;
      connection.close();
    }
    const { smtp } = this;
    const connection = new SMTPConnection({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure ?? false,
      name: this.hostname,
      connectionTimeout: 30_000,
      greetingTimeout: 30_000,
      socketTimeout: SMTP_SOCKET_TIMEOUT_MS,
    });
    await new Promise<void>((resolve, reject) => {
      connection.once('error', reject);
      connection.connect(() => {
        if (!smtp.username) return resolve();
        connection.login({ user: smtp.username, pass: smtp.password ?? '' }, (err) => (err ? reject(err) : resolve()));
      });
    }).finally(() => connection.removeAllListeners('error'));
    return connection;
  }

  async send(job: OutboundJob): Promise<Handover> {
    let streamed = false;
    const classify = (err: SmtpError): Handover => {
      const code = err.responseCode ?? null;
      // Authentication is the owner's configuration, not a verdict on the message: retry, then fail.
      if (err.code === 'EAUTH') return { kind: 'retry', error: 'smtp_auth_failed' };
      if (code !== null && code >= 500) return { kind: 'rejected', code };
      if (code !== null && code >= 400) return { kind: 'retry', error: `smtp_${code}` };
      // No answer: before the data was through nothing was handed over; after it, we cannot know.
      return streamed ? { kind: 'unknown', error: err.code ?? 'smtp_no_answer' } : { kind: 'retry', error: err.code ?? 'smtp_error' };
    };
    let connection: SMTPConnection;
    try {
      connection = await this.#connection();
    } catch (err) {
      return classify(err as SmtpError);
    }
    return new Promise((resolve) => {
      let settled = false;
      const done = (h: Handover, reusable: boolean) => {
        if (settled) return;
        settled = true;
        connection.removeAllListeners('error');
        connection.removeAllListeners('end');
        if (reusable) this.#park(connection);
        else connection.close();
        resolve(h);
      };
      connection.on('error', (err: SmtpError) => done(classify(err), false));
      connection.on('end', () => done(streamed ? { kind: 'unknown', error: 'smtp_closed' } : { kind: 'retry', error: 'smtp_closed' }, false));
      const body = Readable.from(
        (async function* () {
          yield Buffer.from(job.raw);
          streamed = true;
        })(),
      );
      connection.send({ from: job.mailFrom, to: job.recipients }, body, (err, info) => {
        if (err) return done(classify(err as SmtpError), (err as SmtpError).responseCode !== undefined);
        done({ kind: 'accepted', recipients: (info.accepted as string[] | undefined) ?? job.recipients }, true);
      });
    });
  }
}
