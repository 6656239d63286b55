/**
 * Whether outbound mail can leave (docs/doctor.md): with an SMTP smart host, svc connects and logs
 * in as the outbox would (then quits without sending); through an edge, the edge's authenticated
 * API must answer (its own check says so); with neither, sending answers service_unavailable.
 * The password is sent to the smart host only and scrubbed from anything shown.
 */
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { SmtpSettings } from '../mail/transport.js';
import { SMTP_STEP_MS } from './limits.js';
import type { DoctorCheck } from './schemas.js';

const ID = 'outbound';
const TITLE = 'Outbound transport';
const check = (status: DoctorCheck['status'], detail: string, fix: string | null): DoctorCheck => ({ id: ID, title: TITLE, status, detail, fix });

interface SmtpError extends Error {
  code?: string;
  responseCode?: number;
  response?: string;
}

/** A smart host's answer, shortened and without the password or anything that is not printable. */
function shownAnswer(err: SmtpError, password: string | undefined): string {
  let text = (err.response ?? err.message ?? '').replace(/[^\x20-\x7e]+/g, ' ').trim().slice(0, 160);
  if (password) text = text.split(password).join('***');
  return text;
}

/** Connects to the smart host and logs in (when it has a user name), each step bounded by SMTP_STEP_MS. */
export async function smartHostLoginCheck(smtp: SmtpSettings, hostname: string): Promise<DoctorCheck> {
  const where = `${smtp.host}:${smtp.port}`;
  const connection = new SMTPConnection({
    host: smtp.host,
    port: smtp.port,
    secure: smtp.secure ?? false,
    name: hostname,
    connectionTimeout: SMTP_STEP_MS,
    greetingTimeout: SMTP_STEP_MS,
    socketTimeout: SMTP_STEP_MS,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      connection.once('error', reject);
      connection.connect(() => {
        if (!smtp.username) return resolve();
        connection.login({ user: smtp.username, pass: smtp.password ?? '' }, (err) => (err ? reject(err) : resolve()));
      });
    });
  } catch (err) {
    const e = err as SmtpError;
    const fix = 'Check the smart host settings and credentials, then run `svc transport set --smtp-host HOST --smtp-port PORT --smtp-username USER --smtp-password-file FILE` (`svc transport --help`).';
    if (e.code === 'EAUTH') return check('fail', `The smart host ${where} refused the login of ${smtp.username}: ${shownAnswer(e, smtp.password)}`, fix);
    if (e.code === 'ETIMEDOUT' || e.code === 'ECONNECTION' || e.code === 'ESOCKET' || e.code === 'EDNS') {
      return check('fail', `The smart host ${where} could not be reached or did not answer in time (${e.code}).`, `Check that ${where} is reachable from this machine (firewall, port, TLS with --smtp-secure), or fix it with \`svc transport set\`.`);
    }
    return check('fail', `The smart host ${where} failed the connection (${e.code ?? 'error'}): ${shownAnswer(e, smtp.password)}`, fix);
  } finally {
    connection.removeAllListeners('error');
    connection.on('error', () => {});
    connection.close();
  }
  return check('pass', smtp.username ? `The smart host ${where} accepted the login of ${smtp.username}.` : `The smart host ${where} answers (no login configured).`, null);
}

/** Outbound through the edge relay: it works when the edge's API answers with the token. */
export function edgeOutboundCheck(edgeUrl: string, edge: DoctorCheck): DoctorCheck {
  if (edge.status === 'fail') return check('fail', `Outbound mail goes through the edge relay at ${edgeUrl}, which does not answer as it should: ${edge.detail}`, edge.fix);
  return check('pass', `Outbound mail goes through the edge relay at ${edgeUrl}, which answers with this home's token.`, null);
}

export function noTransportCheck(): DoctorCheck {
  return check('fail', 'No transport is configured: sending answers service_unavailable and no mail arrives.', 'Pair with an edge: `svc transport set --edge-url URL --edge-token-file FILE` (`svc edge` prints both), add an SMTP smart host with `svc transport set --smtp-host HOST …`, or start with `svc serve --local-edge` to try svc locally.');
}
