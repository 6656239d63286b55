/**
 * Usage metrics (issue 20 §5, docs/metrics.md): AgentMail's metrics API — `GET /metrics/events`
 * and `GET /metrics/usage`, instance-wide over the caller's scope and per inbox — and svc's live
 * counts (`GET /metrics/counts`). Agent routes: inbox in scope (404) → `message_read` (403).
 * Answered by reader threads, never on the request thread.
 */
import type { FastifyPluginAsync } from 'fastify';
import { ScopeParams } from '../core/schemas.js';
import { LiveCountsResponse, MetricEventsQuery, MetricEventsResponse, MetricUsageQuery, MetricUsageResponse } from '../requests/metrics.js';

export const metricRoutes: FastifyPluginAsync = async (app) => {
  const { reads } = app.svc;
  for (const base of ['/inboxes/:inbox_id/metrics', '/metrics']) {
    app.get<{ Params: ScopeParams; Querystring: MetricEventsQuery }>(
      `${base}/events`,
      { config: { auth: 'agent' }, schema: { params: ScopeParams, querystring: MetricEventsQuery, response: { 200: MetricEventsResponse } } },
      async (request) => reads.run('metricEvents', request.principal!, request.params.inbox_id, request.query),
    );
    app.get<{ Params: ScopeParams; Querystring: MetricUsageQuery }>(
      `${base}/usage`,
      { config: { auth: 'agent' }, schema: { params: ScopeParams, querystring: MetricUsageQuery, response: { 200: MetricUsageResponse } } },
      async (request) => reads.run('metricUsage', request.principal!, request.params.inbox_id, request.query),
    );
    app.get<{ Params: ScopeParams }>(
      `${base}/counts`,
      { config: { auth: 'agent' }, schema: { params: ScopeParams, response: { 200: LiveCountsResponse } } },
      async (request) => reads.run('metricCounts', request.principal!, request.params.inbox_id),
    );
  }
};
