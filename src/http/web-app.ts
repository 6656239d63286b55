/**
 * Where the owner web app's built files are (`npm run build` writes web/dist). When they are
 * missing, svc serves the API alone and the OAuth consent screen is `not_supported` (spec §5.3).
 */
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../cli/package-root.js';

export const WEB_APP_DIR = path.join(packageRoot, 'web', 'dist');

/** The built web app's directory, or null when the app was not built into this package. */
export function webAppDir(): string | null {
  // Test-only switch (docs/testing.md): behave as a package built without the web app.
  if (process.env.SVC_TEST_NO_WEB_APP === '1') return null;
  return fs.existsSync(path.join(WEB_APP_DIR, 'index.html')) ? WEB_APP_DIR : null;
}
