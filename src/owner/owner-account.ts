/**
 * The owner: one password, browser sessions, the per-start bearer token, the one-time setup code
 * and login links. Secrets are held hashed; the bearer token and setup code live only in memory.
 * Slow or budgeted checks (password hashing, the setup code) are separate `check*` methods run
 * before any lock; the writes that must commit together (storeFirstPassword, replacePassword) run
 * inside the caller's transaction, opened in src/requests/owner.ts.
 */
import { createHmac, randomBytes, randomInt } from 'node:crypto';
import type { Db } from '../db/open.js';
import { ApiError } from '../core/errors.js';
import type { Principal } from '../auth/principal.js';
import { newSecret, sameSecret, sha256Hex } from '../auth/secrets.js';
import { uuidv7 } from '../db/ids.js';
import { prepared } from '../db/statements.js';
import { settingsSecret } from '../db/settings-secret.js';
import { AttemptBudget } from './attempt-budget.js';
import { hashPassword, verifyPassword } from './password.js';
import { newSessionEpoch, renewalAnswer, serverProof, sessionKeys } from './session-binding.js';
import {
  DEVICE_BUDGETS_MAX,
  LOGIN_FAILURES_ALLOWED,
  LOGIN_LINK_MS,
  LOGIN_WINDOW_MS,
  RENEWAL_CHALLENGE_MS,
  RENEWAL_CHALLENGES_MAX,
  SUDO_MS,
  PASSWORD_MAX,
  PASSWORD_MIN,
  SESSION_IDLE_MS,
  SESSION_MAX_MS,
  SESSION_TOUCH_MS,
} from './limits.js';

interface SessionRow {
  session_id: string;
  csrf_token: string;
  user_agent_hash: string | null;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

export interface NewSession {
  token: string;
  /** The session's stored secret; the browser gets only values derived from it (session-binding.ts). */
  csrfToken: string;
  expiresAt: string;
  /** The device cookie to set (a login from this browser later has its own attempt budget). */
  device: string;
}

/** A live session found by its cookie alone, for the reconnect handshake (never a principal). */
export interface CookieSession {
  sessionId: string;
  secret: string;
  expiresAt: string;
}

const SETUP_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';

function newSetupCode(): string {
  let code = '';
  for (let i = 0; i < 10; i++) code += SETUP_ALPHABET[randomInt(SETUP_ALPHABET.length)];
  return `${code.slice(0, 5)}-${code.slice(5)}`;
}

const iso = (ms: number) => new Date(ms).toISOString();

function expiryOf(createdMs: number, lastSeenMs: number): number {
  return Math.min(lastSeenMs + SESSION_IDLE_MS, createdMs + SESSION_MAX_MS);
}

/** Setup after the password exists: the owner logs in instead. */
export const passwordAlreadySet = () => new ApiError('conflict', 'The owner password is already set.', { fix: 'Log in with POST /v0/owner/login.' });

export function checkPasswordRules(password: string): void {
  const length = [...password].length;
  if (length < PASSWORD_MIN || length > PASSWORD_MAX) {
    throw new ApiError('validation_error', `The password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters long.`, {
      fix: `Choose a password of at least ${PASSWORD_MIN} characters; a few unrelated words work well.`,
    });
  }
}

/** When a browser session ends, or null when there is no such session (any more). */
export function sessionExpiry(db: Db, sessionId: string): string | null {
  const row = prepared(db, 'SELECT expires_at FROM owner_sessions WHERE session_id = ?').get(sessionId) as { expires_at: string } | undefined;
  return row?.expires_at ?? null;
}

export class OwnerAccount {
  readonly bearerToken = newSecret('svc_owner_');
  readonly #bearerHash = sha256Hex(this.bearerToken);
  #setupCode: string | null;
  // One budget per secret, so guessing one cannot lock the owner out of another. Login links
  // have none: a link is 256 random bits, used once, minted only with the owner bearer.
  readonly #passwordAttempts = new AttemptBudget(LOGIN_FAILURES_ALLOWED, LOGIN_WINDOW_MS);
  readonly #passwordChangeAttempts = new AttemptBudget(LOGIN_FAILURES_ALLOWED, LOGIN_WINDOW_MS);
  readonly #setupCodeAttempts = new AttemptBudget(LOGIN_FAILURES_ALLOWED, LOGIN_WINDOW_MS);
  readonly #loginLinks = new Map<string, { expires: number }>();
  /**
   * Random per process start: every browser CSRF token of an earlier start stops working
   * (src/owner/session-binding.ts; a squatter on svc's port while it was down).
   */
  readonly epoch = newSessionEpoch();
  /** When each session last proved the owner (login, setup, link, password): sudo mode. In memory: a restart asks again. */
  readonly #provedAt = new Map<string, number>();
  /** Renewal challenges handed out by the reconnect handshake: challenge → session, single use. */
  readonly #challenges = new Map<string, { sessionId: string; expires: number }>();
  /** Password budgets of browsers that signed in before (device cookie) and of sessions confirming sudo. */
  readonly #deviceAttempts = new Map<string, AttemptBudget>();
  readonly #sudoAttempts = new Map<string, AttemptBudget>();
  readonly #deviceKey: Buffer;

  constructor(private readonly db: Db) {
    this.#setupCode = this.setupRequired ? newSetupCode() : null;
    this.#deviceKey = ensureDeviceKey(db);
  }

  get setupRequired(): boolean {
    return !this.db.prepare('SELECT 1 FROM owner WHERE id = 1').get();
  }

  /** The code printed at startup while no password exists; null afterwards. */
  get setupCode(): string | null {
    return this.#setupCode;
  }

  ownerPrincipal(): Principal {
    return { kind: 'owner', id: 'owner', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };
  }

  isBearer(token: string): boolean {
    return sameSecret(sha256Hex(token), this.#bearerHash);
  }

  /**
   * Setup's checks, before any lock: setup still open, the code printed at startup (budgeted), the
   * password rules. The password's hash for storeFirstPassword.
   */
  async checkSetup(password: string, code: string): Promise<string> {
    if (!this.setupRequired || this.#setupCode === null) throw passwordAlreadySet();
    const attempt = this.#setupCodeAttempts.take();
    if (!sameSecret(code.trim().toUpperCase(), this.#setupCode)) {
      throw new ApiError('forbidden', 'The setup code does not match the one printed at startup.', {
        fix: 'Copy the `code` from the `owner.setup_required` line that svc printed when it started (it changes on every restart).',
      });
    }
    attempt.succeeded();
    checkPasswordRules(password);
    return hashPassword(password);
  }

  /**
   * Stores the first password; false when another setup stored one first. Runs inside the
   * caller's transaction (src/requests/owner.ts), so the check and the insert see one state.
   */
  storeFirstPassword(hash: string): boolean {
    if (!this.setupRequired) return false;
    const now = iso(Date.now());
    this.db.prepare('INSERT INTO owner (id, password_hash, created_at, updated_at) VALUES (1, ?, ?, ?)').run(hash, now, now);
    return true;
  }

  /** After the first password committed: the setup code is spent. */
  setupCompleted(): void {
    this.#setupCode = null;
  }

  /**
   * A browser that signed in before sends its device cookie and spends a budget of its own, so a
   * local process guessing passwords (which spends the shared budget) cannot lock the owner out.
   */
  async login(password: string, userAgent: string | undefined, deviceCookie?: string): Promise<NewSession> {
    const row = this.db.prepare('SELECT password_hash FROM owner WHERE id = 1').get() as { password_hash: string } | undefined;
    if (!row) throw new ApiError('forbidden', 'The owner has not been set up yet.', { fix: 'Complete setup with POST /v0/owner/setup and the code svc printed at startup.' });
    const device = deviceCookie === undefined ? null : this.#deviceId(deviceCookie);
    const attempt = (device === null ? this.#passwordAttempts : budgetFor(this.#deviceAttempts, device)).take();
    if (!(await verifyPassword(password, row.password_hash))) {
      throw new ApiError('unauthorized', 'The password is not correct.', { fix: 'Check the password; after several failures login pauses for a few minutes (`svc open` still signs you in).' });
    }
    attempt.succeeded();
    return this.createSession(userAgent, device ?? undefined);
  }

  /** A new session, proved just now (sudo mode starts with it). */
  createSession(userAgent: string | undefined, deviceId?: string): NewSession {
    const token = newSecret('svc_session_');
    const csrfToken = randomBytes(24).toString('base64url');
    const now = Date.now();
    const expiresAt = iso(expiryOf(now, now));
    const sessionId = uuidv7();
    this.db
      .prepare('INSERT INTO owner_sessions (session_id, token_hash, csrf_token, user_agent_hash, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(sessionId, sha256Hex(token), csrfToken, userAgent ? sha256Hex(userAgent) : null, iso(now), iso(now), expiresAt);
    this.#provedAt.set(sessionId, now);
    return { token, csrfToken, expiresAt, device: this.#deviceCookie(deviceId ?? randomBytes(16).toString('base64url')) };
  }

  #deviceCookie(id: string): string {
    return `${id}.${createHmac('sha256', this.#deviceKey).update(id).digest('base64url')}`;
  }

  /** The device a cookie names, when svc issued it; null for anything else. */
  #deviceId(cookie: string): string | null {
    const id = cookie.split('.')[0];
    if (!/^[A-Za-z0-9_-]{16,64}$/.test(id)) return null;
    return sameSecret(cookie, this.#deviceCookie(id)) ? id : null;
  }

  /** Whether the session proved the owner within the sudo window (src/auth/gate.ts `sudo` routes). */
  recentlyProved(sessionId: string, now = Date.now()): boolean {
    const at = this.#provedAt.get(sessionId);
    return at !== undefined && now - at < SUDO_MS;
  }

  /** Sudo mode: the session's owner types the password again. Budgeted per session. */
  async confirmPassword(sessionId: string, password: string): Promise<{ sudo_until: string }> {
    const row = this.db.prepare('SELECT password_hash FROM owner WHERE id = 1').get() as { password_hash: string } | undefined;
    const attempt = budgetFor(this.#sudoAttempts, sessionId).take();
    if (!row || !(await verifyPassword(password, row.password_hash))) {
      throw new ApiError('forbidden', 'The password is not correct.', { fix: 'Enter the password you sign in with.' });
    }
    attempt.succeeded();
    const now = Date.now();
    this.#provedAt.set(sessionId, now);
    return { sudo_until: iso(now + SUDO_MS) };
  }

  /** A live session by its cookie alone: only for the reconnect handshake, which proves the rest. */
  cookieSession(token: string): CookieSession | null {
    const row = this.db.prepare('SELECT session_id, csrf_token, expires_at FROM owner_sessions WHERE token_hash = ?').get(sha256Hex(token)) as
      | Pick<SessionRow, 'session_id' | 'csrf_token' | 'expires_at'>
      | undefined;
    if (!row || Date.parse(row.expires_at) <= Date.now()) return null;
    return { sessionId: row.session_id, secret: row.csrf_token, expiresAt: row.expires_at };
  }

  /** The keys a signed-in tab keeps in memory (session-binding.ts). */
  sessionKeysOf(sessionId: string): { server_key: string; renewal_key: string } | null {
    const row = this.db.prepare('SELECT csrf_token FROM owner_sessions WHERE session_id = ?').get(sessionId) as { csrf_token: string } | undefined;
    return row ? sessionKeys(row.csrf_token) : null;
  }

  /** The handshake's first step: svc proves itself on the tab's nonce and hands out a single-use challenge. */
  proveServer(session: CookieSession, nonce: string): { proof: string; challenge: string } {
    const now = Date.now();
    for (const [c, entry] of this.#challenges) if (entry.expires <= now || this.#challenges.size >= RENEWAL_CHALLENGES_MAX) this.#challenges.delete(c);
    const challenge = randomBytes(24).toString('base64url');
    this.#challenges.set(challenge, { sessionId: session.sessionId, expires: now + RENEWAL_CHALLENGE_MS });
    return { proof: serverProof(session.secret, nonce, challenge), challenge };
  }

  /** The handshake's second step: the tab answered svc's challenge with its renewal key; true when right. */
  redeemChallenge(session: CookieSession, challenge: string, answer: string): boolean {
    const entry = this.#challenges.get(challenge);
    this.#challenges.delete(challenge);
    if (!entry || entry.expires <= Date.now() || entry.sessionId !== session.sessionId) return false;
    return sameSecret(answer, renewalAnswer(session.secret, challenge));
  }

  /** Resolves a session cookie; expired sessions are deleted on sight. */
  sessionPrincipal(token: string): Principal | null {
    const row = this.db.prepare('SELECT * FROM owner_sessions WHERE token_hash = ?').get(sha256Hex(token)) as SessionRow | undefined;
    if (!row) return null;
    const now = Date.now();
    if (Date.parse(row.expires_at) <= now) {
      this.db.prepare('DELETE FROM owner_sessions WHERE session_id = ?').run(row.session_id);
      return null;
    }
    if (now - Date.parse(row.last_seen_at) > SESSION_TOUCH_MS) {
      this.db
        .prepare('UPDATE owner_sessions SET last_seen_at = ?, expires_at = ? WHERE session_id = ?')
        .run(iso(now), iso(expiryOf(Date.parse(row.created_at), now)), row.session_id);
    }
    return { kind: 'session', id: row.session_id, inboxScope: 'all', permissions: 'all', sendPolicy: 'direct', csrfToken: row.csrf_token };
  }

  endSession(sessionId: string): void {
    this.db.prepare('DELETE FROM owner_sessions WHERE session_id = ?').run(sessionId);
    this.#provedAt.delete(sessionId);
  }

  listSessions(currentId: string | null) {
    const now = iso(Date.now());
    const rows = this.db.prepare('SELECT * FROM owner_sessions WHERE expires_at > ? ORDER BY created_at DESC').all(now) as SessionRow[];
    return rows.map((r) => ({
      session_id: r.session_id,
      user_agent: r.user_agent_hash,
      created_at: r.created_at,
      last_seen_at: r.last_seen_at,
      expires_at: r.expires_at,
      current: r.session_id === currentId,
    }));
  }

  deleteSession(sessionId: string): boolean {
    this.#provedAt.delete(sessionId);
    return this.db.prepare('DELETE FROM owner_sessions WHERE session_id = ?').run(sessionId).changes > 0;
  }

  /**
   * A password change's checks, before any lock: the current password (budgeted) and the new
   * one's rules. The new password's hash for replacePassword.
   */
  async checkPasswordChange(current: string, next: string): Promise<string> {
    const attempt = this.#passwordChangeAttempts.take();
    const row = this.db.prepare('SELECT password_hash FROM owner WHERE id = 1').get() as { password_hash: string } | undefined;
    if (!row || !(await verifyPassword(current, row.password_hash))) {
      throw new ApiError('forbidden', 'The current password is not correct.', { fix: 'Enter the password you log in with now.' });
    }
    attempt.succeeded();
    checkPasswordRules(next);
    return hashPassword(next);
  }

  /** The current password was just typed: a proof of the owner, like a login. */
  markProved(sessionId: string): void {
    this.#provedAt.set(sessionId, Date.now());
  }

  /** Stores the new password and signs out every other session; runs inside the caller's transaction. */
  replacePassword(hash: string, keepSessionId: string | null): void {
    this.db.prepare('UPDATE owner SET password_hash = ?, updated_at = ? WHERE id = 1').run(hash, iso(Date.now()));
    this.db.prepare('DELETE FROM owner_sessions WHERE session_id IS NOT ?').run(keepSessionId);
    for (const id of this.#provedAt.keys()) if (id !== keepSessionId) this.#provedAt.delete(id);
  }

  createLoginLink(): { token: string; expiresAt: string } {
    const token = newSecret('svc_link_');
    const expires = Date.now() + LOGIN_LINK_MS;
    for (const [hash, link] of this.#loginLinks) if (link.expires <= Date.now()) this.#loginLinks.delete(hash);
    this.#loginLinks.set(sha256Hex(token), { expires });
    return { token, expiresAt: iso(expires) };
  }

  redeemLoginLink(token: string, userAgent: string | undefined): NewSession {
    const hash = sha256Hex(token);
    const link = this.#loginLinks.get(hash);
    this.#loginLinks.delete(hash);
    if (!link || link.expires <= Date.now()) {
      throw new ApiError('unauthorized', 'The login link is invalid, already used or expired.', { fix: 'Ask for a new link with `svc owner login-link` (links work once, for two minutes).' });
    }
    return this.createSession(userAgent);
  }
}

/** The budget of one device or session, made on first use; the oldest are forgotten past the cap. */
function budgetFor(budgets: Map<string, AttemptBudget>, key: string): AttemptBudget {
  let budget = budgets.get(key);
  if (!budget) {
    if (budgets.size >= DEVICE_BUDGETS_MAX) budgets.delete(budgets.keys().next().value!);
    budget = new AttemptBudget(LOGIN_FAILURES_ALLOWED, LOGIN_WINDOW_MS);
    budgets.set(key, budget);
  }
  return budget;
}

/** The HMAC key of device cookies, made once per home (at start-up, before anything is served). */
const ensureDeviceKey = (db: Db): Buffer => settingsSecret(db, 'owner_device_key');
