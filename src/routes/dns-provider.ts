/**
 * The owner's DNS provider (docs/dns-providers.md): `GET`, `PUT`, `DELETE /owner/dns-provider`.
 * Secrets (TSIG secret, PowerDNS API key) are write-only: the view says only whether one is set,
 * and the response schema lets nothing else through.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Static } from 'typebox';
import { DnsProviderBody, DnsProviderResponse } from '../domains/providers/schemas.js';
import { clearDnsProviderFor, readDnsProviderView, writeDnsProviderFor, type DnsProviderView } from '../requests/dns-provider.js';
import type { SameShape } from '../core/validation.js';

// Compile-time: the schema is exactly the view (src/core/validation.ts SameShape).
const dnsProviderShape: SameShape<Static<typeof DnsProviderResponse>, DnsProviderView> = true;
const response = { 200: DnsProviderResponse };

export const dnsProviderRoutes: FastifyPluginAsync = async (app) => {
  const svc = app.svc;

  app.get('/dns-provider', { config: { auth: 'owner' }, schema: { response } }, async () => readDnsProviderView(svc));

  app.put<{ Body: DnsProviderBody }>('/dns-provider', { config: { auth: 'owner', sudo: true }, schema: { body: DnsProviderBody, response } }, async (request) => writeDnsProviderFor(svc, request.body));

  app.delete('/dns-provider', { config: { auth: 'owner', sudo: true }, schema: { response } }, async () => clearDnsProviderFor(svc));
};
