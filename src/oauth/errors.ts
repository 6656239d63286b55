/**
 * OAuth endpoint errors (spec §7.1): `{error, error_description}` with the codes of RFC 6749
 * §5.2 / §4.1.2.1, RFC 7591 §3.2.2 and RFC 8707 §2, instead of the REST error body.
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'temporarily_unavailable'
  | 'server_error'
  | 'not_supported';

export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }

  toBody(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.error, error_description: this.description };
  }
}

