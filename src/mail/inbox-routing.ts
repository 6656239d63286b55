/**
 * An inbox receives mail from the moment its create call has answered (issue 17 §1). With the
 * built-in edge (`svc serve --local-edge`) the create path pushes the routing itself before it
 * answers: the edge is on loopback in this process, so it costs one local request. A standalone
 * edge is left to the provisioning loop (woken by every inbox change) and to the relay, which
 * holds this home's mail for an address of a routed domain it does not know yet
 * (src/edge/relay.ts ROUTING_HOLD_MS) instead of bouncing it.
 */
import type { Db } from '../db/open.js';
import { EdgeClient } from '../inbound/edge-client.js';
import { homeKeyPair } from '../inbound/home-key.js';
import { desiredRouting } from '../inbound/routing.js';
import { localEdgeToken, readTransport, storeEdgeReport } from './transport.js';

/**
 * The create answer waits at most this long for the local edge. It answers in milliseconds; one
 * that does not is stuck, and then the provisioning loop and the relay's hold take over.
 */
export const ROUTING_PUSH_WAIT_MS = 2_000;

/** The push that has not read the inboxes yet: every create committed before it starts is in it. */
let pendingPush: Promise<void> | null = null;
/** Pushes run one at a time, so an older table never lands after a newer one from here. */
let pushChain: Promise<void> = Promise.resolve();

/**
 * Resolves once the local edge routes every inbox committed before the call (or after
 * ROUTING_PUSH_WAIT_MS, or at once without a local edge). Never throws: the inbox exists either way.
 */
export async function routeToLocalEdge(db: Db): Promise<void> {
  const localToken = localEdgeToken(db);
  const edge = readTransport(db).edges.find((e) => e.token === localToken);
  if (!edge) return;
  // Concurrent creates share the next push instead of each sending the whole table.
  pendingPush ??= pushChain.then(() => {
    pendingPush = null;
    return pushRouting(db, edge);
  });
  const push = pendingPush;
  pushChain = push.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ROUTING_PUSH_WAIT_MS);
    timer.unref();
  });
  await Promise.race([push.catch(() => undefined), gaveUp]);
  clearTimeout(timer);
}

async function pushRouting(db: Db, edge: { url: string; token: string }): Promise<void> {
  // Read first, synchronously: everything committed before this push started is in the table.
  const routing = desiredRouting(db);
  const { publicJwk } = await homeKeyPair(db);
  storeEdgeReport(db, edge.url, await new EdgeClient(edge.url, edge.token).putRouting({ recipient_public_key: publicJwk, ...routing }));
}
