/** Signed download URLs (spec §4.7). */
import type { FastifyPluginAsync } from 'fastify';

export const downloadRoutes: FastifyPluginAsync = async () => {};
