/** What the edge should accept: every active inbox, and the domains they live on (for svc-selftest). */
import type { Db } from '../db/open.js';

export function desiredRouting(db: Db): { domains: string[]; addresses: string[] } {
  const addresses = (db.prepare("SELECT inbox_id FROM inboxes WHERE status = 'active' ORDER BY inbox_id").all() as { inbox_id: string }[]).map((r) => r.inbox_id);
  const domains = (db.prepare('SELECT DISTINCT domain FROM inboxes ORDER BY domain').all() as { domain: string }[]).map((r) => r.domain);
  return { domains, addresses };
}
