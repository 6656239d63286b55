/**
 * Supervising the tunnel connector (spec §8: checked every second, restart backoff up to 60 s).
 * The connector is the owner's shell command, run with `/bin/sh -c` in its own process group so
 * that it and everything it starts can be signalled together. Its output is discarded, never
 * logged: connector commands and their output often carry tunnel tokens. Only exit codes are kept.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { STOPPED_CONNECTOR, type ConnectorStatus } from './settings.js';

/** What the connector is run against: the owner's command and this process's tunnel listener. */
export interface ConnectorConfig {
  command: string;
  hostname: string;
  port: number;
}

export interface ConnectorTiming {
  /** First restart delay; each quick exit doubles it. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** A connector that stayed up this long has recovered: the next restart waits the base delay again. */
  stableMs: number;
  /** After SIGTERM, the process group gets this long before SIGKILL. */
  killGraceMs: number;
}

export const CONNECTOR_TIMING: ConnectorTiming = { backoffBaseMs: 1_000, backoffMaxMs: 60_000, stableMs: 60_000, killGraceMs: 3_000 };

/**
 * `SVC_TEST_REMOTE_BACKOFF_MS` (tests only, docs/testing.md) replaces the 1 s base delay; the cap
 * and the stable time stay 60 times the base, so the doubling and the cap remain observable.
 */
export function connectorTiming(env: NodeJS.ProcessEnv = process.env): ConnectorTiming {
  const base = Number(env.SVC_TEST_REMOTE_BACKOFF_MS);
  if (!Number.isInteger(base) || base <= 0) return CONNECTOR_TIMING;
  return { ...CONNECTOR_TIMING, backoffBaseMs: base, backoffMaxMs: base * 60, stableMs: base * 60 };
}

const sameConfig = (a: ConnectorConfig | null, b: ConnectorConfig | null) =>
  a === b || (a !== null && b !== null && a.command === b.command && a.hostname === b.hostname && a.port === b.port);

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    /* the group is gone already */
  }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export class ConnectorSupervisor {
  #config: ConnectorConfig | null = null;
  #child: ChildProcess | null = null;
  #exited: Promise<void> = Promise.resolve();
  #startedAt: number | null = null;
  /** Checked alive at least once after starting: `running` rather than `starting`. */
  #confirmed = false;
  /** Quick exits in a row, which set the next backoff. */
  #failures = 0;
  #restarts = 0;
  #nextRestartAt: number | null = null;
  #backoffMs: number | null = null;
  #lastExit: { code: number | null; signal: string | null; at: number } | null = null;
  /** Connectors stopped on purpose: their exit is not a crash and schedules no restart. */
  readonly #killed = new WeakSet<ChildProcess>();
  /** Set at service stop: nothing starts again. */
  #shutDown = false;

  constructor(
    private readonly timing: ConnectorTiming,
    /** Called when the connector exits on its own, so the loop records it without waiting a tick. */
    private readonly onExit: () => void,
  ) {}

  /**
   * One supervision check: follow the wanted configuration (null: no connector), start the
   * connector when it is due, and confirm one that survived since the last check. Returns how long
   * until the next check matters (a pending restart), or null for the regular tick.
   */
  async check(wanted: ConnectorConfig | null, now = Date.now()): Promise<number | null> {
    if (this.#shutDown) return null;
    if (!sameConfig(wanted, this.#config)) {
      // Disabled, a new hostname (a new listener port) or a new command: a fresh start, no backoff.
      await this.#terminate();
      if (this.#shutDown) return null;
      this.#config = wanted;
      this.#failures = 0;
      this.#restarts = 0;
      this.#nextRestartAt = null;
      this.#backoffMs = null;
      this.#lastExit = null;
    }
    if (!this.#config) return null;
    if (this.#child) {
      this.#confirmed = true;
      return null;
    }
    if (this.#nextRestartAt !== null && now < this.#nextRestartAt) return this.#nextRestartAt - now;
    if (this.#nextRestartAt !== null) this.#restarts++;
    this.#nextRestartAt = null;
    this.#spawn(this.#config, now);
    return null;
  }

  status(): ConnectorStatus {
    if (!this.#config) return STOPPED_CONNECTOR;
    const state = this.#child ? (this.#confirmed ? 'running' : 'starting') : this.#nextRestartAt !== null ? 'backoff' : 'stopped';
    return {
      state,
      pid: this.#child?.pid ?? null,
      restarts: this.#restarts,
      last_exit_code: this.#lastExit?.code ?? null,
      last_exit_signal: this.#lastExit?.signal ?? null,
      last_started_at: iso(this.#startedAt),
      last_exited_at: iso(this.#lastExit?.at ?? null),
      next_restart_at: iso(this.#nextRestartAt),
      backoff_ms: this.#backoffMs,
    };
  }

  /** At service stop: the connector goes and nothing starts again. */
  shutdown(): Promise<void> {
    this.#shutDown = true;
    return this.#terminate();
  }

  /** SIGTERM to the connector's group, SIGKILL after the grace period; resolves once it exited. */
  async #terminate(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#killed.add(child);
    signalGroup(child.pid, 'SIGTERM');
    const exited = this.#exited;
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.timing.killGraceMs)));
    await Promise.race([exited, graceOver]);
    clearTimeout(timer);
    // Whatever the shell started and left behind goes too.
    signalGroup(child.pid, 'SIGKILL');
    await exited;
  }

  #spawn(config: ConnectorConfig, now: number): void {
    const child = spawn('/bin/sh', ['-c', config.command], {
      detached: true,
      stdio: 'ignore',
      env: {
        ...process.env,
        SVC_TUNNEL_URL: `http://127.0.0.1:${config.port}`,
        SVC_TUNNEL_PORT: String(config.port),
        SVC_TUNNEL_HOSTNAME: config.hostname,
      },
    });
    this.#child = child;
    this.#confirmed = false;
    this.#startedAt = now;
    this.#exited = new Promise((resolve) => {
      let done = false;
      const exited = (code: number | null, signal: string | null) => {
        if (done) return;
        done = true;
        this.#exitedWith(child, code, signal);
        resolve();
      };
      child.once('exit', exited);
      // spawn failures (no /bin/sh, no process slots) count as an exit without a code.
      child.once('error', () => exited(null, null));
    });
  }

  #exitedWith(child: ChildProcess, code: number | null, signal: string | null): void {
    const now = Date.now();
    if (this.#child === child) this.#child = null;
    this.#lastExit = { code, signal, at: now };
    // A process the shell started in the background must not outlive the connector.
    signalGroup(child.pid, 'SIGKILL');
    if (this.#killed.has(child)) return;
    if (this.#startedAt !== null && now - this.#startedAt >= this.timing.stableMs) this.#failures = 0;
    this.#backoffMs = Math.min(this.timing.backoffBaseMs * 2 ** this.#failures, this.timing.backoffMaxMs);
    this.#failures++;
    this.#nextRestartAt = now + this.#backoffMs;
    this.onExit();
  }
}
