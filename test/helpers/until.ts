/**
 * Waiting in tests for a state the service reaches in its own time: a loop's commit, a delivery
 * at a sink, a frame on a socket. One poll loop for every test, so a wait always names what it
 * waited for when it gives up. The timeout only bounds a failing test; no assertion is timed.
 */

/** Long enough for any loop wake in spec §8 on a loaded 2-core machine; only a failing wait takes it. */
export const UNTIL_TIMEOUT_MS = 30_000;
/** Between probes: short next to a loop wake, long enough that polling does not load the machine. */
export const UNTIL_EVERY_MS = 50;

/** A probe answers one of these while the state is not there yet. */
type NotYet = undefined | null | false;

/**
 * Polls `probe` until it answers something other than undefined, null or false, and returns that
 * answer; throws `timed out waiting for <what>` after `ms`. `what` may be a function, read when
 * the wait gives up, so the message can say what was seen instead.
 */
export async function until<T>(what: string | (() => string), probe: () => T | Promise<T>, ms = UNTIL_TIMEOUT_MS, everyMs = UNTIL_EVERY_MS): Promise<Exclude<T, NotYet>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value as Exclude<T, NotYet>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
