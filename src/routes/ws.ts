/** The event WebSocket (spec §6.4). */
import type { FastifyPluginAsync } from 'fastify';

export const wsRoutes: FastifyPluginAsync = async () => {};
