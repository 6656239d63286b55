/**
 * The webhooks loop (spec §8): every second. Delivery arrives with a later capability; for now a
 * pass only keeps the event log within its retention (spec §6.3), at most once an hour.
 */
import { runLoop } from './run-loop.js';
import { EventPruneSchedule } from '../../src/events/retention.js';

const retention = new EventPruneSchedule();

runLoop(async ({ db }) => {
  retention.pruneIfDue(db);
  return 'idle';
});
