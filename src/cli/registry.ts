/**
 * Every `svc` command group the CLI knows, loaded on demand, plus the help of the commands that
 * live elsewhere (serve, service, edge, oauth) so `--help` and the completion scripts cover all.
 */
import { opt, runGroup, actionHelp, groupHelp, type Group } from './commands.js';

type Loader = () => Promise<Group>;

/** The client command groups (they call the running service), in help order. */
export const GROUPS: Record<string, { summary: string; load: Loader }> = {
  status: { summary: 'show the running service: transport, edge, loops, remote access, counts', load: async () => (await import('./status.js')).group },
  doctor: { summary: 'check keys, edge, DNS, self-test, transport, disk, backup, loops and quarantine; exit 0 only when all pass (owner)', load: async () => (await import('./doctor.js')).group },
  open: { summary: 'open the owner web app in a browser, signed in (or print the link)', load: async () => (await import('./open.js')).group },
  inboxes: { summary: 'list, create, update, pause, resume and delete inboxes', load: async () => (await import('./inboxes.js')).group },
  pods: { summary: 'tenants: list, create and delete pods; each owns its inboxes, domains, webhooks and keys', load: async () => (await import('./pods.js')).group },
  threads: { summary: 'list, search, read, label and delete conversations', load: async () => (await import('./mail.js')).threads },
  messages: { summary: 'list, search, read, label, delete and export messages (raw MIME, attachments)', load: async () => (await import('./mail.js')).messages },
  send: { summary: 'send a new message (body from a flag, a file or stdin; --attach files)', load: async () => (await import('./send.js')).send },
  reply: { summary: 'reply to a message', load: async () => (await import('./send.js')).reply },
  forward: { summary: 'forward a message', load: async () => (await import('./send.js')).forward },
  resolve: { summary: 'settle a send_unknown message as sent or failed (owner)', load: async () => (await import('./send.js')).resolve },
  drafts: { summary: 'list, create, approve, reject, send and delete drafts', load: async () => (await import('./drafts.js')).group },
  'api-keys': { summary: 'create (secret shown once) and manage agent API keys (owner)', load: async () => (await import('./keys.js')).group },
  webhooks: { summary: 'deliver events to your URLs', load: async () => (await import('./webhooks.js')).group },
  lists: { summary: 'allow and block lists; rejected inbound mail', load: async () => (await import('./lists.js')).group },
  domains: { summary: 'register domains, zone file, apply and verify (owner)', load: async () => (await import('./domains.js')).group },
  metrics: { summary: 'mail event counts and usage totals over time; unread and awaiting-approval counts', load: async () => (await import('./metrics.js')).group },
  quarantine: { summary: 'inbound mail that could not be processed: list, retry, delete (owner)', load: async () => (await import('./quarantine.js')).group },
  transport: { summary: 'pair with an edge, SMTP smart host (owner)', load: async () => (await import('./transport.js')).group },
  guard: { summary: 'what holds a guarded key\'s sends for your approval (owner)', load: async () => (await import('./guard.js')).group },
  remote: { summary: 'remote access through a tunnel (owner)', load: async () => (await import('./remote.js')).group },
  backup: { summary: 'make an encrypted backup file of the home, while svc runs or stopped (owner)', load: async () => (await import('./backup.js')).backup },
  restore: { summary: 'restore a backup into a new home with the recovery code', load: async () => (await import('./backup.js')).restoreGroup },
  key: { summary: 'the home\'s recovery code: `svc key recovery` (owner)', load: async () => (await import('./backup.js')).key },
  completion: { summary: 'print a bash or zsh completion script', load: async () => (await import('./completion.js')).group },
};

/**
 * Help for the commands implemented in serve/service/edge/oauth modules: their options as those
 * modules parse them, described here so every command answers --help with an example.
 */
export const LOCAL_COMMANDS: Group[] = [
  {
    name: 'serve',
    summary: 'run the service in the foreground',
    actions: {
      '': {
        summary: 'Run svc: unlock the home, serve on 127.0.0.1 and run the mail loops. Refused with SVC_URL or SVC_API_KEY set (exit 4).',
        options: [
          opt('init', 'Create the home and its keys on first use (never overwrites).'),
          opt('port N', 'Port on 127.0.0.1 (default 8733; a development home moves to the next free one when it is taken; 0 picks any free port).'),
          opt('local-edge', 'Also run the built-in edge in-process on loopback and pair with it.'),
          opt('smtp-port N', 'The local edge SMTP port on 127.0.0.1 (with --local-edge; default 2733, the same rule as --port).'),
          opt('edge-dns IP[:PORT][,...]', 'Name servers the local edge uses for MX lookups.'),
          opt('relay-port N', 'Deliver outbound mail to this port instead of 25 (testing).'),
          opt('dns IP[:PORT][,...]', 'Name servers for domain checks.'),
        ],
        examples: ['svc serve --init --local-edge', 'svc serve --port 8800', 'svc --version'],
        run: async () => 0,
      },
    },
  },
  {
    name: 'init',
    summary: 'create a home and its keys (keyring, or a systemd credential for servers)',
    actions: {
      '': {
        summary: 'Create the home and its database key without serving; never changes an existing home.',
        options: [
          opt('home DIR', 'The home to create.'),
          opt('unlock keyring|systemd-creds', 'Where the key that unlocks the home lives: the OS keyring (default) or a systemd encrypted credential sealed to this machine (headless servers, as root).'),
          opt('with-key host|tpm2|host+tpm2', 'What seals the systemd credential (default host).'),
        ],
        examples: ['svc init --home /var/lib/svc --unlock systemd-creds'],
        run: async () => 0,
      },
    },
  },
  {
    name: 'service',
    summary: 'run svc as a background service (per user, or --system on a server)',
    actions: {
      install: {
        summary: 'Register `svc serve` with the platform service manager (release package, initialized home). With --system (root): a system user and hardened system units svc.service and svc-edge.service.',
        options: [
          opt('port N', 'The fixed port (default 8733).'),
          opt('system', 'Install system units for a home made with `svc init --unlock systemd-creds`.'),
          opt('print', 'With --system: print the units instead of installing them.'),
          opt('user NAME', 'With --system: the system user (default svc).'),
          opt('edge', 'With --system: also svc-edge.service (public SMTP on port 25).'),
          opt('edge-hostname NAME', 'The edge host name (MX), required with --edge.'),
          opt('edge-data DIR', 'The edge data directory (default /var/lib/svc-edge).'),
          opt('edge-acme', 'The edge gets its certificate by ACME (port 80); --edge-acme-email ADDR.'),
        ],
        examples: ['svc service install --port 8733', 'svc service install --system --home /var/lib/svc --edge --edge-hostname mx.example.com --print'],
        run: async () => 0,
      },
      status: { summary: 'Show installed, registered, running, state, http_healthy, port and log paths.', examples: ['svc service status --json'], run: async () => 0 },
      uninstall: { summary: 'Remove the service definition; the home and its data stay.', examples: ['svc service uninstall'], run: async () => 0 },
    },
    notes: 'Refused with SVC_URL or SVC_API_KEY set (exit 4). See docs/service.md.',
  },
  {
    name: 'edge',
    summary: 'run the edge standalone (a host with port 25)',
    actions: {
      '': {
        summary: 'Run the internet-facing edge: SMTP receiver, sealed buffer and edge API. Prints its API URL and token for `svc transport set`. Without a host with port 25, the edge can be a Cloudflare Email Worker instead: `svc edge cloudflare dev|init|deploy|status` (see `svc edge cloudflare --help`).',
        options: [opt('data DIR', 'Where the edge keeps its buffer.'), opt('host H', 'Address to listen on.'), opt('smtp-port N', 'SMTP port (default 2733; 25 for real internet mail).'), opt('api-port N', 'Edge API port (default 8790).'), opt('hostname NAME', 'The edge host name (MX).')],
        examples: ['svc edge --data /var/lib/svc-edge --hostname mx.example.com'],
        run: async () => 0,
      },
      cloudflare: {
        summary: 'The serverless edge (a Cloudflare Email Worker on Email Routing): `dev` runs it locally, `init` writes its wrangler configuration, `deploy` deploys it, routes the domains\' mail to it and pairs the home, `status` shows all that. Run `svc edge cloudflare --help`.',
        usage: 'dev|init|deploy|status',
        examples: ['svc edge cloudflare --help'],
        run: async () => 0,
      },
    },
  },
  {
    name: 'oauth',
    summary: 'OAuth clients and grants of MCP apps (owner)',
    actions: {
      clients: { summary: 'List registered OAuth clients with their grants.', examples: ['svc oauth clients'], run: async () => 0 },
      revoke: { summary: 'Revoke a grant and every token it issued.', usage: '<grant_id>', examples: ['svc oauth revoke 0190f4c2-…'], run: async () => 0 },
      purge: { summary: 'Delete client registrations that have no grant.', examples: ['svc oauth purge'], run: async () => 0 },
    },
    notes: 'Refused with SVC_URL or SVC_API_KEY set (exit 4).',
  },
];

/** `svc edge cloudflare <action>`: its own help page, reached from `svc edge cloudflare --help`. */
export const EDGE_CLOUDFLARE: Group = {
  name: 'edge cloudflare',
  summary: 'the serverless edge: a Cloudflare Email Worker on Email Routing (docs/edge.md)',
  actions: {
    dev: {
      summary: 'Run the Worker locally in workerd (miniflare) on 127.0.0.1; prints edge.ready and takes test mail at POST /cdn-cgi/handler/email?from=&to=. Needs miniflare: a source checkout has it, else `npm install -g wrangler@4.86.0`.',
      options: [opt('port N', 'API port on 127.0.0.1 (default 8791; 0 picks a free one).'), opt('data DIR', 'Where its storage and api-token live (default <home>/edge/cloudflare).'), opt('max-message-bytes N', 'Size limit (default 25 MiB).')],
      examples: ['svc edge cloudflare dev --port 0 --data /tmp/cf-edge'],
      run: async () => 0,
    },
    init: {
      summary: 'Write the deploy directory: the built Worker, wrangler.json (R2 bucket <name>-buffer), svc-cloudflare.json and the edge token (0600, kept on reruns). Sends nothing.',
      options: [
        opt('dir DIR', 'The deploy directory (default <home>/edge-cloudflare).'),
        opt('name WORKER', 'The Worker name: lower-case letters, digits and hyphens, at most 63 (default svc-edge).'),
        opt('domain D...', 'A domain whose mail goes to the Worker (its DNS on Cloudflare).'),
        opt('account-id ID', 'The Cloudflare account id (32 hex digits), when the token sees several accounts.'),
      ],
      examples: ['svc edge cloudflare init --domain example.com'],
      run: async () => 0,
    },
    deploy: {
      summary: 'Run wrangler (R2 bucket, deploy, secret EDGE_TOKEN), enable Email Routing and route each inbox address (or the catch-all) to the Worker, pair the home. The API token comes from --api-token-file or CLOUDFLARE_API_TOKEN and is never stored. Needs wrangler: `npm install -g wrangler@4.86.0`.',
      options: [
        opt('dir DIR', 'The deploy directory (default <home>/edge-cloudflare).'),
        opt('dry-run', 'Only bundle the Worker (wrangler deploy --dry-run): nothing uploaded, no account needed.'),
        opt('routing-only', 'Skip wrangler: only Email Routing and pairing (after creating an inbox).'),
        opt('api-token-file FILE', 'The Cloudflare API token (- reads stdin); else CLOUDFLARE_API_TOKEN.'),
        opt('catch-all', 'Route every address of the domains to the Worker (new inboxes need no redeploy).'),
        opt('url URL', 'The Worker\'s https origin, when wrangler does not print it (a custom domain).'),
      ],
      examples: ['CLOUDFLARE_ACCOUNT_ID=… svc edge cloudflare deploy --api-token-file ~/cloudflare.token', 'svc edge cloudflare deploy --dry-run', 'svc edge cloudflare deploy --routing-only --api-token-file ~/cloudflare.token'],
      run: async () => 0,
    },
    status: {
      summary: 'Show the Worker\'s name and URL, wrangler, whether the home runs and is paired with it, and with a token each domain\'s Email Routing (enabled, address rules, catch-all).',
      options: [opt('dir DIR', 'The deploy directory (default <home>/edge-cloudflare).'), opt('api-token-file FILE', 'The Cloudflare API token (- reads stdin); else CLOUDFLARE_API_TOKEN.')],
      examples: ['svc edge cloudflare status --api-token-file ~/cloudflare.token'],
      run: async () => 0,
    },
  },
  notes: 'Outbound mail from a home on this edge goes through an SMTP smart host (svc transport set --smtp-host …; docs/deploy.md).',
};

/** Prints the help of a command implemented elsewhere; false when `command` is not one. */
export async function localHelp(command: string, rest: string[]): Promise<boolean> {
  const group = LOCAL_COMMANDS.find((g) => g.name === command);
  if (!group) return false;
  const words = rest.filter((a) => !a.startsWith('-'));
  if (command === 'edge' && words[0] === 'cloudflare') {
    const sub = words[1];
    process.stdout.write(sub !== undefined && Object.hasOwn(EDGE_CLOUDFLARE.actions, sub) ? actionHelp(EDGE_CLOUDFLARE, sub, EDGE_CLOUDFLARE.actions[sub]) : groupHelp(EDGE_CLOUDFLARE));
    return true;
  }
  const action = words[0];
  if (action && group.actions[action]) process.stdout.write(actionHelp(group, action, group.actions[action]));
  else await runGroup(group, ['--help']);
  return true;
}

/** Runs a client command group; null when `command` is not one. */
export async function runRegistered(command: string, rest: string[]): Promise<number | null> {
  const entry = Object.hasOwn(GROUPS, command) ? GROUPS[command] : undefined;
  if (!entry) return null;
  return runGroup(await entry.load(), rest);
}

/** The command overview for `svc help`. */
export function overview(): string {
  const rows = [...LOCAL_COMMANDS.map((g) => [g.name, g.summary]), ...Object.entries(GROUPS).map(([name, g]) => [name, g.summary])];
  const width = Math.max(...rows.map(([n]) => n.length));
  return [
    'svc — a self-hosted mail service for AI agents',
    '',
    'Usage: svc <command> [arguments] [options]',
    '',
    'Commands:',
    ...rows.map(([n, s]) => `  ${n.padEnd(width)}  ${s}`),
    '',
    'Callers: the owner, through the running service of --home (else SVC_HOME, else the default',
    'home); or an agent, with SVC_URL and SVC_API_KEY set. Every command takes --json and --help.',
    'Exit codes: 0 ok, 4 missing_permission, 6 action_required, 9 not_supported,',
    '10 service_unavailable, 1 anything else.',
    '',
    'Run `svc <command> --help` for its options and an example.',
    '',
  ].join('\n');
}
