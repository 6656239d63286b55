/**
 * The shape every client command group shares: `svc <group> <action> [args] [options]`, each
 * action with its options, a usage line and examples for `--help`, and the common options
 * (--home, --flavor, --json, --help). Parsing, help and error reporting happen here once.
 */
import fs from 'node:fs';
import { parseArgs, type FlagSpec, type FlagValue } from './args.js';
import { CliError, reportCliError } from './exit-codes.js';
import { connect, type ServiceClient } from './owner-client.js';
import { out } from './output.js';

/** One option: `name`, `name ARG` (one value) or `name ARG...` (repeatable). */
export interface Option {
  name: string;
  kind: 'boolean' | 'string' | 'list';
  arg: string | null;
  help: string;
}

/** `opt('to ADDRESS...', 'recipient')`: the syntax picks the kind. */
export function opt(syntax: string, help: string): Option {
  const [name, arg] = syntax.split(' ');
  if (!arg) return { name, kind: 'boolean', arg: null, help };
  return arg.endsWith('...') ? { name, kind: 'list', arg: arg.slice(0, -3), help } : { name, kind: 'string', arg, help };
}

export const COMMON_OPTIONS: Option[] = [
  opt('home DIR', 'Owner mode: the home whose running service to call (default: SVC_HOME, then the flavor default).'),
  opt('flavor F', 'development or production: picks the default home.'),
  opt('json', 'Print JSON (one document) instead of a table.'),
  opt('help', 'Show this help.'),
];

/** Paging options shared by list actions (spec §4.1). */
export const PAGE_OPTIONS: Option[] = [opt('limit N', 'Items per page, 1–100 (default 20).'), opt('page-token T', 'Continue a listing from its next_page_token.'), opt('ascending', 'Oldest first.')];

export interface Ctx {
  args: string[];
  flags: Record<string, FlagValue>;
  json: boolean;
  /** The caller: owner (connection.json of --home) or agent (SVC_URL + SVC_API_KEY). */
  client(): Promise<ServiceClient>;
  str(name: string): string | undefined;
  bool(name: string): boolean;
  /** Every value of a repeatable option; with `split`, comma-separated values too. */
  list(name: string, split?: boolean): string[];
  int(name: string, min: number, max: number): number | undefined;
  /** The text of an option holding a file path (`-` is stdin). */
  file(name: string): Buffer | undefined;
}

export interface Action {
  summary: string;
  /** What follows `svc <group> <action>`, options excluded (e.g. `<inbox_id>`). */
  usage?: string;
  args?: [min: number, max: number];
  options?: Option[];
  examples: string[];
  run(ctx: Ctx): Promise<number | void>;
}

export interface Group {
  name: string;
  summary: string;
  /** Actions by name; a single action named '' makes `svc <group> [args]` (e.g. `svc status`). */
  actions: Record<string, Action>;
  /** Extra paragraphs for the group help. */
  notes?: string;
}

const invalid = (message: string, fix: string) => new CliError('validation_error', message, fix);

function optionLines(options: Option[]): string[] {
  const syntax = options.map((o) => `--${o.name}${o.arg ? ` ${o.arg}` : ''}${o.kind === 'list' ? ' (repeatable)' : ''}`);
  const width = Math.max(...syntax.map((s) => s.length));
  return options.map((o, i) => `  ${syntax[i].padEnd(width)}  ${o.help}`);
}

const commandOf = (group: Group, name: string) => `svc ${group.name}${name ? ` ${name}` : ''}`;

export function actionHelp(group: Group, name: string, action: Action): string {
  const lines = [`Usage: ${commandOf(group, name)}${action.usage ? ` ${action.usage}` : ''} [options]`, '', action.summary, ''];
  if (action.options?.length) lines.push('Options:', ...optionLines(action.options), '');
  lines.push('Common options:', ...optionLines(COMMON_OPTIONS), '  Agent mode: set SVC_URL and SVC_API_KEY (an API key) instead of --home.', '');
  lines.push(action.examples.length > 1 ? 'Examples:' : 'Example:', ...action.examples.map((e) => `  ${e}`));
  return lines.join('\n') + '\n';
}

export function groupHelp(group: Group): string {
  const names = Object.keys(group.actions);
  if (names.length === 1 && names[0] === '') return actionHelp(group, '', group.actions['']);
  const usages = names.map((n) => `  ${commandOf(group, n)}${group.actions[n].usage ? ` ${group.actions[n].usage}` : ''}`);
  const width = Math.max(...usages.map((u) => u.length));
  const lines = [`svc ${group.name} — ${group.summary}`, '', 'Commands:', ...names.map((n, i) => `${usages[i].padEnd(width)}  ${group.actions[n].summary}`), ''];
  if (group.notes) lines.push(group.notes, '');
  lines.push('Examples:', ...names.slice(0, 4).map((n) => `  ${group.actions[n].examples[0]}`), '', `Run \`svc ${group.name} <command> --help\` for the options of one command.`);
  return lines.join('\n') + '\n';
}

const wantsHelp = (argv: string[]) => {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === '--help' || a === '-h');
};

/** Runs `svc <group> ...`; returns the exit code. */
export async function runGroup(group: Group, argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  try {
    let name = '';
    let rest = argv;
    if (!('' in group.actions)) {
      if (argv.length === 0 || argv[0].startsWith('-')) {
        if (argv.length === 0 || wantsHelp(argv)) {
          out(groupHelp(group));
          return 0;
        }
        throw invalid(`Missing the ${group.name} command.`, `Run \`svc ${group.name} --help\` to list them.`);
      }
      [name, ...rest] = argv;
    }
    const action = group.actions[name];
    if (!action) throw invalid(`Unknown ${group.name} command "${name}".`, `Run \`svc ${group.name} --help\` to list them.`);
    if (wantsHelp(rest)) {
      out(actionHelp(group, name, action));
      return 0;
    }
    const spec: FlagSpec = {};
    for (const o of [...COMMON_OPTIONS, ...(action.options ?? [])]) spec[o.name] = o.kind;
    const { flags, positionals } = parseArgs(rest, spec);
    const [min, max] = action.args ?? [0, 0];
    const usage = `Usage: ${commandOf(group, name)}${action.usage ? ` ${action.usage}` : ''} (see --help)`;
    if (positionals.length < min) throw invalid(`Missing ${action.usage?.split(' ')[positionals.length] ?? 'an argument'}.`, usage);
    if (positionals.length > max) throw invalid(`Unexpected argument "${positionals[max]}".`, usage);
    const str = (n: string) => (typeof flags[n] === 'string' ? (flags[n] as string) : undefined);
    const ctx: Ctx = {
      args: positionals,
      flags,
      json: flags.json === true,
      client: () => connect({ home: str('home'), flavor: str('flavor') }),
      str,
      bool: (n) => flags[n] === true,
      list: (n, split = false) => {
        const values = (flags[n] as string[] | undefined) ?? [];
        return split ? values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean) : values;
      },
      int: (n, lo, hi) => {
        const v = str(n);
        if (v === undefined) return undefined;
        if (!/^\d+$/.test(v) || Number(v) < lo || Number(v) > hi) throw invalid(`--${n} must be an integer from ${lo} to ${hi}.`, usage);
        return Number(v);
      },
      file: (n) => {
        const p = str(n);
        if (p === undefined) return undefined;
        try {
          return p === '-' ? fs.readFileSync(0) : fs.readFileSync(p);
        } catch {
          throw invalid(`--${n}: cannot read ${p === '-' ? 'stdin' : p}.`, 'Check the path and its permissions.');
        }
      },
    };
    return (await action.run(ctx)) ?? 0;
  } catch (err) {
    return reportCliError(err, json);
  }
}

/** `limit`, `page_token`, `ascending` from the paging options, for a list query. */
export function pageQuery(ctx: Ctx): Record<string, string | number | boolean | undefined> {
  return { limit: ctx.int('limit', 1, 100), page_token: ctx.str('page-token'), ascending: ctx.bool('ascending') ? true : undefined };
}

export const enc = encodeURIComponent;
