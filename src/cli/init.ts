/**
 * `svc init`: creates a home and its keys without serving, choosing where the key-encryption key
 * lives: the OS keyring (desktops; what `svc serve --init` does) or a systemd encrypted credential
 * sealed to this machine (headless servers; the system unit hands it to `svc serve`).
 */
import fs from 'node:fs';
import { homeFiles, resolveHome, type Flavor } from '../keys/home.js';
import { StartupError } from '../keys/startup-error.js';
import { CREDENTIAL_KEYS, DEFAULT_CREDENTIAL_KEY, kekCredentialFile, type CredentialKey } from '../keys/systemd-creds.js';
import { UNLOCK_METHODS, unlockHome, type UnlockMethod } from '../keys/unlock.js';
import { recoveryCodeLine } from '../backup/recovery-file.js';
import { parseArgs } from './args.js';
import { CliError, EXIT, reportCliError } from './exit-codes.js';
import { isSourceCheckout } from './package-root.js';

const USAGE = 'svc init [--home DIR] [--unlock keyring|systemd-creds] [--with-key host|tpm2|host+tpm2] [--flavor development|production] [--json]';

function invalid(message: string): CliError {
  return new CliError('validation_error', message, `Usage: ${USAGE}`);
}

interface InitReport {
  home: string;
  unlock: UnlockMethod;
  created: boolean;
  /** The sealed credential of a systemd-creds home. */
  credential: string | null;
  /** Shown once, when the home is created (docs/backup.md); never stored. */
  recovery_code: string | null;
}

/** The unlock method an existing home records in keys.json (absent: keyring); null when unreadable. */
function recordedUnlock(home: string): UnlockMethod | null {
  try {
    const keys = JSON.parse(fs.readFileSync(homeFiles(home).keys, 'utf8')) as { unlock?: unknown };
    return keys.unlock === 'systemd-creds' ? 'systemd-creds' : keys.unlock === undefined ? 'keyring' : null;
  } catch {
    return null;
  }
}

function init(args: string[]): InitReport {
  // Whatever svc init creates in the home is private to its owner, like the files svc serve creates.
  process.umask(0o077);
  const { flags, positionals } = parseArgs(args, { home: 'string', unlock: 'string', 'with-key': 'string', flavor: 'string', json: 'boolean' });
  if (positionals.length) throw invalid(`Unexpected argument "${positionals[0]}".`);
  const unlock = (flags.unlock ?? 'keyring') as UnlockMethod;
  if (!UNLOCK_METHODS.includes(unlock)) throw invalid('--unlock must be keyring or systemd-creds.');
  const withKey = flags['with-key'] as CredentialKey | undefined;
  if (withKey !== undefined && !CREDENTIAL_KEYS.includes(withKey)) throw invalid('--with-key must be host, tpm2 or host+tpm2.');
  if (withKey !== undefined && unlock !== 'systemd-creds') throw invalid('--with-key goes with --unlock systemd-creds.');
  const flavor = flags.flavor as string | undefined;
  if (flavor !== undefined && flavor !== 'development' && flavor !== 'production') throw invalid('--flavor must be development or production.');
  if (flags.home === '') throw invalid('--home must not be empty.');
  const home = resolveHome({ home: flags.home as string | undefined, flavor: (flavor as Flavor | undefined) ?? (isSourceCheckout() ? 'development' : 'production') });

  if (fs.existsSync(homeFiles(home).keys)) {
    // Never overwritten: an existing home keeps its keys, whatever was asked.
    const existing = recordedUnlock(home);
    if (existing !== unlock) {
      throw new CliError(
        'action_required',
        `The home ${home} already exists${existing ? ` and is unlocked by ${existing}` : ' (its keys.json is unreadable)'}; svc init never changes an existing home's keys.`,
        existing ? `Use it as it is, or choose a new --home for a ${unlock} home.` : 'Restore keys.json together with svc.db from the same home backup.',
      );
    }
    return { home, unlock, created: false, credential: unlock === 'systemd-creds' ? kekCredentialFile(home) : null, recovery_code: null };
  }
  let unlocked;
  try {
    unlocked = unlockHome(home, true, { unlock, credentialKey: withKey ?? DEFAULT_CREDENTIAL_KEY });
  } catch (err) {
    if (err instanceof StartupError) throw new CliError('action_required', err.message, err.fix, { cause: err.cause_ });
    throw err;
  }
  unlocked.dbKey.fill(0);
  return { home, unlock, created: unlocked.created, credential: unlock === 'systemd-creds' ? kekCredentialFile(home) : null, recovery_code: unlocked.recoveryCode ?? null };
}

function describe(r: InitReport): string {
  if (!r.created) return `The home ${r.home} already exists (unlock: ${r.unlock}); nothing changed.\n`;
  const next =
    r.unlock === 'systemd-creds'
      ? `Its key is sealed to this machine in ${r.credential}. Next, as root: svc service install --system --home ${r.home}\n`
      : `Its key is in the OS keyring. Next: svc serve --home ${r.home} (or svc service install --home ${r.home})\n`;
  return `Created the home ${r.home}.\n${next}`;
}

/** Entry for `svc init`; returns the exit code. */
export async function runInitCommand(args: string[]): Promise<number> {
  const json = args.includes('--json');
  try {
    const report = init(args);
    // The recovery code first, as the one JSON line `svc serve --init` prints too; then the report.
    if (report.recovery_code !== null && !json) process.stdout.write(JSON.stringify(recoveryCodeLine(report.recovery_code)) + '\n');
    process.stdout.write(json ? JSON.stringify(report) + '\n' : describe(report));
    return EXIT.ok;
  } catch (err) {
    return reportCliError(err, json);
  }
}
