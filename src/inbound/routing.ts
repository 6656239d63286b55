/**
 * What the edge should accept: every active inbox, the domains they live on, and every applied
 * domain (for svc-selftest@, the VERP return paths and svc-feedback@). A registered domain that is
 * being or has been torn down is routed not at all, its inboxes included (docs/domains.md).
 */
import type { Db } from '../db/open.js';
import { ROUTED_STATUSES, UNROUTED_STATUSES } from '../domains/store.js';

const list = (statuses: readonly string[]) => statuses.map((s) => `'${s}'`).join(', ');

export function desiredRouting(db: Db): { domains: string[]; addresses: string[] } {
  const unrouted = `SELECT domain FROM domains WHERE status IN (${list(UNROUTED_STATUSES)})`;
  const addresses = (db.prepare(`SELECT inbox_id FROM inboxes WHERE status = 'active' AND domain NOT IN (${unrouted}) ORDER BY inbox_id`).all() as { inbox_id: string }[]).map((r) => r.inbox_id);
  const domains = (
    db
      .prepare(`SELECT domain FROM inboxes WHERE domain NOT IN (${unrouted}) UNION SELECT domain FROM domains WHERE status IN (${list(ROUTED_STATUSES)}) ORDER BY domain`)
      .all() as { domain: string }[]
  ).map((r) => r.domain);
  return { domains, addresses };
}
