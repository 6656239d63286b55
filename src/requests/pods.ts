/**
 * A caller's requests on pods (docs/pods.md), checked and answered in one place. Reads are for
 * any credential and show only the pods it may see (another pod is 404, as if it did not exist);
 * creating and deleting are the owner's (the route declares it). Every write is one transaction
 * opened here.
 */
import type { Db } from '../db/open.js';
import type { Principal } from '../auth/principal.js';
import { createPod, deletePod, listPods, podResponse, visiblePod } from '../pods/store.js';
import type { CreatePodBody, PodListQuery, PodResponse } from '../pods/schemas.js';

export function podListPage(db: Db, p: Principal, q: PodListQuery): Record<string, unknown> {
  return listPods(db, p, q);
}

export function readPod(db: Db, p: Principal, podId: string): PodResponse {
  return podResponse(visiblePod(db, p, podId));
}

export function createPodFor(db: Db, body: CreatePodBody): PodResponse {
  return podResponse(db.transaction(() => createPod(db, body))());
}

/** Deletes an empty pod; the emptiness check and the delete are one write transaction. */
export function deletePodFor(db: Db, p: Principal, podId: string): void {
  db.transaction(() => deletePod(db, visiblePod(db, p, podId).pod_id))();
}
