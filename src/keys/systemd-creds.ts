/**
 * The second source of the key-encryption key, for headless servers: a systemd encrypted
 * credential. `svc init --unlock systemd-creds` seals the KEK with `systemd-creds encrypt` (the
 * machine's host key and/or TPM2) into `<home>/svc-kek.cred`; the system unit's
 * `LoadCredentialEncrypted=` makes systemd decrypt it at start into `$CREDENTIALS_DIRECTORY/svc-kek`,
 * a private in-memory file only this service can read. No keyring daemon, D-Bus or TTY is involved,
 * the KEK is never in clear on disk, and the sealed file opens on no other machine.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { StartupError } from './startup-error.js';

/** The credential's name: embedded in the sealed file and the file name under $CREDENTIALS_DIRECTORY. */
export const KEK_CREDENTIAL_NAME = 'svc-kek';
export const KEK_BYTES = 32;

/** What seals the credential (`systemd-creds encrypt --with-key=`). */
export const CREDENTIAL_KEYS = ['host', 'tpm2', 'host+tpm2'] as const;
export type CredentialKey = (typeof CREDENTIAL_KEYS)[number];
export const DEFAULT_CREDENTIAL_KEY: CredentialKey = 'host';

/** systemd-creds can wait on a TPM; it must not hang startup forever. */
const SYSTEMD_CREDS_TIMEOUT_MS = 30_000;
/** A sealed 32-byte credential is a few hundred bytes of base64; anything far larger is not ours. */
const MAX_OUTPUT_BYTES = 64 * 1024;

/** The sealed credential in the home: what `LoadCredentialEncrypted=svc-kek:<this>` points at. */
export function kekCredentialFile(home: string): string {
  return path.join(home, `${KEK_CREDENTIAL_NAME}.cred`);
}

const sealFailed = (detail: string) =>
  new StartupError(
    'key_storage_unavailable',
    'SystemdCredentialNotSealed',
    `systemd-creds could not seal the home's key: ${detail}`,
    'Run `svc init` as root on the machine that will run the service (the host key is /var/lib/systemd/credential.secret; `systemd-creds setup` creates it), or pick another key with --with-key host|tpm2|host+tpm2.',
  );

/** systemd-creds prints one short line on failure; it never holds the secret (the secret goes through stdin/stdout). */
function firstStderrLine(stderr: Buffer | string | null | undefined): string {
  return String(stderr ?? '').trim().split('\n')[0]?.trim() ?? '';
}

/** Seals `kek` into `<home>/svc-kek.cred` (0600); the KEK travels through a pipe, never a file. */
export function sealKek(home: string, kek: Buffer, withKey: CredentialKey): void {
  const file = kekCredentialFile(home);
  const tmp = `${file}.tmp-${process.pid}`;
  const result = spawnSync('systemd-creds', ['encrypt', `--with-key=${withKey}`, `--name=${KEK_CREDENTIAL_NAME}`, '-', tmp], {
    input: kek,
    timeout: SYSTEMD_CREDS_TIMEOUT_MS,
    maxBuffer: MAX_OUTPUT_BYTES,
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  try {
    if (result.error) throw sealFailed((result.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'systemd-creds is not installed (systemd 250 or newer provides it).' : 'it did not finish.');
    if (result.status !== 0) throw sealFailed(firstStderrLine(result.stderr) || `exit code ${result.status}.`);
    fs.chmodSync(tmp, 0o600);
    const fd = fs.openSync(tmp, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err instanceof StartupError ? err : sealFailed('the sealed file could not be written to the home.');
  }
}

function unitHint(home: string): string {
  return `LoadCredentialEncrypted=${KEK_CREDENTIAL_NAME}:${kekCredentialFile(home)}`;
}

const credentialMissing = (home: string, where: string) =>
  new StartupError(
    'keychain_entry_missing',
    'SystemdCredentialMissing',
    `This home is unlocked by a systemd credential, but ${where}.`,
    `Start svc through its system unit (\`svc service install --system --home ${home}\`), whose ${unitHint(home)} hands the key over; or restore ${kekCredentialFile(home)} from the machine's backup.`,
  );

const credentialUnusable = (home: string, detail: string) =>
  new StartupError(
    'keychain_unavailable',
    'SystemdCredentialUnavailable',
    `The systemd credential that unlocks this home could not be decrypted: ${detail}`,
    `Start svc through its system unit (${unitHint(home)}), or run it by hand as root on the machine that sealed the credential. A credential sealed on another machine opens only there: seal the key again for this machine (docs/service.md, "Rotating and moving the credential").`,
  );

function exactKek(bytes: Buffer, home: string, source: string): Buffer {
  if (bytes.length === KEK_BYTES) return bytes;
  bytes.fill(0);
  throw credentialUnusable(home, `${source} does not hold a ${KEK_BYTES}-byte key.`);
}

/**
 * The KEK for a `systemd-creds` home. Under systemd it is `$CREDENTIALS_DIRECTORY/svc-kek`; run by
 * hand (no credentials directory), svc decrypts the sealed file itself, which works for root on
 * the machine that sealed it, so an administrator can still run `svc serve` in a shell.
 */
export function readSealedKek(home: string, env: NodeJS.ProcessEnv = process.env): Buffer {
  const dir = env.CREDENTIALS_DIRECTORY;
  if (dir) {
    const file = path.join(dir, KEK_CREDENTIAL_NAME);
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch {
      throw credentialMissing(home, `the unit passed no ${KEK_CREDENTIAL_NAME} credential ($CREDENTIALS_DIRECTORY has none)`);
    }
    return exactKek(bytes, home, `$CREDENTIALS_DIRECTORY/${KEK_CREDENTIAL_NAME}`);
  }
  const sealed = kekCredentialFile(home);
  if (!fs.existsSync(sealed)) throw credentialMissing(home, `${sealed} is missing`);
  const result = spawnSync('systemd-creds', ['decrypt', `--name=${KEK_CREDENTIAL_NAME}`, sealed, '-'], {
    timeout: SYSTEMD_CREDS_TIMEOUT_MS,
    maxBuffer: MAX_OUTPUT_BYTES,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (result.error) {
    throw credentialUnusable(home, (result.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'systemd-creds is not installed.' : 'systemd-creds did not finish.');
  }
  if (result.status !== 0) {
    result.stdout?.fill(0);
    throw credentialUnusable(home, `not started by systemd (no $CREDENTIALS_DIRECTORY), and \`systemd-creds decrypt\` refused: ${firstStderrLine(result.stderr) || `exit code ${result.status}`}.`);
  }
  return exactKek(result.stdout, home, 'the decrypted credential');
}
