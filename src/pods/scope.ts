/**
 * Narrowing a principal to one pod (docs/pods.md): what a pod-scoped key or grant is on every
 * route, and what any credential is on a `/v0/pods/{pod_id}/...` route. The narrowed principal's
 * inbox scope is the pod's inboxes (within the credential's own restriction), so every existing
 * inbox, thread, message and draft check — 404 before permission — applies to pods unchanged.
 */
import type { Db } from '../db/open.js';
import { notFound } from '../core/errors.js';
import type { Principal } from '../auth/principal.js';
import { podById, podInboxIds } from './store.js';

/**
 * The principal limited to `podId`. A pod that does not exist, or that a pod-scoped credential
 * does not own, is the same `404 pod`: another pod's id reads exactly like a made-up one.
 */
export function principalInPod(db: Db, p: Principal, podId: string): Principal {
  if (p.pod !== undefined && p.pod.podId !== podId) throw notFound('pod');
  if (!podById(db, podId)) throw notFound('pod');
  const keyScope = p.pod?.keyScope ?? p.inboxScope;
  const inboxes = podInboxIds(db, podId);
  const inboxScope = new Set(keyScope === 'all' ? inboxes : inboxes.filter((id) => keyScope.has(id)));
  return { ...p, inboxScope, pod: { podId, keyScope } };
}

/** A credential stored with a pod (NULL = every pod): null once its pod is gone, as for a revoked key. */
export function storedPodPrincipal(db: Db, p: Principal, podId: string | null): Principal | null {
  if (podId === null) return p;
  if (!podById(db, podId)) return null;
  return principalInPod(db, p, podId);
}
