/**
 * `npm start` skips the build when no build input changed (issue 33 §7): scripts/build-if-changed.mjs
 * fingerprints the inputs (path, size, mtime) and `npm run build` records the fingerprint. Checked
 * on a scratch tree (SVC_BUILD_ROOT) so the checkout itself is never touched.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { repoRoot, tempDir } from '../helpers/svc.js';

const script = path.join(repoRoot, 'scripts', 'build-if-changed.mjs');
const run = (root: string, arg: string) => execFileSync(process.execPath, [script, arg], { env: { ...process.env, SVC_BUILD_ROOT: root }, encoding: 'utf8' }).trim();

function scratchTree(): string {
  const root = tempDir('svc-build-');
  for (const [file, text] of [
    ['src/cli/main.ts', 'export {};'],
    ['web/src/app.tsx', 'export {};'],
    ['package.json', '{}'],
    ['dist/src/cli/main.js', ''],
    ['web/dist/index.html', ''],
  ]) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

t.test('a tree never stamped is stale; after the stamp it is fresh', async (t) => {
  const root = scratchTree();
  t.equal(run(root, '--check'), 'stale');
  run(root, '--stamp');
  t.equal(run(root, '--check'), 'fresh');
});

t.test('a changed, added or removed input makes it stale again', async (t) => {
  const root = scratchTree();
  run(root, '--stamp');
  fs.writeFileSync(path.join(root, 'src/cli/main.ts'), 'export const changed = 1;');
  t.equal(run(root, '--check'), 'stale', 'changed source');
  run(root, '--stamp');
  fs.writeFileSync(path.join(root, 'web/src/new.tsx'), 'export {};');
  t.equal(run(root, '--check'), 'stale', 'added web source');
  run(root, '--stamp');
  fs.rmSync(path.join(root, 'web/src/new.tsx'));
  t.equal(run(root, '--check'), 'stale', 'removed web source');
  run(root, '--stamp');
  fs.writeFileSync(path.join(root, 'dist/unrelated.txt'), 'x');
  t.equal(run(root, '--check'), 'fresh', 'an output is not an input');
});

t.test('a missing build output is stale whatever the stamp says', async (t) => {
  const root = scratchTree();
  run(root, '--stamp');
  fs.rmSync(path.join(root, 'web/dist'), { recursive: true });
  t.equal(run(root, '--check'), 'stale');
});
