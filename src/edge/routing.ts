/**
 * The routing table: which recipients this edge accepts mail for, and the home key it seals
 * to. The home pushes it with `PUT /routing`; it is persisted atomically so a restarted edge
 * keeps accepting mail before the home pushes again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { writeFileAtomic } from '../keys/home.js';
import { MAX_ROUTED_ADDRESSES, MAX_ROUTED_DOMAINS } from './limits.js';
import { prepareSealingKey, X25519PublicJwk, type SealingKey } from './sealed.js';
import { fsyncDirectory } from './durable-files.js';

/** The local part every routed domain accepts for the home's domain self-test (spec §4.12). */
export const SELFTEST_LOCAL_PART = 'svc-selftest';

/**
 * VERP return paths of outbound mail: `svc-bounce+<tag>@<routed domain>` (verp.ts). Any such
 * address is accepted at RCPT, so a sender cannot probe which tags are valid; only a report whose
 * tag verifies becomes a delivery report.
 */
export const BOUNCE_LOCAL_PREFIX = 'svc-bounce+';
/** Where feedback loops (ARF complaint reports) are pointed: `svc-feedback@<routed domain>`. */
export const FEEDBACK_LOCAL_PART = 'svc-feedback';

/** True for the local parts whose mail is a delivery report for the relay, never stored as mail. */
export function isReportLocalPart(local: string): boolean {
  const lower = local.toLowerCase();
  return lower === FEEDBACK_LOCAL_PART || (lower.startsWith(BOUNCE_LOCAL_PREFIX) && lower.length > BOUNCE_LOCAL_PREFIX.length);
}


const Domain = Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$' });
const Address = Type.String({ minLength: 3, maxLength: 320, pattern: '^[^\\s@<>"]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$' });

/** Body of `PUT /routing`. */
export const RoutingUpdate = Type.Object(
  {
    recipient_public_key: X25519PublicJwk,
    domains: Type.Array(Domain, { maxItems: MAX_ROUTED_DOMAINS }),
    addresses: Type.Array(Address, { maxItems: MAX_ROUTED_ADDRESSES }),
  },
  { additionalProperties: false },
);
export type RoutingUpdate = Static<typeof RoutingUpdate>;

/** What `GET /routing` answers and what routing.json holds (plus `version`). */
export const Routing = Type.Object({
  recipient_public_key: X25519PublicJwk,
  /** RFC 7638 thumbprint of the key: the `kid` of every object sealed while this routing applies. */
  key_id: Type.String(),
  domains: Type.Array(Type.String()),
  addresses: Type.Array(Type.String()),
  updated_at: Type.String(),
});
export type Routing = Static<typeof Routing>;

const StoredRouting = Type.Intersect([Type.Object({ version: Type.Literal(1) }), Routing]);

/** How a routed recipient is handled: stored in the buffer as mail, or read by the relay as a report. */
export type RecipientKind = 'mail' | 'report';

/** The outcome of RCPT TO for one address. */
export type RecipientDecision =
  | { accept: true; address: string }
  | { accept: false; code: 451 | 550; message: string };

/**
 * Extra local parts a routed domain accepts as mail (stored like a routed address). The VERP
 * return path and the feedback address are built in (`kindOf` → `report`) and need no hook.
 */
export type ReportAddressPolicy = (localPart: string, domain: string) => boolean;

interface ActiveRouting {
  routing: Routing;
  sealing: SealingKey;
  addresses: Set<string>;
  domains: Set<string>;
}

export class RoutingCorrupt extends Error {}

export class RoutingTable {
  private active: ActiveRouting | null = null;
  private readonly file: string;
  private readonly changeListeners: (() => void)[] = [];

  constructor(
    dataDir: string,
    private readonly reportAddress: ReportAddressPolicy = () => false,
  ) {
    this.file = path.join(dataDir, 'routing.json');
  }

  /** Reads routing.json when it exists; a damaged file stops the edge rather than bouncing mail. */
  async load(): Promise<void> {
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    let stored: unknown;
    try {
      stored = JSON.parse(text);
    } catch {
      stored = null;
    }
    if (!Value.Check(StoredRouting, stored)) throw new RoutingCorrupt(`${this.file} is damaged.`);
    const { version: _version, ...routing } = stored;
    this.active = await activate(routing);
  }

  get current(): Routing | null {
    return this.active?.routing ?? null;
  }

  /** The prepared key of the current routing (sealing uses it for every message). */
  get sealingKey(): SealingKey | null {
    return this.active?.sealing ?? null;
  }

  /** Replaces the table; persisted (temp + fsync + rename + directory fsync) before it takes effect. */
  async replace(update: RoutingUpdate): Promise<Routing> {
    const routing: Routing = {
      recipient_public_key: update.recipient_public_key,
      key_id: '',
      domains: unique(update.domains),
      addresses: unique(update.addresses),
      updated_at: new Date().toISOString(),
    };
    const next = await activate(routing);
    const previous = this.active?.routing;
    // The home pushes every 10 s; an unchanged table is not rewritten (or re-dated).
    if (previous && sameRouting(previous, next.routing)) return previous;
    writeFileAtomic(this.file, JSON.stringify({ version: 1, ...next.routing }, null, 2) + '\n');
    fsyncDirectory(path.dirname(this.file));
    this.active = next;
    for (const listener of this.changeListeners) listener();
    return next.routing;
  }

  /** Called after each replace that changed the table (the relay re-checks mail held for routing). */
  onChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  /**
   * Whether the domain of `address` is routed here, whatever its local part. An address that is
   * not hosted on a routed domain may be an inbox the home just created and has not pushed yet.
   */
  routesDomainOf(address: string): boolean {
    const active = this.active;
    const at = address.lastIndexOf('@');
    return active !== null && at > 0 && active.domains.has(address.slice(at + 1).toLowerCase());
  }

  decide(recipient: string): RecipientDecision {
    if (!this.active) return { accept: false, code: 451, message: 'This edge has no routing yet; try again later' };
    const address = recipient.toLowerCase();
    if (this.kindOf(address) === null) return { accept: false, code: 550, message: `Mailbox unavailable: ${address} is not hosted here` };
    return { accept: true, address };
  }

  /**
   * Whether this edge hosts `recipient`, and how: a routed address, `svc-selftest@` or a hook
   * address of a routed domain is `mail`; the VERP return path and feedback address of a routed
   * domain are `report`. null when it is not hosted here (or before any routing).
   */
  kindOf(recipient: string): RecipientKind | null {
    const active = this.active;
    if (!active) return null;
    const address = recipient.toLowerCase();
    const at = address.lastIndexOf('@');
    if (at <= 0) return null;
    if (active.addresses.has(address)) return 'mail';
    const local = address.slice(0, at);
    const domain = address.slice(at + 1);
    if (!active.domains.has(domain)) return null;
    if (isReportLocalPart(local)) return 'report';
    return local === SELFTEST_LOCAL_PART || this.reportAddress(local, domain) ? 'mail' : null;
  }
}

async function activate(routing: Routing): Promise<ActiveRouting> {
  const sealing = await prepareSealingKey(routing.recipient_public_key);
  const withId = { ...routing, key_id: sealing.keyId };
  return { routing: withId, sealing, addresses: new Set(withId.addresses), domains: new Set(withId.domains) };
}

/** Lower-cased, de-duplicated, sorted: matching is case-insensitive and the stored form is canonical. */
function unique(values: string[]): string[] {
  return [...new Set(values.map((v) => v.toLowerCase()))].sort();
}

function sameRouting(a: Routing, b: Routing): boolean {
  const canonical = (r: Routing) => JSON.stringify([r.key_id, r.recipient_public_key, r.domains, r.addresses]);
  return canonical(a) === canonical(b);
}
