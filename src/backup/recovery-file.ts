/**
 * keys.json's `recovery` block: read for a backup, added or replaced by `svc key recovery`.
 * keys.json is read and written as a whole JSON object so fields this module does not know
 * (how the key-encryption key is read, for one) are kept as they are.
 */
import fs from 'node:fs';
import { homeFiles, writeFileAtomic } from '../keys/home.js';
import { parseKeysFile, type KeysFile } from '../keys/unlock.js';
import { newRecoveryCode, parseRecoveryBlock, wrapWithRecoveryCode, type RecoveryBlock } from './recovery.js';

export const RECOVERY_MESSAGE =
  'Write this recovery code down and keep it apart from this machine (a password manager or paper). svc shows it only now. It restores a backup (`svc restore`) on another machine; without it a backup cannot be opened.';

/** The stdout line a new code is shown in; one JSON object, like svc serve's other lines. */
export function recoveryCodeLine(code: string): Record<string, unknown> {
  return { event: 'home.recovery_code', recovery_code: code, message: RECOVERY_MESSAGE };
}

export function readKeys(home: string): KeysFile {
  return parseKeysFile(fs.readFileSync(homeFiles(home).keys, 'utf8'));
}

/** The home's recovery block, or null when it has none yet (a home made before recovery codes). */
export function recoveryBlockOf(keys: KeysFile): RecoveryBlock | null {
  return keys.recovery === undefined ? null : parseRecoveryBlock(keys.recovery);
}

export class RecoveryExists extends Error {}

/**
 * Makes a new recovery code for the home and stores its block in keys.json; returns the code.
 * A home that has one keeps it unless `rotate`: backups made before carry the old block and
 * keep needing the old code, so replacing it is a deliberate act.
 */
export function addRecoveryCode(home: string, dbKey: Buffer, rotate: boolean): string {
  const file = homeFiles(home).keys;
  const text = fs.readFileSync(file, 'utf8');
  const keys = parseKeysFile(text);
  if (recoveryBlockOf(keys) && !rotate) throw new RecoveryExists();
  const code = newRecoveryCode();
  const whole = JSON.parse(text) as Record<string, unknown>;
  whole.recovery = wrapWithRecoveryCode(code, dbKey, keys.home_id);
  writeFileAtomic(file, JSON.stringify(whole, null, 2) + '\n');
  return code;
}
