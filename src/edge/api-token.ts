/** The edge API token: made once on first start, kept in `<data>/api-token` (0600), read back on every start. */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../keys/home.js';
import { ensurePrivateDir, fsyncDirectory, PRIVATE_FILE_MODE } from './durable-files.js';

export const API_TOKEN_FILE = 'api-token';
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{32,512}$/;

export class ApiTokenUnreadable extends Error {}

export function loadOrCreateApiToken(dataDir: string): { token: string; file: string; created: boolean } {
  const file = path.join(dataDir, API_TOKEN_FILE);
  let existing: string | null = null;
  try {
    existing = fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new ApiTokenUnreadable(`${file} cannot be read.`);
  }
  if (existing !== null) {
    if (!TOKEN_SHAPE.test(existing)) throw new ApiTokenUnreadable(`${file} does not hold a valid token.`);
    fs.chmodSync(file, PRIVATE_FILE_MODE);
    return { token: existing, file, created: false };
  }
  ensurePrivateDir(dataDir);
  const token = `edge_${randomBytes(32).toString('base64url')}`;
  writeFileAtomic(file, token + '\n');
  fsyncDirectory(dataDir);
  return { token, file, created: true };
}
