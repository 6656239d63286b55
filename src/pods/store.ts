/**
 * The pod store (docs/pods.md), the one module that writes the `pods` table: create with
 * `client_id` idempotency, paged list, and delete of an empty pod. A pod owns inboxes (and through
 * them threads, messages and drafts), domains, webhooks and API keys; the home's own records (pod
 * NULL) belong to no pod. Access checks and transactions are the caller's (src/requests/pods.ts).
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { uuidv7 } from '../db/ids.js';
import { ApiError, notFound } from '../core/errors.js';
import { DEFAULT_LIMIT, pageFromRows, readCursor, type PageBinding } from '../core/pagination.js';
import type { Principal } from '../auth/principal.js';
import type { CreatePodBody, PodListQuery, PodResponse } from './schemas.js';

/** The pod every inbox of a home made before pods belongs to, and where inboxes go by default. */
export const DEFAULT_POD_ID = 'default';

export interface PodRow {
  pod_id: string;
  name: string;
  client_id: string | null;
  created_at: string;
  updated_at: string;
}

export function podResponse(row: PodRow): PodResponse {
  return { pod_id: row.pod_id, name: row.name, ...(row.client_id === null ? {} : { client_id: row.client_id }), created_at: row.created_at, updated_at: row.updated_at };
}

export function podById(db: Db, podId: string): PodRow | undefined {
  return prepared(db, 'SELECT * FROM pods WHERE pod_id = ?').get(podId) as PodRow | undefined;
}

/** The ids of the pod's inboxes: what a credential narrowed to the pod may touch. */
export function podInboxIds(db: Db, podId: string): string[] {
  return prepared(db, 'SELECT inbox_id FROM inboxes WHERE pod_id = ?').pluck().all(podId) as string[];
}

/**
 * The pods a caller may see: a pod-scoped credential its own, an inbox-restricted one the pods of
 * its inboxes, the owner and unrestricted keys every pod.
 */
function visibleFilter(p: Principal): { sql: string; params: string[] } {
  if (p.pod !== undefined) return { sql: 'pod_id = ?', params: [p.pod.podId] };
  if (p.inboxScope === 'all') return { sql: '1 = 1', params: [] };
  const ids = [...p.inboxScope];
  if (ids.length === 0) return { sql: '0 = 1', params: [] };
  return { sql: `pod_id IN (SELECT pod_id FROM inboxes WHERE inbox_id IN (${ids.map(() => '?').join(', ')}))`, params: ids };
}

/** The pod if the caller may see it; another pod answers exactly like a pod that does not exist. */
export function visiblePod(db: Db, p: Principal, podId: string): PodRow {
  const filter = visibleFilter(p);
  const row = db.prepare(`SELECT * FROM pods WHERE pod_id = ? AND ${filter.sql}`).get(podId, ...filter.params) as PodRow | undefined;
  if (!row) throw notFound('pod');
  return row;
}

/** One page of the pods the caller may see, newest first unless `ascending` (AgentMail's order). */
export function listPods(db: Db, p: Principal, query: PodListQuery): Record<string, unknown> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const ascending = query.ascending ?? false;
  const binding: PageBinding = { route: 'pods.list', filters: { ascending }, principal: p };
  const filter = visibleFilter(p);
  const where = [filter.sql];
  const params: (string | number)[] = [...filter.params];
  if (query.page_token !== undefined) {
    const cursor = readCursor(db, query.page_token, binding, 2);
    where.push(`(created_at, pod_id) ${ascending ? '>' : '<'} (?, ?)`);
    params.push(...cursor);
  }
  const order = ascending ? 'ASC' : 'DESC';
  const rows = db.prepare(`SELECT * FROM pods WHERE ${where.join(' AND ')} ORDER BY created_at ${order}, pod_id ${order} LIMIT ?`).all(...params, limit + 1) as PodRow[];
  return pageFromRows(db, binding, 'pods', rows, limit, (r) => [r.created_at, r.pod_id], podResponse);
}

/** Creates a pod, or returns the one created earlier with the same `client_id`; inside the caller's transaction. */
export function createPod(db: Db, body: CreatePodBody): PodRow {
  const clientId = body.client_id ?? null;
  if (clientId !== null) {
    const earlier = prepared(db, 'SELECT * FROM pods WHERE client_id = ?').get(clientId) as PodRow | undefined;
    if (earlier) return earlier;
  }
  const podId = uuidv7();
  const now = new Date().toISOString();
  prepared(db, 'INSERT INTO pods (pod_id, name, client_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(podId, body.name ?? podId, clientId, now, now);
  return podById(db, podId)!;
}

/**
 * Deletes an empty pod with the credentials, webhooks and list entries it owns; inside the caller's write
 * transaction, so an inbox or domain created in the pod meanwhile either commits first (and the
 * pod is not empty) or finds the pod gone (podForWrite). A pod that still owns inboxes or domains
 * is `409 conflict`, as AgentMail requires: deleting a pod never deletes mail.
 */
export function deletePod(db: Db, podId: string): void {
  const counts = db.prepare('SELECT (SELECT COUNT(*) FROM inboxes WHERE pod_id = ?) AS inboxes, (SELECT COUNT(*) FROM domains WHERE pod_id = ?) AS domains').get(podId, podId) as { inboxes: number; domains: number };
  if (counts.inboxes > 0 || counts.domains > 0) {
    throw new ApiError('conflict', `The pod still owns ${counts.inboxes} inbox(es) and ${counts.domains} domain(s).`, {
      fix: `Delete them first (GET /v0/pods/${podId}/inboxes and /v0/pods/${podId}/domains list them), then delete the pod.`,
    });
  }
  db.prepare('DELETE FROM api_keys WHERE pod_id = ?').run(podId);
  db.prepare('DELETE FROM webhooks WHERE pod_id = ?').run(podId);
  db.prepare('DELETE FROM list_entries WHERE inbox_id = ?').run(`pod:${podId}`);
  db.prepare('DELETE FROM pods WHERE pod_id = ?').run(podId);
}

/**
 * The pod a write puts something in, read inside that write's transaction: gone (deleted by a
 * concurrent request) is 404, so nothing is ever created in a deleted pod.
 */
export function podForWrite(db: Db, podId: string): PodRow {
  const row = podById(db, podId);
  if (!row) throw notFound('pod');
  return row;
}
