/**
 * The check that a scanner of stranger-controlled input takes time linear in its size (the
 * security rules): the fastest of a few runs at 16 KiB and at 256 KiB, in CPU time. Sixteen times the input
 * takes about 16× the time when linear and 256× when quadratic; the margin (64× plus 20 ms)
 * absorbs a busy machine, so the check fails only on super-linear work.
 */
import type { Test } from 'tap';

const KiB = 1024;

/**
 * CPU time this process has used, in ms (user and system, every thread): the clock for bounds on
 * stranger-controlled input, which a loaded machine's preemption must not trip.
 */
export const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/**
 * The fastest of five runs of `run`, in ms of CPU time: the least disturbed by whatever else the
 * machine does. CPU time, not wall time: on a loaded machine a run short enough to fit in one
 * time slice is never preempted while a sixteen-times longer one is, many times, so wall time
 * would grow with the load rather than with the work.
 */
export function fastestMs(run: () => unknown): number {
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const start = cpuMs();
    run();
    best = Math.min(best, cpuMs() - start);
  }
  return best;
}

/**
 * For each hostile input builder: `check` sees the result at 16 KiB and at 256 KiB (bounds,
 * well-formedness), then the time at 256 KiB must stay within the linear margin of 16 KiB.
 */
export function assertLinear<S, R>(t: Test, hostile: readonly { name: string; build: (size: number) => S }[], run: (source: S) => R, check: (result: R, label: string) => void): void {
  for (const { name, build } of hostile) {
    const small = build(16 * KiB);
    const large = build(256 * KiB);
    check(run(small), `${name} (16 KiB)`);
    check(run(large), `${name} (256 KiB)`);
    const smallMs = fastestMs(() => run(small));
    const largeMs = fastestMs(() => run(large));
    t.ok(largeMs < 64 * smallMs + 20, `${name}: 256 KiB in ${largeMs.toFixed(1)} ms, 16 KiB in ${smallMs.toFixed(1)} ms`);
  }
}
