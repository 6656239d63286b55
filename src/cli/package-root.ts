/** Where the running svc package lives, and whether it is a source checkout or a release package. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/src/cli/ → the package root. */
export const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** A source checkout carries the TypeScript project; a release package (npm pack) does not. */
export function isSourceCheckout(root = packageRoot): boolean {
  return fs.existsSync(path.join(root, 'tsconfig.json')) || fs.existsSync(path.join(root, '.git'));
}
