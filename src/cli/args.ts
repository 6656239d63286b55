/** A small, strict argument parser: known flags only, clear errors. */
import { CliError } from './exit-codes.js';

export interface FlagSpec {
  [name: string]: 'boolean' | 'string';
}

export function parseArgs(argv: string[], spec: FlagSpec): { flags: Record<string, string | boolean>; positionals: string[] } {
  const flags: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2);
    const kind = spec[name];
    if (!kind) throw new CliError('validation_error', `Unknown option --${name}.`, 'Run `svc help` for the options of each command.');
    if (kind === 'boolean') {
      flags[name] = true;
    } else {
      const value = inline ?? argv[++i];
      if (value === undefined) throw new CliError('validation_error', `Option --${name} needs a value.`);
      flags[name] = value;
    }
  }
  return { flags, positionals };
}

export function parsePort(value: string | boolean | undefined, fallback: number, allowZero: boolean): number {
  if (value === undefined) return fallback;
  const port = Number(value);
  const min = allowZero ? 0 : 1;
  if (typeof value !== 'string' || !/^\d+$/.test(value) || port < min || port > 65535) {
    throw new CliError('validation_error', `--port must be an integer from ${min} to 65535.`);
  }
  return port;
}
