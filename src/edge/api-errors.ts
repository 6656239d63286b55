/** The edge API's error codes and their statuses; the body is `{error, message}` with no internals (src/edge/api.ts). */
export const EDGE_ERRORS = {
  validation_error: 400,
  unauthorized: 401,
  not_found: 404,
  payload_too_large: 413,
  unsupported_media_type: 415,
  internal_error: 500,
  service_unavailable: 503,
} as const;
export type EdgeErrorCode = keyof typeof EDGE_ERRORS;

export class EdgeApiError extends Error {
  constructor(
    readonly code: EdgeErrorCode,
    message: string,
  ) {
    super(message);
  }
}
