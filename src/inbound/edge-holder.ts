/**
 * Which paired edge holds an object, for the paths that know only its key (the quarantine's
 * retry and delete, docs/inbound.md): object keys are UUIDv7s each edge makes, so at most one
 * edge holds a given key. The edges are asked in list order.
 */
import { EdgeClient, EdgeUnavailable } from './edge-client.js';
import type { EdgeSettings } from '../mail/transport.js';

/**
 * The client of the edge that holds `key`; null when every edge answered that it does not.
 * Throws EdgeUnavailable when none holds it and at least one could not be asked (it may be there).
 */
export async function edgeHolding(edges: readonly EdgeSettings[], key: string): Promise<EdgeClient | null> {
  let unreachable: EdgeUnavailable | null = null;
  for (const edge of edges) {
    const client = new EdgeClient(edge.url, edge.token);
    try {
      if (await client.hasObject(key)) return client;
    } catch (err) {
      if (!(err instanceof EdgeUnavailable)) throw err;
      unreachable = err;
    }
  }
  if (unreachable) throw unreachable;
  return null;
}
