/**
 * A sliding-window budget of guesses at one owner secret (issue 16 finding 5). The slot is taken
 * synchronously when an attempt starts, before the slow password hash, so parallel requests
 * cannot all pass the check before the first failure is counted; a successful attempt gives its
 * slot back, so only failed and still-running attempts use the budget. Each secret kind has its
 * own budget: a flood of wrong passwords spends the password budget only.
 */
import { ApiError } from '../core/errors.js';

export interface AttemptSlot {
  /** The attempt succeeded: it no longer counts against the budget. */
  succeeded(): void;
}

export class AttemptBudget {
  /** Start times of the attempts in the window that failed or are still running. */
  #slots: { at: number }[] = [];

  constructor(
    readonly allowed: number,
    readonly windowMs: number,
  ) {}

  /** Takes a slot for an attempt starting now, or throws `429 rate_limited` with Retry-After. */
  take(now = Date.now()): AttemptSlot {
    this.#slots = this.#slots.filter((s) => now - s.at < this.windowMs);
    if (this.#slots.length >= this.allowed) {
      const retryAfter = Math.max(1, Math.ceil((this.#slots[0].at + this.windowMs - now) / 1000));
      throw new ApiError('rate_limited', 'Too many failed attempts; login is paused for a while.', {
        fix: `Wait ${retryAfter} seconds and try again, or sign in with a login link (\`svc open\`), which this pause does not affect.`,
        headers: { 'retry-after': String(retryAfter) },
      });
    }
    const slot = { at: now };
    this.#slots.push(slot);
    return {
      succeeded: () => {
        this.#slots = this.#slots.filter((s) => s !== slot);
      },
    };
  }
}
