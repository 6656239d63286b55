/** The one place REST errors are made: a code, its HTTP status, and a human message with a fix. */

export const ERROR_STATUS = {
  validation_error: 400,
  unauthorized: 401,
  missing_permission: 403,
  approval_required: 403,
  message_rejected: 403,
  inbox_paused: 403,
  forbidden: 403,
  not_found: 404,
  already_exists: 409,
  page_token_stale: 409,
  idempotency_conflict: 409,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  not_supported: 400,
  action_required: 409,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** `validation_error` → `ValidationError`: the AgentMail-style error `name`. */
export function errorName(code: ErrorCode): string {
  const name = code.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join('');
  return name.endsWith('Error') ? name : `${name}Error`;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly fix?: string;
  readonly extra?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, opts: { fix?: string; extra?: Record<string, unknown>; headers?: Record<string, string> } = {}) {
    super(message);
    this.code = code;
    this.fix = opts.fix;
    this.extra = opts.extra;
    this.headers = opts.headers;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  toBody(): Record<string, unknown> {
    return { name: errorName(this.code), code: this.code, message: this.message, ...(this.fix ? { fix: this.fix } : {}), ...this.extra };
  }
}

export const notFound = (what = 'resource') =>
  new ApiError('not_found', `The ${what} was not found.`, { fix: 'Check the identifier and that it is inside your inbox scope.' });

export const unauthorized = (message = 'A valid credential is required.') =>
  new ApiError('unauthorized', message, { fix: 'Send `Authorization: Bearer <credential>` with the owner token, an API key or an OAuth access token.' });

export const missingPermission = (permission: string) =>
  new ApiError('missing_permission', `This credential lacks the \`${permission}\` permission.`, { fix: `Ask the owner to grant \`${permission}\` to this key.` });

export const ownerOnly = () =>
  new ApiError('missing_permission', 'This route is for the owner only.', { fix: 'Use the owner token from connection.json or an owner browser session.' });
