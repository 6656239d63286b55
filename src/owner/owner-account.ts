/**
 * The owner: one password, browser sessions, the per-start bearer token, the one-time setup code
 * and login links. Secrets are held hashed; the bearer token and setup code live only in memory.
 * Slow or budgeted checks (password hashing, the setup code) are separate `check*` methods run
 * before any lock; the writes that must commit together (storeFirstPassword, replacePassword) run
 * inside the caller's transaction, opened in src/requests/owner.ts.
 */
import { randomBytes, randomInt } from 'node:crypto';
import type { Db } from '../db/open.js';
import { ApiError } from '../core/errors.js';
import type { Principal } from '../auth/principal.js';
import { newSecret, sameSecret, sha256Hex } from '../auth/secrets.js';
import { uuidv7 } from '../db/ids.js';
import { prepared } from '../db/statements.js';
import { AttemptBudget } from './attempt-budget.js';
import { hashPassword, verifyPassword } from './password.js';
import {
  LOGIN_FAILURES_ALLOWED,
  LOGIN_LINK_MS,
  LOGIN_WINDOW_MS,
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
  csrfToken: string;
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

  constructor(private readonly db: Db) {
    this.#setupCode = this.setupRequired ? newSetupCode() : null;
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

  async login(password: string, userAgent: string | undefined): Promise<NewSession> {
    const row = this.db.prepare('SELECT password_hash FROM owner WHERE id = 1').get() as { password_hash: string } | undefined;
    if (!row) throw new ApiError('forbidden', 'The owner has not been set up yet.', { fix: 'Complete setup with POST /v0/owner/setup and the code svc printed at startup.' });
    const attempt = this.#passwordAttempts.take();
    if (!(await verifyPassword(password, row.password_hash))) {
      throw new ApiError('unauthorized', 'The password is not correct.', { fix: 'Check the password; after several failures login pauses for a few minutes (`svc open` still signs you in).' });
    }
    attempt.succeeded();
    return this.createSession(userAgent);
  }

  createSession(userAgent: string | undefined): NewSession {
    const token = newSecret('svc_session_');
    const csrfToken = randomBytes(24).toString('base64url');
    const now = Date.now();
    const expiresAt = iso(expiryOf(now, now));
    this.db
      .prepare('INSERT INTO owner_sessions (session_id, token_hash, csrf_token, user_agent_hash, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(uuidv7(), sha256Hex(token), csrfToken, userAgent ? sha256Hex(userAgent) : null, iso(now), iso(now), expiresAt);
    return { token, csrfToken, expiresAt };
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

  /** Stores the new password and signs out every other session; runs inside the caller's transaction. */
  replacePassword(hash: string, keepSessionId: string | null): void {
    this.db.prepare('UPDATE owner SET password_hash = ?, updated_at = ? WHERE id = 1').run(hash, iso(Date.now()));
    this.db.prepare('DELETE FROM owner_sessions WHERE session_id IS NOT ?').run(keepSessionId);
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
