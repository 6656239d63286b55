/** `npm run bench`: runs every benchmark and prints one JSON line each (figures, never gates). */
import { benchStartup } from './startup.js';
import { benchReadApi } from './read-api.js';
import { benchIngest } from './ingest.js';
import { benchSend } from './send.js';
import { benchWebhooks } from './webhooks.js';

const only = process.argv[2];
if (!only || only === 'startup') await benchStartup();
if (!only || only === 'read-api') await benchReadApi();
if (!only || only === 'ingest') await benchIngest();
if (!only || only === 'send') await benchSend();
if (!only || only === 'webhooks') await benchWebhooks();
