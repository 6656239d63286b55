/**
 * Pods (docs/pods.md): AgentMail's `pods.*` — the pods themselves, and every pod resource as
 * `/pods/{pod_id}/...` in front of the home's own routes. Those are the same route plugins as
 * under `/v0` (inboxes, threads, drafts, API keys, metrics, domains, lists, webhooks), registered
 * again under the pod prefix, where one hook narrows the caller to the pod the router matched
 * (src/pods/scope.ts) before any handler runs: the handlers' own scope checks (404 before 403)
 * then see only that pod. A pod the caller may not see is 404, exactly like a pod that does not
 * exist; the gate has authenticated the caller first, so the pod's existence is never told to
 * someone without a credential.
 */
import type { FastifyPluginAsync } from 'fastify';
import { ListOf } from '../core/schemas.js';
import { CreatePodBody, PodListQuery, PodParams, PodResponse } from '../pods/schemas.js';
import { principalInPod } from '../pods/scope.js';
import { createPodFor, deletePodFor, podListPage, readPod } from '../requests/pods.js';
import { inboxRoutes } from './inboxes.js';
import { threadRoutes } from './threads.js';
import { draftRoutes } from './drafts.js';
import { apiKeyRoutes } from './api-keys.js';
import { metricRoutes } from './metrics.js';
import { domainRoutes } from './domains.js';
import { listRoutes } from './lists.js';
import { webhookRoutes } from './webhooks.js';

const agent = { auth: 'agent' } as const;
const owner = { auth: 'owner' } as const;

/** The route plugins served under `/pods/{pod_id}`, each exactly as under `/v0`. */
export const POD_RESOURCE_ROUTES = [inboxRoutes, threadRoutes, draftRoutes, apiKeyRoutes, metricRoutes, domainRoutes, listRoutes, webhookRoutes];

/** Every route below narrows its caller to the matched pod before validation and the handler. */
const podResourceRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;
  app.addHook('onRequest', async (request) => {
    // The gate (a root hook, so it ran first) authenticated the caller: every route here is protected.
    if (request.principal === null) return;
    request.principal = principalInPod(db, request.principal, (request.params as PodParams).pod_id);
  });
  for (const routes of POD_RESOURCE_ROUTES) await app.register(routes);
};

export const podRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;

  app.get<{ Querystring: PodListQuery }>('/pods', { config: agent, schema: { querystring: PodListQuery, response: { 200: ListOf('pods', PodResponse) } } }, async (request) =>
    podListPage(db, request.principal!, request.query),
  );
  app.post<{ Body: CreatePodBody }>('/pods', { config: owner, schema: { body: CreatePodBody, response: { 200: PodResponse } } }, async (request) => createPodFor(db, request.body));
  app.get<{ Params: PodParams }>('/pods/:pod_id', { config: agent, schema: { params: PodParams, response: { 200: PodResponse } } }, async (request) =>
    readPod(db, request.principal!, request.params.pod_id),
  );
  app.delete<{ Params: PodParams }>('/pods/:pod_id', { config: owner, schema: { params: PodParams } }, async (request, reply) => {
    deletePodFor(db, request.principal!, request.params.pod_id);
    return reply.send();
  });

  await app.register(podResourceRoutes, { prefix: '/pods/:pod_id' });
};
