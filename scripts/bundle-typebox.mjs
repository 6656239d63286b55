#!/usr/bin/env node
/**
 * Build step (after tsc): typebox as a few files for the service, and the emitted JavaScript
 * pointed at them. typebox ships as ~700 small ES modules; loading them was the largest single
 * item of the service's start-up (0.2 s of about 1 s on a 2-core machine), while one bundled file
 * loads in about 15 ms (docs/benchmarks.md, issue 19). The TypeScript sources keep importing
 * `typebox` (types, tests, editors); only dist/ is rewritten, so the tests that run the sources
 * use the package as published and the service runs the same code bundled.
 *
 * Writes dist/vendor/typebox*.mjs (one entry per imported path, shared code in chunks) and
 * replaces `from 'typebox'`, `from 'typebox/compile'` and `from 'typebox/value'` in dist/**.js with
 * relative paths to them. Fails when an emitted file imports a typebox path it does not know.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const vendor = path.join(dist, 'vendor');
/** Import path → bundle entry name. */
const ENTRIES = { typebox: 'typebox', 'typebox/compile': 'typebox-compile', 'typebox/value': 'typebox-value' };

fs.rmSync(vendor, { recursive: true, force: true });
await build({
  cwd: root,
  input: Object.fromEntries(Object.entries(ENTRIES).map(([from, name]) => [name, from])),
  logLevel: 'warn',
  output: { dir: vendor, format: 'esm', entryFileNames: '[name].mjs', chunkFileNames: 'typebox-shared-[hash].mjs' },
});

let rewritten = 0;
const unknown = [];
function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (file !== vendor) walk(file);
      continue;
    }
    if (!entry.name.endsWith('.js')) continue;
    const text = fs.readFileSync(file, 'utf8');
    if (!text.includes("'typebox")) continue;
    const out = text.replace(/(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)'(typebox(?:\/[a-z]+)?)'/g, (match, lead, spec) => {
      const name = ENTRIES[spec];
      if (!name) {
        unknown.push(`${path.relative(root, file)}: ${spec}`);
        return match;
      }
      let rel = path.relative(path.dirname(file), path.join(vendor, `${name}.mjs`)).split(path.sep).join('/');
      if (!rel.startsWith('.')) rel = `./${rel}`;
      return `${lead}'${rel}'`;
    });
    if (out !== text) {
      fs.writeFileSync(file, out);
      rewritten++;
    }
  }
}
walk(dist);
if (unknown.length > 0) {
  console.error(`bundle-typebox: typebox paths with no bundle entry (add them to ENTRIES):\n${unknown.join('\n')}`);
  process.exit(1);
}
console.log(`bundle-typebox: ${Object.keys(ENTRIES).length} entries in dist/vendor, ${rewritten} files pointed at them`);
