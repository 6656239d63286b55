/** The key-encryption key lives in the OS credential store (Secret Service, Keychain, Credential Manager). */
import { createRequire } from 'node:module';
import type { Entry } from '@napi-rs/keyring';
import { StartupError } from './startup-error.js';
import { homeSuffix } from './home.js';

const SERVICE = 'svc';

export const keychainAccount = (home: string) => `home-${homeSuffix(home)}`;

const unavailable = () =>
  new StartupError(
    'keychain_unavailable',
    'CredentialStoreUnavailable',
    'The OS credential store is locked, missing or refused access.',
    process.platform === 'linux'
      ? 'Run svc inside a desktop session with an unlocked keyring, or on a headless machine use `scripts/with-keyring.sh` (private D-Bus session + `gnome-keyring-daemon --unlock`; Debian packages dbus and gnome-keyring).'
      : 'Unlock the login keychain / credential manager for this user and try again.',
  );

/**
 * On Linux the Secret Service is required explicitly: the library would otherwise fall back to
 * the kernel keyring, which forgets the key at reboot.
 */
const ENTRY_OPTIONS = { linux: { store: 'secret-service' as const } };

/**
 * The native binding is loaded on first use: a CLI command that only talks to the running
 * service asks the credential store only when nothing answers, and loading it cost ~40 ms.
 */
let keyring: typeof import('@napi-rs/keyring') | null = null;

function entry(home: string): Entry {
  keyring ??= createRequire(import.meta.url)('@napi-rs/keyring') as typeof import('@napi-rs/keyring');
  return new keyring.Entry(SERVICE, keychainAccount(home), ENTRY_OPTIONS);
}

/** Returns the stored key-encryption key, or null when the item does not exist. */
export function readKek(home: string): Buffer | null {
  let value: number[] | null;
  try {
    value = entry(home).getSecret();
  } catch {
    throw unavailable();
  }
  if (value === null) return null;
  const kek = Buffer.from(value);
  value.fill(0);
  return kek.length === 32 ? kek : null;
}

export function storeKek(home: string, kek: Buffer): void {
  try {
    entry(home).setSecret(kek);
  } catch {
    throw unavailable();
  }
}

export function deleteKek(home: string): boolean {
  try {
    return entry(home).deleteCredential();
  } catch {
    throw unavailable();
  }
}
