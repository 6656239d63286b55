/**
 * The provisioning loop (spec §8): every 10 s push the routing (active inboxes, their domains and
 * the home's public key) to the edge when it changed, and all of it every 5 minutes regardless.
 * Domain provisioning joins this loop with the domains capability.
 */
import { runLoop } from './run-loop.js';
import { readTransport } from '../../src/mail/transport.js';
import { EdgeClient } from '../../src/inbound/edge-client.js';
import { homeKeyPair } from '../../src/inbound/home-key.js';
import { desiredRouting } from '../../src/inbound/routing.js';

const FULL_RECONCILE_MS = 5 * 60_000;

let lastPushed = '';
let lastFullAt = 0;

runLoop(async ({ db }) => {
  const { edge } = readTransport(db);
  if (!edge) {
    lastPushed = '';
    return 'idle';
  }
  const { publicJwk } = await homeKeyPair(db);
  const routing = { recipient_public_key: publicJwk, ...desiredRouting(db) };
  const fingerprint = JSON.stringify([edge.url, routing]);
  if (fingerprint === lastPushed && Date.now() - lastFullAt < FULL_RECONCILE_MS) return 'idle';
  try {
    await new EdgeClient(edge.url, edge.token).putRouting(routing);
  } catch {
    return 'idle'; // the edge is down or refused; the next pass tries again
  }
  lastPushed = fingerprint;
  lastFullAt = Date.now();
  return 'busy';
});
