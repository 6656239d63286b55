/** Inboxes (spec §4.3). */
import type { FastifyPluginAsync } from 'fastify';

export const inboxRoutes: FastifyPluginAsync = async () => {};
