/** Allow and block lists (spec §4.8). */
import type { FastifyPluginAsync } from 'fastify';

export const listRoutes: FastifyPluginAsync = async () => {};
