/** A small, strict argument parser: known flags only, clear errors. */
import { CliError } from './exit-codes.js';

/** `boolean` flags take no value; `string` takes one; `list` may repeat (and splits nothing). */
export interface FlagSpec {
  [name: string]: 'boolean' | 'string' | 'list';
}

export type FlagValue = string | boolean | string[];

/** Flags of a spec without `list` entries are plain strings and booleans. */
type FlagsOf<S extends FlagSpec> = Record<string, 'list' extends S[keyof S] ? FlagValue : string | boolean>;

export function parseArgs<S extends FlagSpec>(argv: string[], spec: S): { flags: FlagsOf<S>; positionals: string[] } {
  const flags: Record<string, FlagValue> = {};
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    // `--` ends the options: what follows is positional even when it starts with dashes.
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2);
    const kind = spec[name];
    if (!kind) throw new CliError('validation_error', `Unknown option --${name}.`, 'Run the command with --help to see its options.');
    if (kind === 'boolean') {
      if (inline !== undefined) throw new CliError('validation_error', `Option --${name} takes no value.`);
      flags[name] = true;
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new CliError('validation_error', `Option --${name} needs a value.`);
    if (kind === 'list') flags[name] = [...((flags[name] as string[] | undefined) ?? []), value];
    else flags[name] = value;
  }
  return { flags: flags as FlagsOf<S>, positionals };
}

export function parsePort(value: FlagValue | undefined, fallback: number, allowZero: boolean): number {
  if (value === undefined) return fallback;
  const port = Number(value);
  const min = allowZero ? 0 : 1;
  if (typeof value !== 'string' || !/^\d+$/.test(value) || port < min || port > 65535) {
    throw new CliError('validation_error', `--port must be an integer from ${min} to 65535.`);
  }
  return port;
}
