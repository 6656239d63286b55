// Loaded into every test process (tap.yml `node-arg`). tap's process tracker (@tapjs/processinfo,
// for coverage, which this suite does not collect) loads itself into every process a test starts,
// each `svc serve` and each CLI run: through NODE_OPTIONS, and again through a hook on every
// spawn (process-on-spawn) that puts it back. It cost about 0.25 s of CPU a process, over a
// thousand processes a suite. The test's own process keeps it; the processes it starts do not.
import { createRequire } from 'node:module';

const options = process.env.NODE_OPTIONS;
if (options?.includes('@tapjs/processinfo')) {
  const kept = options
    .split(/\s+/)
    .filter((option) => option && !option.includes('@tapjs/processinfo'))
    .join(' ');
  if (kept) process.env.NODE_OPTIONS = kept;
  else delete process.env.NODE_OPTIONS;
  try {
    // One hook list per process (a global), whichever copy of the package is loaded.
    createRequire(import.meta.url)('process-on-spawn').removeAllListeners();
  } catch {
    // tap no longer uses it: nothing to undo.
  }
}
