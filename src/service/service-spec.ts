/** What an installed background service runs: the same `svc serve` command on every platform. */

export interface ServiceSpec {
  /** Absolute path of the Node.js binary that runs svc (`process.execPath` at install time). */
  nodePath: string;
  /** Absolute path of the package's `bin/svc` launcher. */
  svcScript: string;
  /** Absolute home directory. */
  home: string;
  port: number;
  logs: ServiceLogs;
}

export interface ServiceLogs {
  stdout: string;
  stderr: string;
}

/** A service always runs the production flavor; the home is explicit so the flavor only matters for defaults. */
export const SERVICE_FLAVOR = 'production';

/** Arguments after the Node.js binary. No secrets: the key is unlocked from the credential store at start. */
export function serveArguments(spec: ServiceSpec): string[] {
  return [spec.svcScript, 'serve', '--home', spec.home, '--port', String(spec.port), '--flavor', SERVICE_FLAVOR];
}

/**
 * Environment for the served process, for glibc's allocator (ignored elsewhere). A fixed mmap
 * threshold puts every buffer over 128 KiB in its own mapping that goes back to the system when
 * freed; glibc's default raises the threshold after the first large free, so the buffers of one
 * 20 MB message then stayed in the heap (~150 MiB of RSS kept after it was stored). Two arenas
 * instead of eight per core keep the worker threads from each holding freed memory of their own.
 * Measured by bench/inbound-memory.ts; scripts/start.sh sets the same for `npm start`.
 */
export const SERVE_ENVIRONMENT: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' };

/** Human description shared by all definitions. */
export function serviceDescription(spec: ServiceSpec): string {
  return `svc mail service (home ${spec.home}, port ${spec.port})`;
}

/** The observed state, normalised across service managers. */
export type ServiceState =
  | 'running'
  | 'starting'
  | 'stopping'
  | 'stopped'
  | 'failed'
  | 'not_registered'
  | 'not_installed'
  | 'unknown';

export interface ObservedState {
  /** The manager will start it at login; null when the manager cannot be observed. */
  registered: boolean | null;
  running: boolean | null;
  state: ServiceState;
}

export const UNOBSERVED: ObservedState = { registered: null, running: null, state: 'unknown' };

/**
 * Reads the port back from the words of an installed definition's command (node, svc, serve, ...);
 * null when absent or out of range. Only the word after `--port` counts, so a home path that
 * happens to contain "--port" cannot be mistaken for it.
 */
export function portFromServeArguments(words: string[]): number | null {
  let port: number | null = null;
  // serve's arguments are `--flag value` pairs, so step over each value.
  for (let i = words.indexOf('serve') + 1; i > 0 && i < words.length - 1; i += 2) {
    if (words[i] !== '--port') continue;
    const value = words[i + 1];
    port = /^\d{1,5}$/.test(value) && Number(value) >= 1 && Number(value) <= 65535 ? Number(value) : null;
  }
  return port;
}

/**
 * Splits a command line into words at unquoted spaces. With `backslashEscapes` (systemd), `\"` and
 * `\\` inside quotes stand for `"` and `\`; on Windows backslashes are path separators.
 */
export function splitCommandLine(line: string, backslashEscapes: boolean): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted && backslashEscapes && c === '\\' && i + 1 < line.length) {
      word += line[++i];
    } else if (c === '"') {
      quoted = !quoted;
      inWord = true;
    } else if (!quoted && /\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}
