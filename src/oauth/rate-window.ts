/**
 * A fixed one-minute request counter (spec §8: token and revoke, 120 per minute each). One
 * instance per endpoint per listener, so loopback and tunnel traffic are counted separately.
 */
export class RateWindow {
  #start = 0;
  #count = 0;

  constructor(
    private readonly limit: number,
    private readonly windowMs = 60_000,
  ) {}

  /** Counts one request; false when the window's allowance is used up. */
  take(now = Date.now()): boolean {
    if (now - this.#start >= this.windowMs) {
      this.#start = now;
      this.#count = 0;
    }
    if (this.#count >= this.limit) return false;
    this.#count++;
    return true;
  }
}
