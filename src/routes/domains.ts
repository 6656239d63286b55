/**
 * Domains, owner only (spec §4.12, docs/domains.md): register, plan, zone file, and the
 * provisioning state machine's triggers (apply, verify, teardown). The provisioning loop does
 * the work; each trigger wakes it. Every JSON answer has a response schema, pinned at compile
 * time to the view it serializes (src/core/validation.ts SameShape). All of them are served again
 * under `/pods/{pod_id}` (src/routes/pods.ts), narrowed to that pod's domains.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { ListOf, PageQuery } from '../core/schemas.js';
import {
  applyDomainFor,
  createDomainFor,
  deleteDomainFor,
  domainSetupLink,
  domainListPage,
  readDomain,
  readDomainPlan,
  readZoneFile,
  teardownDomainFor,
  updateDomainFor,
  verifyDomainFor,
  type DomainView,
} from '../requests/domains.js';
import type { SameShape } from '../core/validation.js';
import { CreateDomainBody, Domain, DomainItem, DomainPlanResponse, DomainSetupLink, UpdateDomainBody } from '../domains/schemas.js';

const Params = Type.Object({ domain_id: Type.String({ minLength: 1, maxLength: 64 }) });
const ListQuery = Type.Object(PageQuery);
type Params = Static<typeof Params>;
type ListQuery = Static<typeof ListQuery>;

const owner = { auth: 'owner' } as const;

// Compile-time: the schemas are exactly the views (src/core/validation.ts SameShape).
const domainShape: SameShape<Static<typeof Domain>, DomainView> = true;
const itemShape: SameShape<Static<typeof DomainItem>, Omit<DomainView, 'records' | 'extra_records' | 'checked_at' | 'selftest'>> = true;
const one = { 200: Domain };
const accepted = { 202: Domain };

export const domainRoutes: FastifyPluginAsync = async (app) => {
  const svc = app.svc;

  app.get<{ Querystring: ListQuery }>('/domains', { config: owner, schema: { querystring: ListQuery, response: { 200: ListOf('domains', DomainItem) } } }, async (request) => domainListPage(svc, request.principal!, request.query));
  app.post<{ Body: CreateDomainBody }>('/domains', { config: owner, schema: { body: CreateDomainBody, response: one } }, async (request) => createDomainFor(svc, request.principal!, request.body));
  app.get<{ Params: Params }>('/domains/:domain_id', { config: owner, schema: { params: Params, response: one } }, async (request) => readDomain(svc, request.principal!, request.params.domain_id));
  app.patch<{ Params: Params; Body: UpdateDomainBody }>('/domains/:domain_id', { config: owner, schema: { params: Params, body: UpdateDomainBody, response: one } }, async (request) =>
    updateDomainFor(svc, request.principal!, request.params.domain_id, request.body),
  );
  app.delete<{ Params: Params }>('/domains/:domain_id', { config: owner, schema: { params: Params } }, async (request, reply) => {
    deleteDomainFor(svc, request.principal!, request.params.domain_id);
    return reply.send();
  });

  app.get<{ Params: Params }>('/domains/:domain_id/plan', { config: owner, schema: { params: Params, response: { 200: DomainPlanResponse } } }, async (request) => readDomainPlan(svc, request.principal!, request.params.domain_id));
  app.get<{ Params: Params }>('/domains/:domain_id/zone-file', { config: owner, schema: { params: Params } }, async (request, reply) => {
    const zone = await readZoneFile(svc, request.principal!, request.params.domain_id);
    return reply.type('text/plain; charset=utf-8').header('content-disposition', `attachment; filename="${zone.domain}.zone"`).send(zone.text);
  });

  // The AgentMail SDK's domains.getSetupLink: the domain's page in the owner's web app.
  app.get<{ Params: Params }>('/domains/:domain_id/setup-link', { config: owner, schema: { params: Params, response: { 200: DomainSetupLink } } }, async (request) => domainSetupLink(svc, request.principal!, request.params.domain_id));

  app.post<{ Params: Params }>('/domains/:domain_id/apply', { config: owner, schema: { params: Params, response: accepted } }, async (request, reply) =>
    reply.code(202).send(await applyDomainFor(svc, request.principal!, request.params.domain_id)),
  );
  app.post<{ Params: Params }>('/domains/:domain_id/verify', { config: owner, schema: { params: Params, response: accepted } }, async (request, reply) =>
    reply.code(202).send(await verifyDomainFor(svc, request.principal!, request.params.domain_id)),
  );
  app.post<{ Params: Params }>('/domains/:domain_id/teardown', { config: owner, schema: { params: Params, response: accepted } }, async (request, reply) =>
    reply.code(202).send(await teardownDomainFor(svc, request.principal!, request.params.domain_id)),
  );
};
