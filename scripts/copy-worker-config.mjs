// Copies the Cloudflare Worker's wrangler config next to the built Worker (dist/src/edge/cloudflare/),
// pointing `main` at worker.js, so an installed package can `wrangler deploy` it (docs/edge.md).
import fs from 'node:fs';
const from = new URL('../src/edge/cloudflare/wrangler.jsonc', import.meta.url);
const to = new URL('../dist/src/edge/cloudflare/wrangler.jsonc', import.meta.url);
fs.writeFileSync(to, fs.readFileSync(from, 'utf8').replace('"main": "worker.ts"', '"main": "worker.js"'));
