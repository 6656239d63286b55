/**
 * Each domain as a mail operator checks it (docs/doctor.md): its planned records (MX, SPF, DKIM,
 * DMARC, MTA-STS, TLS-RPT, PTR as the plan has them) looked up in DNS now, and the last result of
 * its self-test (the message svc sends from svc-selftest@ to itself through the edge when a domain
 * is verified). The self-test is not sent from here: it is mail, and `svc domains verify` sends it.
 */
import type { RecordCheck } from '../domains/checks.js';
import type { DomainRow } from '../domains/store.js';
import type { DoctorCheck } from './schemas.js';

type Status = DoctorCheck['status'];

/** The records check of one domain, from a fresh DNS lookup of its plan. */
export function domainRecordsCheck(row: Pick<DomainRow, 'domain' | 'status'>, checks: RecordCheck[]): DoctorCheck {
  const domain = row.domain;
  const check = (status: Status, detail: string, fix: string | null, extra: Partial<DoctorCheck> = {}): DoctorCheck => ({ id: `domain:${domain}`, title: `DNS of ${domain}`, status, detail, fix, ...extra });
  const failing = checks.filter((c) => c.status === 'invalid');
  const kinds = [...new Set(checks.map((c) => c.type))].join(', ');
  if (failing.length === 0) {
    if (row.status === 'pending') {
      return check('warn', `All ${checks.length} planned records (${kinds}) are published, but ${domain} is not applied yet, so the edge does not take its mail.`, `Run \`svc domains apply ${domain}\`.`);
    }
    return check('pass', `All ${checks.length} planned records (${kinds}) are published as planned.`, null);
  }
  const names = failing.map((c) => `${c.type} ${c.name}`);
  return check(
    'fail',
    `${failing.length} of ${checks.length} planned records are not published as planned: ${names.join('; ')}.`,
    `Publish the records of \`svc domains plan ${domain}\` (or import \`svc domains zone-file ${domain}\`) at the DNS provider of ${domain}, or run \`svc domains apply ${domain}\` with a DNS provider connected; then \`svc domains verify ${domain}\`. Each record's reason says what is wrong.`,
    { failing_records: failing.map((c) => ({ type: c.type, name: c.name, reason: c.reason ?? 'not as planned' })) },
  );
}

/** A DNS lookup of the plan that did not finish within the doctor's bound. */
export function domainRecordsUnanswered(domain: string, seconds: number): DoctorCheck {
  return { id: `domain:${domain}`, title: `DNS of ${domain}`, status: 'fail', detail: `The DNS lookups of ${domain}'s records did not finish within ${seconds} s.`, fix: 'Check that the name servers svc asks (`svc serve --dns`, else the system\'s) answer, then check again.' };
}

/** The last self-test of one domain, as its row records it. */
export function selftestCheck(row: Pick<DomainRow, 'domain' | 'status' | 'reason' | 'selftest_sent_at' | 'selftest_received_at'>): DoctorCheck {
  const domain = row.domain;
  const check = (status: Status, detail: string, fix: string | null): DoctorCheck => ({ id: `selftest:${domain}`, title: `Self-test of ${domain}`, status, detail, fix });
  switch (row.status) {
    case 'verified':
      return check('pass', row.selftest_received_at ? `The self-test message came back through the edge at ${row.selftest_received_at}; ${domain} is verified.` : `${domain} is verified.`, null);
    case 'failed':
      return check('fail', `The last verification of ${domain} failed: ${row.reason ?? 'no reason was recorded'}`, `Fix what the reason names, then run \`svc domains verify ${domain}\`.`);
    case 'verifying':
      return check('warn', row.selftest_sent_at ? `The self-test message was sent at ${row.selftest_sent_at} and has not come back yet.` : `${domain} is being verified: its records are checked before the self-test is sent.`, `Wait a minute and check again; \`svc domains show ${domain}\` shows the progress.`);
    case 'provisioning':
      return check('warn', `${domain} is being routed at the edge; the self-test follows.`, `Wait a minute and check again; \`svc domains show ${domain}\` shows the progress.`);
    default:
      return check('warn', `${domain} has not been applied, so its self-test has never run.`, `Run \`svc domains apply ${domain}\` once its records are published.`);
  }
}
