/**
 * The provisioning loop (spec §8): every 10 s push the routing (active inboxes, their domains,
 * applied domains and the home's public key) to the edge when it changed, and all of it every 5
 * minutes regardless. Then it drives the domain state machine (docs/domains.md):
 * provisioning → verifying once the edge routes the domain; the DNS checks and the self-test of
 * verifying domains; tearing_down → torn_down once the edge no longer routes it. With a DNS
 * provider configured (docs/dns-providers.md), a provisioning domain's records are published
 * through it before it moves on to verifying, and a tearing_down domain's records that svc added
 * are removed before it is torn_down.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { loopPass, type LoopContext } from './run-loop.js';
import { readEdgeReport, readTransport, storeEdgeReport } from '../../src/mail/transport.js';
import { CloudflareEmailRouting } from '../../src/domains/providers/cloudflare-email-routing.js';
import { EdgeClient } from '../../src/inbound/edge-client.js';
import { homeKeyPair } from '../../src/inbound/home-key.js';
import { desiredRouting } from '../../src/inbound/routing.js';
import { uuidv7 } from '../../src/db/ids.js';
import { domainPlan } from '../../src/domains/plan.js';
import { checkRecords, checkServers } from '../../src/domains/checks.js';
import { ROUTED_STATUSES, domainRowsIn, noteReason, recordChecks, recordDnsIntent, recordDnsPublished, recordSelftestSent, selftestAddress, SELFTEST_HEADER, transition, type DomainRow } from '../../src/domains/store.js';
import { dnsProviderFor, readDnsProvider, zoneFor, zoneOf, type StoredDnsProvider } from '../../src/domains/providers/config.js';
import { plannedToDns, providerFailure, publishPlan, unpublish } from '../../src/domains/providers/publish.js';
import { DnsProviderError, type DnsRecord } from '../../src/domains/providers/provider.js';
import { EdgeRelay, SmtpSmartHost, type Transport } from '../../src/outbound/transports.js';
import type { MimeSpec } from '../pool/compose.js';

const FULL_RECONCILE_MS = 5 * 60_000;
/** A self-test that has not come back by then fails the verification. */
const SELFTEST_TIMEOUT_MS = 10 * 60_000;

/** Per paired edge (by URL): the routing last pushed there and when. Every edge gets the same routing. */
const lastPushed = new Map<string, { fingerprint: string; at: number }>();
/** Per Worker and zone: the addresses last routed to it in Cloudflare Email Routing, and when. */
const lastEmailRouting = new Map<string, { fingerprint: string; at: number; failed: boolean }>();
/** After a failed Email Routing call, the next try for the same addresses (a change of addresses tries at once). */
const EMAIL_ROUTING_RETRY_MS = 60_000;
/** The domains the edges route according to the last successful push to any of them; null when unknown. */
let routedAtEdge: Set<string> | null = null;

const NO_EDGE = 'Waiting for a transport: pair an edge with `svc transport set --edge-url URL --edge-token-file FILE`; the domain is routed as soon as one is configured.';

export default loopPass(async (ctx) => {
  const { db } = ctx;
  const { edges } = readTransport(db);
  const dnsProvider = readDnsProvider(db);
  if (edges.length === 0) {
    let busy = await syncDns(ctx, dnsProvider, false);
    lastPushed.clear();
    routedAtEdge = null;
    // Nothing routes anything without an edge: a teardown is complete at once (once svc's records are out of DNS).
    for (const d of domainRowsIn(db, ['tearing_down'])) busy = tearDownDone(db, d, dnsProvider) || busy;
    for (const d of domainRowsIn(db, ['provisioning'])) noteReason(db, d.domain_id, 'provisioning', NO_EDGE);
    return busy ? 'busy' : 'idle';
  }
  // The push comes first: its answer says what the edge is (its host name and addresses), which
  // the plan published below is made of.
  let busy = false;
  const { publicJwk } = await homeKeyPair(db);
  const routing = { recipient_public_key: publicJwk, ...desiredRouting(db) };
  const fingerprint = JSON.stringify(routing);
  for (const url of lastPushed.keys()) if (!edges.some((e) => e.url === url)) lastPushed.delete(url);
  // Each edge on its own, side by side: a dead one neither delays nor blocks the others' routing.
  const due = edges.filter((edge) => lastPushed.get(edge.url)?.fingerprint !== fingerprint || Date.now() - lastPushed.get(edge.url)!.at >= FULL_RECONCILE_MS);
  const refused: string[] = [];
  await Promise.all(
    due.map(async (edge) => {
      try {
        const identity = await new EdgeClient(edge.url, edge.token).putRouting(routing);
        storeEdgeReport(db, edge.url, identity);
        lastPushed.set(edge.url, { fingerprint, at: Date.now() });
        routedAtEdge = new Set(routing.domains);
        busy = true;
      } catch {
        refused.push(edge.url); // down or refused: the next pass tries again
      }
    }),
  );
  if (refused.length > 0 && refused.length === due.length && !edges.some((e) => lastPushed.get(e.url)?.fingerprint === fingerprint)) {
    for (const d of domainRowsIn(db, ['provisioning'])) noteReason(db, d.domain_id, 'provisioning', `The edge${refused.length > 1 ? 's' : ''} at ${refused.join(', ')} did not accept the routing yet; retrying every 10 s.`);
  }
  // Email Routing first: its enable call writes Cloudflare's MX and SPF records, which the plan
  // then finds in place (svc adds no second SPF record beside Cloudflare's).
  busy = (await syncEmailRouting(ctx, edges, routing.addresses, dnsProvider)) || busy;
  busy = (await syncDns(ctx, dnsProvider, true)) || busy;
  if (routedAtEdge) busy = followRouting(ctx, routedAtEdge, dnsProvider) || busy;
  busy = (await verifyDomains(ctx)) || busy;
  return busy ? 'busy' : 'idle';
});

/** Status changes that wait for the edge's routing: provisioned and torn-down domains. */
function followRouting({ db }: LoopContext, routed: Set<string>, dnsProvider: StoredDnsProvider | null): boolean {
  let changed = false;
  for (const d of domainRowsIn(db, ['provisioning'])) {
    // With a DNS provider, verification starts only once the records are published.
    if (routed.has(d.domain) && (!dnsProvider || d.dns_published_at)) changed = transition(db, d.domain_id, 'provisioning', 'routed', null) || changed;
  }
  for (const d of domainRowsIn(db, ['tearing_down'])) {
    if (!routed.has(d.domain)) changed = tearDownDone(db, d, dnsProvider) || changed;
  }
  return changed;
}

const addedRecords = (d: DomainRow) => JSON.parse(d.dns_added) as DnsRecord[];

/**
 * tearing_down → torn_down once svc's own records are out of DNS. When the provider that
 * published them is no longer configured, svc cannot remove them: the reason lists them.
 */
function tearDownDone(db: LoopContext['db'], d: DomainRow, dnsProvider: StoredDnsProvider | null): boolean {
  const left = addedRecords(d);
  if (left.length > 0 && dnsProvider) return false;
  const reason = left.length > 0
    ? `No DNS provider is configured any more, so svc could not remove the ${left.length} records it published in ${d.dns_zone}; remove them by hand: ${left.map((r) => `${r.type} ${r.name} ${r.priority !== undefined ? `${r.priority} ` : ''}${r.value.length > 60 ? `${r.value.slice(0, 60)}…` : r.value}`).join('; ')}.`
    : null;
  return transition(db, d.domain_id, 'tearing_down', 'unrouted', reason);
}

/**
 * The DNS provider's part: publish the plan of each provisioning domain not yet published in this
 * apply (only with an edge: without one the MX would be a placeholder), and remove the records of
 * each tearing_down domain. A failure is the domain's reason and is tried again next pass. Once
 * the provider cannot be reached at all (refused, timed out), the other domains' DNS work waits
 * for the next pass, so one dead provider costs a pass one timeout, not one per domain and record:
 * the routing push and the other domains' verification still run.
 */
async function syncDns({ db }: LoopContext, config: StoredDnsProvider | null, hasEdge: boolean): Promise<boolean> {
  if (!config) return false;
  const provider = dnsProviderFor(config);
  let worked = false;
  let unreachable: string | null = null;
  const failed = (err: unknown) => {
    if (err instanceof DnsProviderError && err.unreachable) unreachable = err.message;
    return providerFailure(provider, err);
  };
  const skipped = () => `svc did not try this pass: ${unreachable} svc tries again every 10 s.`;
  if (hasEdge) {
    for (const d of domainRowsIn(db, ['provisioning'])) {
      if (d.dns_published_at) continue;
      if (unreachable) {
        noteReason(db, d.domain_id, 'provisioning', `svc could not publish the domain's records: ${skipped()}`);
        continue;
      }
      const zone = zoneFor(d.domain, config.zones);
      try {
        // Records published in another zone (the zones setting changed) are taken back first.
        if (d.dns_zone && d.dns_zone !== zone) {
          await unpublish(provider, d.dns_zone, addedRecords(d));
          recordDnsPublished(db, d.domain_id, 'provisioning', zone, [], false);
        }
        const plan = await domainPlan(db, d.domain, { domainId: d.domain_id });
        // What is about to be added is stored first: a teardown meanwhile (or a crash) still removes it.
        const intend = (records: DnsRecord[]) => recordDnsIntent(db, d.domain_id, zone, records) === 'provisioning';
        const added = await publishPlan(provider, zone, plannedToDns(plan.records, config.ttl, zone), d.dns_zone === zone ? addedRecords(d) : [], intend);
        worked = recordDnsPublished(db, d.domain_id, 'provisioning', zone, added, true) || worked;
      } catch (err) {
        noteReason(db, d.domain_id, 'provisioning', `svc could not publish the domain's records: ${failed(err)} svc tries again every 10 s; fix the provider with \`svc domains provider-set\`.`);
      }
    }
  }
  // Read after the publishing above: a domain torn down meanwhile is taken back in this pass.
  for (const d of domainRowsIn(db, ['tearing_down'])) {
    if (addedRecords(d).length === 0 || !d.dns_zone) continue;
    if (unreachable) {
      noteReason(db, d.domain_id, 'tearing_down', `svc could not remove the records it published: ${skipped()}`);
      continue;
    }
    try {
      await unpublish(provider, d.dns_zone, addedRecords(d));
      worked = recordDnsPublished(db, d.domain_id, 'tearing_down', d.dns_zone, [], false) || worked;
    } catch (err) {
      noteReason(db, d.domain_id, 'tearing_down', `svc could not remove the records it published: ${failed(err)} svc tries again every 10 s.`);
    }
  }
  return worked;
}

/**
 * Cloudflare Email Routing for a Cloudflare Worker edge, with the home's own Cloudflare DNS
 * provider (docs/edge.md, "Routing kept by the home"): for each paired Worker that names itself
 * (`managed_mx.worker`), the zone of each routed domain has Email Routing enabled — which makes
 * Cloudflare write its MX and SPF records there — and a rule sending each active address (and the
 * domain's self-test address) to the Worker. Runs when the addresses change and every 5 minutes;
 * rules are only added (a removed inbox's address is refused by the Worker, which routes only what
 * the home pushed). Only domains the owner applied, in the provider's zones. A failure is the
 * reason of the domain while it is being set up, and is tried again after a minute.
 */
async function syncEmailRouting({ db }: LoopContext, edges: { url: string }[], routedAddresses: string[], config: StoredDnsProvider | null): Promise<boolean> {
  if (!config || config.kind !== 'cloudflare') return false;
  const workers = [...new Set(edges.flatMap((e) => readEdgeReport(db, e.url)?.identity?.managed_mx?.worker ?? []))];
  if (workers.length === 0) return false;
  // Per zone, the addresses to route: of the domains the owner applied (svc sets up their DNS),
  // in the provider's zones when it names some.
  const byZone = new Map<string, string[]>();
  for (const { domain } of domainRowsIn(db, ROUTED_STATUSES)) {
    const zone = config.zones.length > 0 ? zoneOf(domain, config.zones) : domain;
    if (zone === null) continue;
    const wanted = [...routedAddresses.filter((a) => a.endsWith(`@${domain}`)), selftestAddress(domain)];
    byZone.set(zone, [...(byZone.get(zone) ?? []), ...wanted]);
  }
  let worked = false;
  for (const worker of workers) {
    const api = new CloudflareEmailRouting(config.api_token, config.api_base, worker);
    for (const [zone, addresses] of byZone) {
      const key = `${worker}\n${zone}`;
      const fingerprint = JSON.stringify([config.api_base, [...addresses].sort()]);
      const last = lastEmailRouting.get(key);
      if (last && last.fingerprint === fingerprint && Date.now() - last.at < (last.failed ? EMAIL_ROUTING_RETRY_MS : FULL_RECONCILE_MS)) continue;
      try {
        const applied = await api.apply(zone, { addresses, catchAll: false });
        lastEmailRouting.set(key, { fingerprint, at: Date.now(), failed: false });
        worked = worked || applied.enabled || applied.created.length > 0;
      } catch (err) {
        lastEmailRouting.set(key, { fingerprint, at: Date.now(), failed: true });
        const why = err instanceof DnsProviderError ? err.message : 'an unexpected answer.';
        for (const d of domainRowsIn(db, ['provisioning', 'verifying'])) {
          if (zoneFor(d.domain, config.zones) === zone) noteReason(db, d.domain_id, d.status, `svc could not route the addresses of ${zone} to the Worker ${worker} in Cloudflare Email Routing: ${why} svc tries again every minute.`);
        }
      }
    }
  }
  return worked;
}

/** Verifying domains: check DNS, then send the self-test; a self-test that never arrives fails. */
async function verifyDomains(ctx: LoopContext): Promise<boolean> {
  const { db } = ctx;
  let worked = false;
  for (const d of domainRowsIn(db, ['verifying'])) {
    if (d.selftest_sent_at) {
      if (Date.now() - Date.parse(d.selftest_sent_at) > SELFTEST_TIMEOUT_MS) {
        transition(db, d.domain_id, 'verifying', 'selftest_timeout', `The self-test message to ${selftestAddress(d.domain)} did not come back through the edge within ${SELFTEST_TIMEOUT_MS / 60_000} minutes. Check that the MX of ${d.domain} reaches the edge and that the edge is running, then run \`svc domains verify ${d.domain}\`.`);
        worked = true;
      }
      continue;
    }
    worked = true;
    const plan = await domainPlan(db, d.domain, { domainId: d.domain_id });
    const checks = await checkRecords(plan.records, checkServers(db));
    if (db.transaction(() => recordChecks(db, d, checks))() !== 'valid') continue;
    await sendSelftest(ctx, d, plan.dkim);
  }
  return worked;
}

async function sendSelftest(ctx: LoopContext, d: DomainRow, dkim: { selector: string; privateKey: string }): Promise<void> {
  const { db } = ctx;
  const config = readTransport(db);
  const transport: Transport | null = config.smtp ? new SmtpSmartHost(config.smtp, os.hostname()) : config.edges.length > 0 ? new EdgeRelay(db, config.edges) : null;
  if (!transport) return;
  const token = `${d.domain_id}.${randomBytes(16).toString('base64url')}`;
  const address = selftestAddress(d.domain);
  const ref = `selftest-${uuidv7()}`;
  const spec: MimeSpec = {
    from: address,
    to: [address],
    cc: [],
    replyTo: [],
    subject: `svc self-test for ${d.domain}`,
    text: `This message checks that mail for ${d.domain} leaves through svc's transport and comes back through its edge. It is never stored in an inbox.\n`,
    html: null,
    messageId: `<${ref}@${d.domain}>`,
    inReplyTo: null,
    references: [],
    date: new Date().toISOString(),
    headers: { [SELFTEST_HEADER]: token },
    dkim: { domainName: d.domain, keySelector: dkim.selector, privateKey: dkim.privateKey },
    attachments: [],
  };
  // Recorded before the handover, so a self-test that comes back at once always finds its token.
  if (!recordSelftestSent(db, d.domain_id, token)) return;
  const raw = (await ctx.runTask('composeMime', spec)) as Uint8Array;
  const handover = await transport.send({ ref, mailFrom: `svc-bounce+${ref}@${d.domain}`, recipients: [address], raw });
  if (transport instanceof SmtpSmartHost) transport.close();
  if (handover.kind === 'accepted' || handover.kind === 'unknown') return;
  const why = handover.kind === 'rejected' ? `was refused by the ${transport.name} (code ${handover.code ?? 'none'})` : `could not be handed to the ${transport.name} (${handover.error})`;
  transition(db, d.domain_id, 'verifying', 'selftest_refused', `The DNS records are right, but the self-test message ${why}. Check the transport (\`svc transport show\`), then run \`svc domains verify ${d.domain}\`.`);
}
