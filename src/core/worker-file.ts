/** Where a worker thread's entry module is, next to the module that starts it. */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The file of `relative` (written with `.js`, as imports are) from the module at `base`
 * (its `import.meta.url`), with the extension of `base` itself: `.js` in the build, `.ts` when
 * the tests run the sources through a TypeScript loader. A worker's entry is imported by the
 * worker library, not by a TypeScript file, so a loader would not map `.js` to `.ts` for it.
 */
export function workerFile(relative: string, base: string): string {
  const own = path.extname(fileURLToPath(base));
  return fileURLToPath(new URL(relative.replace(/\.js$/, own), base));
}
