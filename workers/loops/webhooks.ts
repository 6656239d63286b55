/** The webhooks loop (spec §8). Its work arrives with a later capability; until then a pass finds nothing to do. */
import { runLoop } from './run-loop.js';

runLoop(async () => 'idle');
