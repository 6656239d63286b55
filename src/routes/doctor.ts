/**
 * `GET /owner/doctor` (docs/doctor.md): the checks a mail operator makes, each with a status, what
 * was found and a fix. Owner only (web session or owner bearer), on the loopback listener only; the
 * response schema passes only the declared fields, so no secret can leave by mistake.
 */
import type { FastifyPluginAsync } from 'fastify';
import { DoctorReport } from '../doctor/schemas.js';
import { runDoctor } from '../requests/doctor.js';
import type { HealthSources } from '../context.js';

export function doctorRoutes(health: HealthSources): FastifyPluginAsync {
  return async (app) => {
    const { db } = app.svc;
    app.get('/doctor', { config: { auth: 'owner' }, schema: { response: { 200: DoctorReport } } }, async (_request, reply) => {
      reply.header('cache-control', 'no-store');
      return runDoctor({ db, health });
    });
  };
}
