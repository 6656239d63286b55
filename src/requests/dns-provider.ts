/**
 * The owner's requests on the DNS provider (docs/dns-providers.md), one function per route of
 * src/routes/dns-provider.ts: `GET`, `PUT`, `DELETE /owner/dns-provider`. Owner access only. A
 * write checks the body against the stored configuration (a missing secret is kept for the same
 * key), is ONE transaction, and only then wakes the provisioning loop. The view never holds a
 * secret. Nothing here talks to the DNS service: the provisioning loop does, and a failure
 * shows in the domain's `reason`.
 */
import type { AppContext } from '../context.js';
import { checkDnsProviderBody, clearDnsProvider, dnsProviderView, readDnsProvider, writeDnsProvider, type DnsProviderBody } from '../domains/providers/config.js';

export type DnsProviderServices = Pick<AppContext, 'db' | 'bus'>;
export type DnsProviderView = ReturnType<typeof dnsProviderView>;

export function readDnsProviderView(svc: Pick<AppContext, 'db'>): DnsProviderView {
  return dnsProviderView(readDnsProvider(svc.db));
}

/** Replaces the configuration; answers the stored one's view. */
export function writeDnsProviderFor(svc: DnsProviderServices, body: DnsProviderBody): DnsProviderView {
  const { db } = svc;
  const stored = db.transaction(() => {
    const next = checkDnsProviderBody(body, readDnsProvider(db));
    writeDnsProvider(db, next);
    return next;
  })();
  svc.bus.publish({ kind: 'wake', loop: 'provisioning' });
  return dnsProviderView(stored);
}

/** Removes the configuration: domains applied from now on are published by hand again. */
export function clearDnsProviderFor(svc: DnsProviderServices): DnsProviderView {
  svc.db.transaction(() => clearDnsProvider(svc.db))();
  svc.bus.publish({ kind: 'wake', loop: 'provisioning' });
  return dnsProviderView(null);
}
