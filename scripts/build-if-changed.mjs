#!/usr/bin/env node
// `npm start`: builds only when a build input changed since the last successful build, so a
// restart takes about a second instead of a full TypeScript and Vite build (issue 33 §7).
// The fingerprint is every input's path, size and modification time; it is stored in
// dist/.build-inputs after `npm run build` succeeds. Delete dist/ to force a build.
//
//   node scripts/build-if-changed.mjs           build when stale (npm start)
//   node scripts/build-if-changed.mjs --stamp   record the inputs as built (the end of npm run build)
//   node scripts/build-if-changed.mjs --check   print fresh or stale, build nothing
// SVC_BUILD_ROOT names another checkout (tests).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = process.env.SVC_BUILD_ROOT ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const INPUTS = ['src', 'workers', 'bin', 'web/src', 'web/index.html', 'web/public', 'web/vite.config.ts', 'web/tsconfig.json', 'tsconfig.json', 'package.json', 'package-lock.json', 'scripts/bundle-typebox.mjs'];
const STAMP = path.join(root, 'dist', '.build-inputs');

function fingerprint() {
  const hash = createHash('sha256');
  const visit = (rel) => {
    const full = path.join(root, rel);
    let stat;
    try {
      stat = fs.statSync(full);
    } catch {
      return; // an optional input that does not exist
    }
    if (stat.isDirectory()) {
      for (const name of fs.readdirSync(full).sort()) visit(path.join(rel, name));
      return;
    }
    hash.update(`${rel}\0${stat.size}\0${stat.mtimeMs}\n`);
  };
  for (const input of INPUTS) visit(input);
  return hash.digest('hex');
}

const now = fingerprint();
const mode = process.argv[2] ?? 'build';
if (mode === '--stamp') {
  fs.mkdirSync(path.dirname(STAMP), { recursive: true });
  fs.writeFileSync(STAMP, now);
  process.exit(0);
}
const built = fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'main.js')) && fs.existsSync(path.join(root, 'web', 'dist', 'index.html'));
const fresh = built && fs.existsSync(STAMP) && fs.readFileSync(STAMP, 'utf8') === now;
if (mode === '--check') {
  process.stdout.write(fresh ? 'fresh\n' : 'stale\n');
} else if (fresh) {
  process.stderr.write('svc: the build is up to date (nothing changed since the last build).\n');
} else {
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
}
