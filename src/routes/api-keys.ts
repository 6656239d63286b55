/** API keys, owner only (spec §4.11). */
import type { FastifyPluginAsync } from 'fastify';

export const apiKeyRoutes: FastifyPluginAsync = async () => {};
