/**
 * One configured edge, checked as a mail operator would (docs/doctor.md): its API answers, and
 * accepts the home's token; when it is served over HTTPS, how many days its certificate has left.
 * Self-contained per edge, so a home with several edges checks each with the same function.
 * The token is sent to the edge only, never put in a detail.
 */
import tls from 'node:tls';
import { EdgeClient, EdgeUnavailable } from '../inbound/edge-client.js';
import { CERTIFICATE_PROBE_MS, CERTIFICATE_WARN_DAYS, CERTIFICATE_WARN_FRACTION, EDGE_PROBE_MS } from './limits.js';
import type { DoctorCheck } from './schemas.js';

export interface ConfiguredEdge {
  url: string;
  token: string;
  /** The built-in edge of `svc serve --local-edge`, run in this process. */
  builtIn: boolean;
}

/** The validity of a certificate, as read from the TLS handshake. */
export interface CertificateDates {
  notBefore: Date;
  notAfter: Date;
}

const DAY_MS = 86_400_000;
const daysLeftText = (days: number) => `${days} day${days === 1 ? '' : 's'} left`;
const RENEW = "Renew it: with `svc edge --acme`, check the edge's log for edge.certificate_* events and that port 80 reaches it (docs/acme.md); otherwise install a new certificate and restart the edge.";

/**
 * How a certificate stands at `now`: expired fails; fewer than CERTIFICATE_WARN_DAYS days or less
 * than CERTIFICATE_WARN_FRACTION of its lifetime left warns (renewal is due at a third left, so an
 * edge past that is not renewing).
 */
export function certificateStanding(dates: CertificateDates, now = Date.now()): { status: 'pass' | 'warn' | 'fail'; daysLeft: number } {
  const left = dates.notAfter.getTime() - now;
  const daysLeft = Math.floor(left / DAY_MS);
  if (left <= 0) return { status: 'fail', daysLeft };
  const lifetime = dates.notAfter.getTime() - dates.notBefore.getTime();
  if (daysLeft < CERTIFICATE_WARN_DAYS || left < lifetime * CERTIFICATE_WARN_FRACTION) return { status: 'warn', daysLeft };
  return { status: 'pass', daysLeft };
}

/** The certificate the edge's HTTPS port presents (not verified here: the API probe verifies it), or null when none could be read in time. */
export function readCertificate(url: URL, timeoutMs = CERTIFICATE_PROBE_MS): Promise<CertificateDates | null> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    let done = false;
    const finish = (value: CertificateDates | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const socket = tls.connect({ host, port: Number(url.port || 443), servername: /^[\d.:]+$/.test(host) ? undefined : host, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }, () => {
      const cert = socket.getPeerCertificate();
      const notBefore = cert?.valid_from ? new Date(cert.valid_from) : null;
      const notAfter = cert?.valid_to ? new Date(cert.valid_to) : null;
      finish(notBefore && notAfter && !Number.isNaN(notBefore.getTime()) && !Number.isNaN(notAfter.getTime()) ? { notBefore, notAfter } : null);
    });
    socket.on('error', () => finish(null));
    const timer = setTimeout(() => finish(null), timeoutMs);
  });
}

/** The check's id: `edge`, or `edge:<host>` when there are several. */
export const edgeCheckId = (edge: ConfiguredEdge, several: boolean) => (several ? `edge:${new URL(edge.url).host}` : 'edge');

export async function edgeCheck(edge: ConfiguredEdge, id = 'edge'): Promise<DoctorCheck> {
  const title = edge.builtIn ? 'Edge (built-in)' : `Edge ${new URL(edge.url).host}`;
  const check = (status: DoctorCheck['status'], detail: string, fix: string | null, extra: Partial<DoctorCheck> = {}): DoctorCheck => ({ id, title, status, detail, fix, ...extra });
  const url = new URL(edge.url);
  const https = url.protocol === 'https:';
  const [answer, certificate] = await Promise.all([
    new EdgeClient(edge.url, edge.token).probe(EDGE_PROBE_MS).then(
      () => null,
      (err: unknown) => (err instanceof EdgeUnavailable ? err : new EdgeUnavailable('edge probe failed')),
    ),
    https ? readCertificate(url) : Promise.resolve(null),
  ]);
  const repair = edge.builtIn
    ? 'Restart svc (`svc serve --local-edge`, or `svc service restart`); the built-in edge runs inside it.'
    : `Check that \`svc edge\` runs on the edge host and that ${url.host} is reachable from this machine; if the edge moved, run \`svc transport set --edge-url URL --edge-token-file FILE\`.`;
  if (answer) {
    if (answer.status === 401 || answer.status === 403) {
      return check('fail', `The edge at ${edge.url} answers but refuses this home's API token (${answer.status}).`, 'Pair again with the token `svc edge` printed: `svc transport set --edge-url URL --edge-token-file FILE`.');
    }
    if (answer.status === null) {
      // An expired certificate fails the API's TLS handshake: name the cause, not the symptom.
      const standing = certificate ? certificateStanding(certificate) : null;
      if (certificate && standing?.status === 'fail') {
        return check('fail', `The edge at ${edge.url} cannot be reached over TLS: its certificate expired ${certificate.notAfter.toISOString()}.`, RENEW, { days_left: standing.daysLeft });
      }
      if (certificate && standing) {
        return check(
          'fail',
          `The edge at ${edge.url} presents a TLS certificate (${daysLeftText(standing.daysLeft)}), but its API did not answer over a verified connection within ${EDGE_PROBE_MS / 1000} s: a certificate this machine does not trust or for another name, or an API that hangs.`,
          `Give the edge a certificate for ${url.hostname} from a public CA (\`svc edge --acme\`, docs/acme.md), or trust its CA here (NODE_EXTRA_CA_CERTS); then check again.`,
          { days_left: standing.daysLeft },
        );
      }
      return check('fail', `Nothing answered at ${edge.url} within ${EDGE_PROBE_MS / 1000} s.`, repair);
    }
    return check('fail', `The edge at ${edge.url} answered ${answer.status} instead of listing its buffer.`, repair);
  }
  const reachable = `The edge at ${edge.url} answers and accepts this home's token.`;
  if (!https) return check('pass', `${reachable}${edge.builtIn ? ' It runs in this process on loopback, without TLS.' : ' It is reached over plain HTTP on loopback (an SSH tunnel or a local edge), so it has no certificate to check.'}`, null);
  if (!certificate) return check('warn', `${reachable} Its TLS certificate could not be read.`, 'Check the edge\'s certificate with `svc edge` on the edge host (docs/acme.md).');
  const standing = certificateStanding(certificate);
  const expiry = `Its TLS certificate expires ${certificate.notAfter.toISOString()} (${daysLeftText(standing.daysLeft)}).`;
  if (standing.status === 'fail') return check('fail', `${reachable} Its TLS certificate expired ${certificate.notAfter.toISOString()}.`, RENEW, { days_left: standing.daysLeft });
  if (standing.status === 'warn') return check('warn', `${reachable} ${expiry} It should have been renewed by now.`, RENEW, { days_left: standing.daysLeft });
  return check('pass', `${reachable} ${expiry}`, null, { days_left: standing.daysLeft });
}
