/**
 * The two protected resources (spec §5.3, §9): `<origin>/mcp` and `<origin>/v0`, where the origin
 * is the loopback listener's or the tunnel's current public one. A grant is bound to the exact
 * resource it was issued for, so a loopback token never works through the tunnel, and changing
 * the remote hostname leaves tokens issued for the old one with no origin that accepts them.
 */
import type { Db } from '../db/open.js';
import type { Audience } from '../auth/principal.js';
import { tunnelOrigin } from '../remote/settings.js';

export const AUDIENCES: readonly Audience[] = ['/mcp', '/v0'];

/**
 * The loopback listener's origin, for the tunnel listener's app, which is built later in the same
 * process over the same database and must send the owner's browser to the loopback consent.
 */
const loopbackOrigins = new WeakMap<Db, () => string>();

export function noteLoopbackOrigin(db: Db, origin: () => string): void {
  loopbackOrigins.set(db, origin);
}

export function loopbackOrigin(db: Db): string | null {
  return loopbackOrigins.get(db)?.() || null;
}

/** Origins a resource may name right now: the loopback origin and, while enabled, the tunnel's. */
export function currentOrigins(db: Db): string[] {
  return [loopbackOrigin(db), tunnelOrigin(db)].filter((o): o is string => o !== null && o !== '');
}

export interface Resource {
  resource: string;
  origin: string;
  audience: Audience;
}

/** The resource if it is exactly one of the current `<origin>/mcp` or `<origin>/v0`; else null. */
export function currentResource(db: Db, resource: string): Resource | null {
  for (const origin of currentOrigins(db)) {
    for (const audience of AUDIENCES) if (resource === origin + audience) return { resource, origin, audience };
  }
  return null;
}
