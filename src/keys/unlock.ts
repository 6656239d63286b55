/**
 * Home unlock: the random 32-byte database key is wrapped (AES-256-GCM) with a key-encryption key
 * kept in the OS credential store; keys.json holds only the wrapped form.
 */
import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { StartupError } from './startup-error.js';
import { homeFiles, prepareHome, writeFileAtomic } from './home.js';
import { readKek, storeKek } from './credential-store.js';
import { newRecoveryCode, wrapWithRecoveryCode, type RecoveryBlock } from '../backup/recovery.js';
import { DEFAULT_CREDENTIAL_KEY, readSealedKek, sealKek, type CredentialKey } from './systemd-creds.js';

/** Where the key-encryption key lives: the OS credential store, or a systemd encrypted credential (src/keys/systemd-creds.ts). */
export type UnlockMethod = 'keyring' | 'systemd-creds';
export const UNLOCK_METHODS: readonly UnlockMethod[] = ['keyring', 'systemd-creds'];

/** How a new home keeps its KEK; an existing home says so in keys.json. */
export interface NewHomeOptions {
  unlock?: UnlockMethod;
  /** What seals a systemd credential (`systemd-creds encrypt --with-key=`). */
  credentialKey?: CredentialKey;
}

export interface KeysFile {
  version: 1;
  home_id: string;
  wrapped_key: string;
  nonce: string;
  alg: 'A256GCM';
  created_at: string;
  /** The database key wrapped by the recovery code (src/backup/recovery.ts); absent in homes made before it. */
  recovery?: RecoveryBlock;
  /** Absent in homes made before the field existed: those use the keyring. */
  unlock?: UnlockMethod;
}

const corrupt = (detail: string) =>
  new StartupError('keys_file_corrupt', 'KeysFileCorrupt', `keys.json is damaged: ${detail}.`, 'Restore keys.json from the backup that belongs with this svc.db (a home backup is a copy of the whole directory).');

const wrongKey = () =>
  new StartupError(
    'database_key_invalid',
    'DatabaseKeyInvalid',
    'The key in the credential store does not open this home (keys.json or svc.db belongs to another home).',
    'Restore keys.json and svc.db together from the same home backup, on the machine whose credential store holds its key.',
  );

function aad(homeId: string): Buffer {
  return Buffer.from(`svc keys.json v1 ${homeId}`);
}

export function wrap(kek: Buffer, dbKey: Buffer, homeId: string): KeysFile {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', kek, nonce);
  cipher.setAAD(aad(homeId));
  const body = Buffer.concat([cipher.update(dbKey), cipher.final(), cipher.getAuthTag()]);
  return { version: 1, home_id: homeId, wrapped_key: body.toString('base64'), nonce: nonce.toString('base64'), alg: 'A256GCM', created_at: new Date().toISOString() };
}

export function parseKeysFile(text: string): KeysFile {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw corrupt('it is not valid JSON');
  }
  const k = data as Partial<KeysFile> | null;
  if (!k || typeof k !== 'object') throw corrupt('it is not an object');
  if (k.version !== 1 || k.alg !== 'A256GCM') throw corrupt('unknown version or algorithm');
  if (typeof k.home_id !== 'string' || typeof k.wrapped_key !== 'string' || typeof k.nonce !== 'string') throw corrupt('fields are missing');
  if (k.unlock !== undefined && !UNLOCK_METHODS.includes(k.unlock)) throw corrupt('unknown unlock method');
  if (Buffer.from(k.nonce, 'base64').length !== 12 || Buffer.from(k.wrapped_key, 'base64').length !== 48) throw corrupt('the wrapped key has the wrong length');
  return k as KeysFile;
}

function unwrap(kek: Buffer, keys: KeysFile): Buffer {
  const body = Buffer.from(keys.wrapped_key, 'base64');
  try {
    const decipher = createDecipheriv('aes-256-gcm', kek, Buffer.from(keys.nonce, 'base64'));
    decipher.setAAD(aad(keys.home_id));
    decipher.setAuthTag(body.subarray(32));
    return Buffer.concat([decipher.update(body.subarray(0, 32)), decipher.final()]);
  } catch {
    throw wrongKey();
  } finally {
    kek.fill(0);
  }
}

/** Whether `kek` unwraps this keys.json (`svc doctor`); the KEK and the database key are zeroed either way. */
export function opensKeys(kek: Buffer, keys: KeysFile): boolean {
  try {
    unwrap(kek, keys).fill(0);
    return true;
  } catch {
    return false;
  }
}

export interface Unlocked {
  home: string;
  homeId: string;
  /** The raw database key. Owned by the supervisor; zeroed on shutdown. */
  dbKey: Buffer;
  created: boolean;
  /** Only when the home was just created: the recovery code, to show once (never stored). */
  recoveryCode?: string;
}

/**
 * Opens the home's key. With `init`, a home that has no keys yet gets them; an existing one is
 * unlocked normally and nothing is overwritten.
 */
export function unlockHome(home: string, init: boolean, newHome: NewHomeOptions = {}): Unlocked {
  prepareHome(home, init);
  const files = homeFiles(home);
  const hasKeys = fs.existsSync(files.keys);
  const hasDb = fs.existsSync(files.db);

  if (!hasKeys) {
    if (hasDb) throw corrupt('the file is missing next to an existing svc.db');
    if (!init) {
      throw new StartupError('not_initialized', 'HomeNotInitialized', `The home ${home} has not been initialized.`, 'Run `svc serve --init` once to create the home and its keys.');
    }
    const dbKey = randomBytes(32);
    const kek = randomBytes(32);
    const homeId = randomUUID();
    const unlock = newHome.unlock ?? 'keyring';
    if (unlock === 'systemd-creds') sealKek(home, kek, newHome.credentialKey ?? DEFAULT_CREDENTIAL_KEY);
    else storeKek(home, kek);
    const recoveryCode = newRecoveryCode();
    const keys: KeysFile = { ...wrap(kek, dbKey, homeId), recovery: wrapWithRecoveryCode(recoveryCode, dbKey, homeId) };
    if (unlock !== 'keyring') keys.unlock = unlock;
    kek.fill(0);
    try {
      writeFileAtomic(files.keys, JSON.stringify(keys, null, 2) + '\n');
    } catch {
      throw new StartupError('key_storage_unavailable', 'KeysFileNotWritable', 'keys.json could not be written to the home.', 'Free disk space and make sure the home directory is writable, then run `svc serve --init` again.');
    }
    return { home, homeId, dbKey, created: true, recoveryCode };
  }

  let text: string;
  try {
    text = fs.readFileSync(files.keys, 'utf8');
  } catch {
    throw new StartupError('home_unavailable', 'KeysFileUnreadable', 'keys.json cannot be read.', 'Check that the home directory and keys.json belong to this user (mode 0700/0600).');
  }
  const keys = parseKeysFile(text);
  const kek = keys.unlock === 'systemd-creds' ? readSealedKek(home) : readKek(home);
  if (!kek) {
    throw new StartupError(
      'keychain_entry_missing',
      'CredentialStoreItemMissing',
      'The credential store item that unlocks this home was deleted; the database cannot be opened.',
      'Restore the credential store (login keyring / keychain) from a backup of this user account. Without it the mail in this home cannot be recovered; to start over, move the home away and run `svc serve --init`.',
    );
  }
  return { home, homeId: keys.home_id, dbKey: unwrap(kek, keys), created: false };
}
