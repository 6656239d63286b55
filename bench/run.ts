/** `npm run bench`: runs every benchmark and prints one JSON line each (figures, never gates). */
import { benchStartup } from './startup.js';

await benchStartup();
