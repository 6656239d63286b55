/** Messages (spec §4.5). */
import type { FastifyPluginAsync } from 'fastify';

export const messageRoutes: FastifyPluginAsync = async () => {};
