/** CLI exit codes (spec §7.2); 1 for anything not listed. */
import type { ErrorCode } from '../core/errors.js';

export const EXIT = {
  ok: 0,
  failure: 1,
  /** `svc messages wait`: no matching message arrived before --timeout. */
  no_message: 2,
  missing_permission: 4,
  action_required: 6,
  not_supported: 9,
  service_unavailable: 10,
} as const;

/**
 * The API's error codes (ARCHITECTURE §5): commands that call the running service pass them on.
 * Plus the CLI's own: `timeout` (a --timeout ran out while waiting) and `verification_failed`
 * (`svc domains verify` ended in `failed`), both exit 1; and `no_message` (`svc messages wait` timed
 * out), exit 2, so a script can tell "nothing came" from a failure.
 */
export type CliErrorCode = ErrorCode | 'timeout' | 'verification_failed' | 'no_message';

/** A CLI failure with a code, a message and a fix; `exitCode` follows spec §7.2. */
export class CliError extends Error {
  constructor(
    readonly code: CliErrorCode,
    message: string,
    readonly fix?: string,
    /** Further fields of the service's error body (e.g. `draft_id` of `approval_required`). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }

  get exitCode(): number {
    return (EXIT as Readonly<Record<string, number>>)[this.code] ?? EXIT.failure;
  }
}

/** Prints a CLI error as JSON (with --json) or as plain lines on stderr, and returns the exit code. */
export function reportCliError(err: unknown, json: boolean): number {
  if (!(err instanceof CliError)) {
    const message = 'An unexpected error occurred.';
    process.stderr.write(json ? JSON.stringify({ error: { code: 'unexpected_error', message } }) + '\n' : `error: ${message}\n`);
    return EXIT.failure;
  }
  const e = err;
  if (json) process.stderr.write(JSON.stringify({ error: { code: e.code, message: e.message, ...(e.fix ? { fix: e.fix } : {}), ...e.details } }) + '\n');
  else {
    const extra = Object.entries(e.details).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}\n`);
    process.stderr.write(`error (${e.code}): ${e.message}\n${extra.join('')}${e.fix ? `fix: ${e.fix}\n` : ''}`);
  }
  return e.exitCode;
}
