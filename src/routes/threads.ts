/** Threads, inbox-scoped and instance-wide (spec §4.4). */
import type { FastifyPluginAsync } from 'fastify';

export const threadRoutes: FastifyPluginAsync = async () => {};
