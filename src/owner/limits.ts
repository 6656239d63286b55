/** Owner account limits (spec §5.1, §8). */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 1024;
export const SESSION_IDLE_MS = 14 * 24 * 3600 * 1000;
export const SESSION_MAX_MS = 30 * 24 * 3600 * 1000;
/** last_seen_at is written at most this often, so reads stay cheap. */
export const SESSION_TOUCH_MS = 60 * 1000;
export const LOGIN_LINK_MS = 2 * 60 * 1000;
/** Failed password or setup-code attempts allowed per window before login is throttled. */
export const LOGIN_FAILURES_ALLOWED = 5;
export const LOGIN_WINDOW_MS = 5 * 60 * 1000;
export const SESSION_COOKIE = 'svc_session';
export const CSRF_HEADER = 'x-svc-csrf';
