/** A startup failure: printed as one `server.failed` JSON line on stderr, then exit 1. */

export type StartupCode =
  | 'not_initialized'
  | 'keychain_unavailable'
  | 'keychain_entry_missing'
  | 'keys_file_corrupt'
  | 'database_key_invalid'
  | 'home_unavailable'
  | 'key_storage_unavailable'
  | 'database_failed'
  | 'key_crypto_failed'
  | 'service_unavailable';

export class StartupError extends Error {
  constructor(
    readonly code: StartupCode,
    readonly cause_: string,
    message: string,
    readonly fix: string,
  ) {
    super(message);
  }

  toLine(): string {
    return JSON.stringify({ event: 'server.failed', code: this.code, cause: this.cause_, message: this.message, fix: this.fix });
  }
}

/** Wraps anything thrown during startup so raw details never reach the output. */
export function asStartupError(err: unknown): StartupError {
  if (err instanceof StartupError) return err;
  return new StartupError(
    'service_unavailable',
    'UnexpectedError',
    'svc failed to start because of an unexpected error.',
    'Try again; if it keeps failing, check disk space and the home directory permissions.',
  );
}
