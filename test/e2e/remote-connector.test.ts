/**
 * The connector supervisor the remote-access loop drives (spec §8: restart backoff up to 60 s;
 * docs/remote-access.md), with real `/bin/sh` processes and a shortened time base. The loop calls
 * `check` every second; here the test calls it, so the backoff sequence up to the cap is seen in
 * a second or two instead of minutes. The loop itself is covered through a running service in
 * test/e2e/remote.test.ts.
 */
import t from 'tap';
import fs from 'node:fs';
import { CONNECTOR_TIMING, ConnectorSupervisor, connectorTiming, type ConnectorConfig, type ConnectorTiming } from '../../src/remote/connector.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const BASE = 10;
const FAST: ConnectorTiming = { backoffBaseMs: BASE, backoffMaxMs: BASE * 60, stableMs: 400, killGraceMs: 300 };
const config = (command: string): ConnectorConfig => ({ command, hostname: 'mail.example.test', port: 4321 });

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Calls `check` as the loop does until `done` holds (bounded). */
async function superviseUntil(supervisor: ConnectorSupervisor, wanted: ConnectorConfig | null, done: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out; status ${JSON.stringify(supervisor.status())}`);
    const wait = await supervisor.check(wanted);
    await sleep(Math.min(wait ?? 5, 5));
  }
}

t.test('the spec timing: 1 s base, 60 s cap; the test variable replaces the base and scales cap and stable time', async (t) => {
  t.same(CONNECTOR_TIMING, { backoffBaseMs: 1_000, backoffMaxMs: 60_000, stableMs: 60_000, killGraceMs: 3_000 });
  t.same(connectorTiming({}), CONNECTOR_TIMING);
  t.same(connectorTiming({ SVC_TEST_REMOTE_BACKOFF_MS: 'nonsense' }), CONNECTOR_TIMING);
  t.same(connectorTiming({ SVC_TEST_REMOTE_BACKOFF_MS: '100' }), { backoffBaseMs: 100, backoffMaxMs: 6_000, stableMs: 6_000, killGraceMs: 3_000 });
});

t.test('a connector that keeps exiting is restarted with backoff doubling from the base up to the cap, keeping only its exit code', async (t) => {
  const supervisor = new ConnectorSupervisor(FAST, () => undefined);
  const wanted = config('exit 3');
  const backoffs: number[] = [];
  let seenExit: string | null = null;
  await superviseUntil(supervisor, wanted, () => {
    const { backoff_ms, last_exited_at } = supervisor.status();
    // One backoff per exit: each exit sets the wait before the next start.
    if (last_exited_at !== seenExit && backoff_ms !== null) {
      seenExit = last_exited_at;
      backoffs.push(backoff_ms);
    }
    return backoffs.length >= 9;
  });
  t.same(backoffs, [10, 20, 40, 80, 160, 320, 600, 600, 600]);
  const status = supervisor.status();
  t.equal(status.last_exit_code, 3);
  t.equal(status.last_exit_signal, null);
  t.ok(status.restarts >= 8);
  await supervisor.shutdown();
});

t.test('the environment carries the tunnel URL, port and hostname', async (t) => {
  const out = `${fs.mkdtempSync('/tmp/svc-connector-')}/env`;
  const supervisor = new ConnectorSupervisor(FAST, () => undefined);
  const wanted = config(`printf '%s %s %s' "$SVC_TUNNEL_URL" "$SVC_TUNNEL_PORT" "$SVC_TUNNEL_HOSTNAME" > ${out}; sleep 30`);
  await superviseUntil(supervisor, wanted, () => fs.existsSync(out) && fs.readFileSync(out, 'utf8').length > 0);
  t.equal(fs.readFileSync(out, 'utf8'), 'http://127.0.0.1:4321 4321 mail.example.test');
  await supervisor.shutdown();
});

t.test('a connector that stayed up past the stable time restarts after the base delay again', async (t) => {
  const supervisor = new ConnectorSupervisor(FAST, () => undefined);
  // Three quick exits, then a long run, then an exit.
  const marker = `${fs.mkdtempSync('/tmp/svc-connector-')}/runs`;
  const wanted = config(`n=$(cat ${marker} 2>/dev/null || echo 0); echo $((n+1)) > ${marker}; if [ "$n" -ge 3 ]; then sleep 0.6; fi; exit 1`);
  await superviseUntil(supervisor, wanted, () => supervisor.status().restarts >= 3 && supervisor.status().state === 'running');
  t.equal(supervisor.status().backoff_ms, 40, 'three quick exits: 10, 20, 40');
  await superviseUntil(supervisor, wanted, () => supervisor.status().restarts >= 4);
  t.equal(supervisor.status().backoff_ms, BASE, 'after a stable run the backoff is back to the base');
  await supervisor.shutdown();
});

t.test('stopping sends SIGTERM to the whole process group, then SIGKILL after the grace period', async (t) => {
  const supervisor = new ConnectorSupervisor(FAST, () => undefined);
  // The shell ignores SIGTERM and leaves a background child that also ignores it.
  const pidFile = `${fs.mkdtempSync('/tmp/svc-connector-')}/child`;
  const wanted = config(`trap '' TERM; (trap '' TERM; sleep 30) & echo $! > ${pidFile}; wait`);
  await superviseUntil(supervisor, wanted, () => supervisor.status().pid !== null && fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim() !== '');
  const shell = supervisor.status().pid!;
  const child = Number(fs.readFileSync(pidFile, 'utf8'));
  t.ok(alive(shell) && alive(child));
  const started = Date.now();
  await supervisor.shutdown();
  t.ok(Date.now() - started >= FAST.killGraceMs, 'waited the grace period before SIGKILL');
  t.notOk(alive(shell), 'the shell is gone');
  await sleep(50);
  t.notOk(alive(child), 'its background child is gone');
  t.equal(supervisor.status().last_exit_signal, 'SIGKILL');
  t.equal(await supervisor.check(wanted), null);
  t.equal(supervisor.status().pid, null, 'nothing starts after shutdown');
});

t.test('a new configuration replaces the running connector at once, without backoff', async (t) => {
  const supervisor = new ConnectorSupervisor(FAST, () => undefined);
  await superviseUntil(supervisor, config('sleep 30'), () => supervisor.status().state === 'running');
  const first = supervisor.status().pid!;
  const moved = { ...config('sleep 30'), port: 4322 };
  await supervisor.check(moved);
  const status = supervisor.status();
  t.not(status.pid, first);
  t.equal(status.restarts, 0);
  t.equal(status.backoff_ms, null);
  t.notOk(alive(first), 'the old connector was stopped');
  await supervisor.check(null);
  t.equal(supervisor.status().state, 'stopped', 'no configuration: no connector');
  t.equal(supervisor.status().pid, null);
  await supervisor.shutdown();
});
