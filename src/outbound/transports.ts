/**
 * Handing a composed message to the provider (ARCHITECTURE §6): the paired edge's relay
 * (`POST /outbound` through the one edge client, src/inbound/edge-client.ts; idempotent on the
 * message's ref, so a repeat never sends twice) or an SMTP
 * smart host. Each answers one `Handover`:
 *   accepted  — the provider took it (→ `sent`);
 *   rejected  — a permanent 5xx at submission (→ `rejected`, `provider_rejected`);
 *   retry     — nothing was handed over (connection, auth, 4xx): safe to try again;
 *   unknown   — the message was handed over but the answer was lost (→ ask the edge, or `send_unknown`).
 */
import { Readable } from 'node:stream';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { EdgeSettings, SmtpSettings } from '../mail/transport.js';
import { EdgeClient, EdgeUnavailable, type EdgeOutboundStatus } from '../inbound/edge-client.js';

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


export class EdgeRelay implements Transport {
  readonly name = 'edge' as const;
  readonly #edge: EdgeClient;
  constructor(edge: EdgeSettings) {
    this.#edge = new EdgeClient(edge.url, edge.token);
  }

  async send(job: OutboundJob): Promise<Handover> {
    try {
      const answer = await this.#edge.sendOutbound({ ref: job.ref, mail_from: job.mailFrom, recipients: job.recipients, raw: Buffer.from(job.raw).toString('base64') });
      return answer.accepted ? { kind: 'accepted', recipients: job.recipients } : { kind: 'rejected', code: answer.status };
    } catch (err) {
      // The edge may or may not have stored it; the ref makes a repeat harmless.
      const status = err instanceof EdgeUnavailable ? err.status : null;
      return { kind: 'retry', error: status === null ? 'edge_unreachable' : `edge_status_${status}` };
    }
  }

  /** What the edge knows of a ref: its status, null when it never received it; throws when unreachable. */
  status(ref: string): Promise<EdgeOutboundStatus | null> {
    return this.#edge.outboundStatus(ref);
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
