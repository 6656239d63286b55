/**
 * `svc completion bash|zsh`: a completion script generated from the command table, so it always
 * matches the commands and options of this svc. Commands, subcommands and options complete;
 * other words fall back to file names.
 */
import { CliError } from './exit-codes.js';
import { COMMON_OPTIONS, type Group } from './commands.js';

interface Words {
  commands: string[];
  /** Subcommands per command (empty for single-action commands). */
  subcommands: Record<string, string[]>;
  /** Options per "command" or "command subcommand". */
  options: Record<string, string[]>;
}

async function words(): Promise<Words> {
  const { GROUPS, LOCAL_COMMANDS } = await import('./registry.js');
  const groups: Group[] = [...LOCAL_COMMANDS, ...(await Promise.all(Object.values(GROUPS).map((g) => g.load())))];
  const result: Words = { commands: [], subcommands: {}, options: {} };
  for (const g of groups) {
    result.commands.push(g.name);
    const names = Object.keys(g.actions).filter(Boolean);
    result.subcommands[g.name] = names;
    for (const [name, action] of Object.entries(g.actions)) {
      result.options[name ? `${g.name} ${name}` : g.name] = [...(action.options ?? []), ...COMMON_OPTIONS].map((o) => `--${o.name}`);
    }
  }
  return result;
}

/** Shell words are plain [a-z-] names, so they need no quoting inside the generated case arms. */
const join = (list: string[]) => list.join(' ');

function bash(w: Words): string {
  const subs = Object.entries(w.subcommands)
    .filter(([, s]) => s.length)
    .map(([c, s]) => `    ${c}) subs="${join(s)}" ;;`)
    .join('\n');
  const opts = Object.entries(w.options)
    .map(([key, o]) => `    "${key}") opts="${join(o)}" ;;`)
    .join('\n');
  return `# svc bash completion. Load it with:  source <(svc completion bash)
# or install it:  svc completion bash > ~/.local/share/bash-completion/completions/svc
_svc() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmd="\${COMP_WORDS[1]}" sub="" subs="" opts=""
  COMPREPLY=()
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${join(w.commands)} help" -- "$cur"))
    return 0
  fi
  case "$cmd" in
${subs}
  esac
  if [ -n "$subs" ] && [ "$COMP_CWORD" -eq 2 ]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
    return 0
  fi
  [ -n "$subs" ] && sub=" \${COMP_WORDS[2]}"
  if [[ "$cur" == -* ]]; then
    case "$cmd$sub" in
${opts}
    esac
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return 0
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _svc svc
`;
}

function zsh(w: Words): string {
  const subs = Object.entries(w.subcommands)
    .filter(([, s]) => s.length)
    .map(([c, s]) => `    ${c}) subs=(${join(s)}) ;;`)
    .join('\n');
  const opts = Object.entries(w.options)
    .map(([key, o]) => `    "${key}") opts=(${join(o)}) ;;`)
    .join('\n');
  return `#compdef svc
# svc zsh completion. Load it with:  source <(svc completion zsh)
# or install it as _svc in a directory of $fpath.
_svc() {
  local cmd="\${words[2]}" key
  local -a subs opts
  if (( CURRENT == 2 )); then
    compadd -- ${join(w.commands)} help
    return
  fi
  case "$cmd" in
${subs}
  esac
  if (( \${#subs} )) && (( CURRENT == 3 )); then
    compadd -- $subs
    return
  fi
  key="$cmd"
  (( \${#subs} )) && key="$cmd \${words[3]}"
  if [[ "$PREFIX" == -* ]]; then
    case "$key" in
${opts}
    esac
    compadd -- $opts
    return
  fi
  _files
}
if [[ "\${funcstack[1]}" == _svc ]]; then
  _svc "$@"
else
  compdef _svc svc
fi
`;
}

export const group: Group = {
  name: 'completion',
  summary: 'print a shell completion script',
  actions: {
    '': {
      summary: 'Print a completion script for bash or zsh on stdout.',
      usage: 'bash|zsh',
      args: [1, 1],
      examples: ['source <(svc completion bash)', 'svc completion zsh > "${fpath[1]}/_svc"'],
      async run(ctx) {
        const shell = ctx.args[0];
        if (shell !== 'bash' && shell !== 'zsh') throw new CliError('not_supported', `No completion script for ${shell}.`, 'Use bash or zsh.');
        process.stdout.write(shell === 'bash' ? bash(await words()) : zsh(await words()));
      },
    },
  },
};
