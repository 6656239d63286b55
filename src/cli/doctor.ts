/**
 * `svc doctor`: the checks a mail operator makes (docs/doctor.md), from `GET /v0/owner/doctor`,
 * one line each with a mark, what was found and the fix. Exit 0 only when every check passed (or
 * did not apply), 1 when one warned or failed. When svc is not running, the checks that need only
 * the home (credential store, disk space) still run here, and the exit code is the one for a
 * service that is not running (10) or a home that cannot be used (6).
 */
import fs from 'node:fs';
import { CliError, EXIT } from './exit-codes.js';
import type { Group } from './commands.js';
import { ownerHome } from './owner-client.js';
import { cell, out, printJson } from './output.js';
import { doctorReport, type DoctorCheck, type DoctorReport } from '../doctor/schemas.js';

const MARK: Record<DoctorCheck['status'], string> = { pass: '✓', warn: '!', fail: '✗', skip: '–' };

function printReport(report: DoctorReport): void {
  const width = Math.max(...report.checks.map((c) => c.title.length));
  const lines: string[] = [];
  for (const c of report.checks) {
    lines.push(`${MARK[c.status]} ${cell(c.title).padEnd(width)}  ${cell(c.detail)}`);
    for (const r of c.failing_records ?? []) lines.push(`  ${' '.repeat(width)}    ${cell(`${r.type} ${r.name}: ${r.reason}`)}`);
    if (c.fix) lines.push(`  ${' '.repeat(width)}  fix: ${cell(c.fix)}`);
  }
  const attention = report.checks.filter((c) => c.status === 'warn' || c.status === 'fail').length;
  lines.push('', report.ok ? 'All checks pass.' : `${attention} ${attention === 1 ? 'check needs' : 'checks need'} attention.`);
  out(lines.join('\n'));
}

/** What can be checked without the service: the home's unlock and its disk, plus the service's own failure. */
async function localReport(home: string, down: CliError): Promise<DoctorReport> {
  // Loaded here only: the keyring binding is not needed when the service answers.
  const { credentialStoreCheck, diskSpaceCheck } = await import('../doctor/local-checks.js');
  const service: DoctorCheck = { id: 'service', title: 'Service', status: 'fail', detail: down.message, fix: down.fix ?? null };
  const checks = [service];
  if (fs.statSync(home, { throwIfNoEntry: false })?.isDirectory()) checks.push(credentialStoreCheck(home), await diskSpaceCheck(home));
  return doctorReport(checks);
}

export const group: Group = {
  name: 'doctor',
  summary: 'check what a mail operator checks: keys, edge, DNS, self-test, transport, disk, backup, loops, quarantine',
  actions: {
    '': {
      summary:
        'Check the home as a mail operator would: the credential store, the edge and its certificate, each domain\'s DNS records and self-test, the outbound login, disk space, the last backup, the loops and quarantine. One line per check with the fix. Exit 0 only when all pass; 1 when one warns or fails; 10 when svc is not running (the local checks still run). Owner only.',
      examples: ['svc doctor', 'svc doctor --json | jq \'.checks[] | select(.status != "pass")\''],
      async run(ctx) {
        let report: DoctorReport;
        try {
          const client = await ctx.client();
          report = await client.call<DoctorReport>('GET', '/v0/owner/doctor');
        } catch (err) {
          // Owner mode only: an agent's SVC_URL is another machine, whose home is not here.
          if (!(err instanceof CliError) || (err.code !== 'service_unavailable' && err.code !== 'action_required') || process.env.SVC_URL || process.env.SVC_API_KEY) throw err;
          const down = await localReport(ownerHome({ home: ctx.str('home'), flavor: ctx.str('flavor') }), err);
          if (ctx.json) printJson(down);
          else printReport(down);
          return err.exitCode;
        }
        if (ctx.json) printJson(report);
        else printReport(report);
        return report.ok ? EXIT.ok : EXIT.failure;
      },
    },
  },
};
