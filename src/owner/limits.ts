/** Owner account limits (spec §5.1, §8). */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 1024;
export const SESSION_IDLE_MS = 14 * 24 * 3600 * 1000;
export const SESSION_MAX_MS = 30 * 24 * 3600 * 1000;
/** last_seen_at is written at most this often, so reads stay cheap. */
export const SESSION_TOUCH_MS = 60 * 1000;
export const LOGIN_LINK_MS = 2 * 60 * 1000;
/**
 * Password attempts (failed or in progress) allowed per window, for all clients together: owner
 * routes exist only on the loopback listener, where every client is 127.0.0.1, so there is no
 * client address to count by. 5 per 5 minutes caps an online guesser at ~1,440 tries
 * a day. Setup codes and password changes have budgets of the same size of their own.
 */
export const LOGIN_FAILURES_ALLOWED = 5;
export const LOGIN_WINDOW_MS = 5 * 60 * 1000;
export const SESSION_COOKIE = 'svc_session';
export const CSRF_HEADER = 'x-svc-csrf';
/** Long-lived cookie naming a browser that signed in before: its logins spend a budget of their own. */
export const DEVICE_COOKIE = 'svc_device';
export const DEVICE_COOKIE_MAX_AGE_S = 400 * 24 * 3600;
/** Device and sudo budgets kept in memory at most (the oldest are forgotten). */
export const DEVICE_BUDGETS_MAX = 1000;
/**
 * Sudo mode (docs/security.md): a browser session may mint credentials, run commands or change
 * where mail goes only this long after it proved the owner (password or login link).
 */
export const SUDO_MS = 10 * 60 * 1000;
/** A reconnect handshake's challenge lives this long, and this many are outstanding at most. */
export const RENEWAL_CHALLENGE_MS = 2 * 60 * 1000;
export const RENEWAL_CHALLENGES_MAX = 1000;
