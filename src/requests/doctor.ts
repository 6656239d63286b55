/**
 * `GET /v0/owner/doctor` (docs/doctor.md): every check a mail operator makes, run at once, each
 * bounded by CHECK_TIMEOUT_MS so a dead host or a peer that never answers cannot hold the answer.
 * Concurrent requests share one run. A check that throws reports that it could not run, never the
 * error's text (it could carry a host's answer or a path, never a secret, but keep it plain).
 */
import os from 'node:os';
import type { AppContext, HealthSources } from '../context.js';
import { readTransport, localEdgeToken } from '../mail/transport.js';
import { readLastBackup } from '../backup/service.js';
import { countQuarantine } from '../inbound/quarantine.js';
import { domainRowsIn, ROUTED_STATUSES, type DomainRow } from '../domains/store.js';
import { domainPlan } from '../domains/plan.js';
import { checkRecords, checkServers } from '../domains/checks.js';
import { CHECK_TIMEOUT_MS, DNS_LOOKUP_MS } from '../doctor/limits.js';
import { doctorReport, type DoctorCheck, type DoctorReport } from '../doctor/schemas.js';
import { credentialStoreCheck, diskSpaceCheck } from '../doctor/local-checks.js';
import { edgeCheck, edgeCheckId, type ConfiguredEdge } from '../doctor/edge-check.js';
import { edgeOutboundCheck, noTransportCheck, smartHostLoginCheck } from '../doctor/outbound-check.js';
import { domainRecordsCheck, domainRecordsUnanswered, selftestCheck } from '../doctor/domain-checks.js';
import { backupCheck, loopsCheck, quarantineCheck } from '../doctor/service-checks.js';

export type DoctorServices = Pick<AppContext, 'db'> & { health: HealthSources };

/** The edges this home uses: the paired one (the built-in edge of --local-edge counts). */
export function configuredEdges(svc: Pick<AppContext, 'db'>): ConfiguredEdge[] {
  const builtInToken = localEdgeToken(svc.db);
  return readTransport(svc.db).edges.map((edge) => ({ url: edge.url, token: edge.token, builtIn: builtInToken === edge.token }));
}

/** `work`, or `late` when it takes longer than CHECK_TIMEOUT_MS, or `broken` when it throws. */
async function bounded(work: () => Promise<DoctorCheck>, late: () => DoctorCheck, broken: () => DoctorCheck): Promise<DoctorCheck> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<DoctorCheck>((resolve) => (timer = setTimeout(() => resolve(late()), CHECK_TIMEOUT_MS)));
  try {
    return await Promise.race([work().catch(() => broken()), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const seconds = CHECK_TIMEOUT_MS / 1000;
const unfinished = (id: string, title: string, fix: string) => () => ({ id, title, status: 'fail' as const, detail: `The check did not finish within ${seconds} s.`, fix });
const unchecked = (id: string, title: string) => () => ({ id, title, status: 'fail' as const, detail: 'The check could not be run.', fix: 'Check again; if it persists, look at the service log.' });

/** No edge paired: no mail comes in (a smart host alone only sends), so it never merely does not apply. */
function noEdgeCheck(smartHost: boolean): DoctorCheck {
  return {
    id: 'edge',
    title: 'Edge',
    status: smartHost ? 'warn' : 'fail',
    detail: smartHost ? 'No edge is paired: mail goes out through the smart host, but none comes in.' : 'No edge is paired, so no mail comes in.',
    fix: 'Pair with an edge: `svc transport set --edge-url URL --edge-token-file FILE` (`svc edge` prints both), or start with `svc serve --local-edge` to try svc locally.',
  };
}

function domainChecks(svc: DoctorServices, rows: DomainRow[]): Promise<DoctorCheck>[] {
  if (rows.length === 0) return [Promise.resolve({ id: 'domains', title: 'Domains', status: 'skip', detail: 'No domains yet: mail uses the edge\'s own addresses only.', fix: null })];
  const servers = checkServers(svc.db);
  return rows.flatMap((row) => [
    bounded(
      async () => {
        const plan = await domainPlan(svc.db, row.domain, { domainId: row.domain_id, feedbackEnabled: row.feedback_enabled === 1 });
        return domainRecordsCheck(row, await checkRecords(plan.records, servers, { timeoutMs: DNS_LOOKUP_MS, tries: 1 }));
      },
      () => domainRecordsUnanswered(row.domain, seconds),
      unchecked(`domain:${row.domain}`, `DNS of ${row.domain}`),
    ),
    Promise.resolve(selftestCheck(row)),
  ]);
}

async function runChecks(svc: DoctorServices): Promise<DoctorReport> {
  const { db, health } = svc;
  const transport = readTransport(db);
  const edges = configuredEdges(svc);
  const edgeRuns = edges.map((edge) => {
    const id = edgeCheckId(edge, edges.length > 1);
    return bounded(() => edgeCheck(edge, id), unfinished(id, 'Edge', 'Check that the edge host is up and reachable from this machine.'), unchecked(id, 'Edge'));
  });
  const edgeChecks: Promise<DoctorCheck>[] = edgeRuns.length > 0
    ? edgeRuns
    : [Promise.resolve(noEdgeCheck(transport.smtp !== null))];
  const outboundTitle = 'Outbound transport';
  const outbound = transport.smtp
    ? bounded(() => smartHostLoginCheck(transport.smtp!, os.hostname()), unfinished('outbound', outboundTitle, 'Check that the smart host is reachable from this machine, or fix it with `svc transport set`.'), unchecked('outbound', outboundTitle))
    : edges.length > 0
      ? // Sends go through the first healthy edge in list order (docs/outbound.md), so the first that answers is the one judged.
        Promise.all(edgeRuns).then((checked) => {
          const at = Math.max(0, checked.findIndex((c) => c.status === 'pass'));
          return edgeOutboundCheck(edges[at].url, checked[at]);
        })
      : Promise.resolve(noTransportCheck());
  const rows = domainRowsIn(db, ['pending', ...ROUTED_STATUSES]);
  const checks = await Promise.all([
    Promise.resolve(credentialStoreCheck(svc.health.home)),
    ...edgeChecks,
    outbound,
    ...domainChecks(svc, rows),
    bounded(() => diskSpaceCheck(health.home), unfinished('disk', 'Disk space', 'Check the file system of the home.'), unchecked('disk', 'Disk space')),
    Promise.resolve(backupCheck(readLastBackup(db)?.at ?? null)),
    Promise.resolve(loopsCheck(health.loops())),
    Promise.resolve(quarantineCheck(countQuarantine(db))),
  ]);
  return doctorReport(checks);
}

/** One run at a time per service: a request that arrives while a run is on shares its answer. */
const running = new WeakMap<object, Promise<DoctorReport>>();

export function runDoctor(svc: DoctorServices): Promise<DoctorReport> {
  const current = running.get(svc.db);
  if (current) return current;
  const run = runChecks(svc).finally(() => running.delete(svc.db));
  running.set(svc.db, run);
  return run;
}
