/**
 * Fixed one-minute request counters for the token and revoke endpoints (spec §8: 120 per minute
 * each). One set per endpoint per listener, so loopback and tunnel traffic are counted apart.
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

  /** True once the window this counter last counted in has ended (a fresh one would start). */
  ended(now = Date.now()): boolean {
    return now - this.#start >= this.windowMs;
  }
}

/**
 * One window per client that proved itself by presenting one of its own codes or tokens, and one
 * shared window for everything else (unknown client, bad grant type, unknown or missing token).
 * Junk can only use up the shared window, so a flood of it never refuses a real client's refresh;
 * a client that floods with its own credential uses up only its own window.
 */
export class ClientRateWindows {
  readonly #unproven: RateWindow;
  readonly #byClient = new Map<string, RateWindow>();

  constructor(
    private readonly limit: number,
    /** Above this many client windows, the ended ones are dropped (registrations are capped too). */
    private readonly maxClients: number,
    private readonly windowMs = 60_000,
  ) {
    this.#unproven = new RateWindow(limit, windowMs);
  }

  /** Counts one request of `clientId` (null: not proven to be any client's); false when over. */
  take(clientId: string | null, now = Date.now()): boolean {
    if (clientId === null) return this.#unproven.take(now);
    let window = this.#byClient.get(clientId);
    if (!window) {
      if (this.#byClient.size >= this.maxClients) this.#dropEnded(now);
      window = new RateWindow(this.limit, this.windowMs);
      this.#byClient.set(clientId, window);
    }
    return window.take(now);
  }

  #dropEnded(now: number): void {
    for (const [clientId, window] of this.#byClient) if (window.ended(now)) this.#byClient.delete(clientId);
  }
}
