/** OAuth limits and fixed values (spec §5.3, §8), in one place. */

/** The single scope; it grants nothing by itself (the owner's consent decides everything). */
export const SCOPE = 'svc';
export const GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;
export const RESPONSE_TYPES = ['code'] as const;

export const ACCESS_TOKEN_PREFIX = 'svc_oauth_';
/** A different prefix, so a refresh token sent as a bearer is never even looked up as one. */
export const REFRESH_TOKEN_PREFIX = 'svc_refresh_';
export const CODE_PREFIX = 'svc_code_';

export const CODE_TTL_MS = 5 * 60 * 1000;
export const ACCESS_TOKEN_TTL_MS = 5 * 60 * 1000;
/** A grant (one refresh-token family) ends this long after consent; rotation does not extend it. */
export const FAMILY_TTL_MS = 30 * 24 * 3600 * 1000;
/** How long a consent screen may stay open before the request must start again. */
export const REQUEST_TTL_MS = 10 * 60 * 1000;
/**
 * Sign-ins waiting for consent at once, in all and per client (each stays REQUEST_TTL_MS); a new
 * one past either bound ends the oldest, so a page that keeps sending the owner's browser to
 * /oauth/authorize can neither grow the table nor keep other sign-ins out.
 */
export const MAX_PENDING_REQUESTS = 200;
export const MAX_PENDING_REQUESTS_PER_CLIENT = 20;
/** A registration that never got a grant is forgotten after this long. */
export const UNUSED_CLIENT_TTL_MS = 24 * 3600 * 1000;

export const MAX_CLIENTS = 1000;
export const REGISTRATIONS_PER_HOUR = 20;
export const REDIRECT_URIS_MIN = 1;
export const REDIRECT_URIS_MAX = 10;
export const REDIRECT_URI_MAX_LENGTH = 2048;
export const CLIENT_NAME_MAX = 200;
/** Longest `state` echoed back to the client; more is refused rather than truncated. */
export const STATE_MAX_LENGTH = 1024;

/**
 * Token and revoke requests per minute, each, counted per listener and per client: every client
 * that presents one of its own codes or tokens has its own window, and all other requests share
 * one more (src/oauth/rate-window.ts), so junk from anyone cannot refuse a real client's refresh.
 */
export const TOKEN_REQUESTS_PER_MINUTE = 120;
export const REVOKE_REQUESTS_PER_MINUTE = 120;
/** Token and revoke bodies; registration metadata gets the same bound. */
export const TOKEN_BODY_MAX = 16 * 1024;
/** Every 429 from the OAuth endpoints says this (spec §7.2). */
export const RETRY_AFTER_SECONDS = 60;

/** last_used_at of a grant is written at most this often, so authenticated calls stay cheap. */
export const LAST_USED_RESOLUTION_MS = 60 * 1000;
