/**
 * `svc edge cloudflare init|deploy|status`: deploys the Email Worker edge with wrangler
 * (docs/edge.md, "Deploying the Cloudflare edge"). `init` writes a deploy directory (the built
 * Worker, wrangler.json, svc-cloudflare.json, the 0600 edge token); `deploy` runs `wrangler
 * deploy`, sets EDGE_TOKEN with `wrangler secret put` fed on stdin, configures Email Routing
 * through the Cloudflare API and pairs the home. Credentials reach wrangler only through its
 * environment, never its command line. The home's public key needs no secret: the home pushes it
 * with its routing.
 */
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { domainToUnicode, fileURLToPath } from 'node:url';
import { resolveHome, type Flavor } from '../keys/home.js';
import { loadOrCreateApiToken } from '../edge/api-token.js';
import { ensurePrivateDir } from '../edge/durable-files.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../edge/limits.js';
import { CLOUDFLARE_WORKER_NAME } from '../edge/identity.js';
import { normalizeDomainName } from '../domains/names.js';
import { CLOUDFLARE_API_BASE } from '../domains/providers/cloudflare.js';
import { DnsProviderError } from '../domains/providers/provider.js';
import { CloudflareEmailRouting } from '../domains/providers/cloudflare-email-routing.js';
import { parseArgs, type FlagValue } from './args.js';
import { CliError, reportCliError } from './exit-codes.js';
import { isSourceCheckout, packageRoot } from './package-root.js';
import { connect } from './owner-client.js';
import { COMPATIBILITY_DATE, WRANGLER_VERSION } from './edge-cloudflare.js';
import type { TransportResponse } from '../mail/transport.js';

/** A Worker name as Cloudflare takes it (and as it goes into a workers.dev host name). */
export const WORKER_NAME = CLOUDFLARE_WORKER_NAME;
/** One DNS label (an account's workers.dev subdomain, a label of --url's host). */
const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** Terminal colour and cursor sequences wrangler may print around its URL. */
const ANSI_ESCAPE = /\x1b\[[0-9;?]*[A-Za-z]/g;
const ACCOUNT_ID = /^[0-9a-f]{32}$/;
const DEFAULT_WORKER_NAME = 'svc-edge';
const SETTINGS_FILE = 'svc-cloudflare.json';
const WRANGLER_FILE = 'wrangler.json';
const WORKER_FILE = 'worker.js';
const TOKEN_FILE = 'api-token';
const MAX_DOMAINS = 100;
/** Inbox pages read from the home at most (100 each). */
const MAX_INBOX_PAGES = 100;
/** What a wrangler run may print that svc keeps (the workers.dev URL is in it). */
const MAX_CHILD_OUTPUT = 1024 * 1024;
const SELFTEST_LOCAL_PART = 'svc-selftest';
/** No banner (its update check calls the npm registry), no metrics, no error reports. */
const WRANGLER_QUIET: NodeJS.ProcessEnv = { WRANGLER_HIDE_BANNER: 'true', WRANGLER_SEND_METRICS: 'false', WRANGLER_SEND_ERROR_REPORTS: 'false' };

const USAGE = [
  'svc edge cloudflare init [--dir DIR] [--name WORKER_NAME] [--domain D ...] [--account-id ID]',
  'svc edge cloudflare deploy [--dir DIR] [--dry-run | --routing-only] [--api-token-file FILE] [--catch-all] [--url URL]',
  'svc edge cloudflare status [--dir DIR] [--api-token-file FILE]',
].join('\n');

const FLAGS = {
  dir: 'string', name: 'string', domain: 'list', 'account-id': 'string', home: 'string', flavor: 'string',
  'dry-run': 'boolean', 'routing-only': 'boolean', 'api-token-file': 'string', 'api-base': 'string', 'catch-all': 'boolean', url: 'string', json: 'boolean',
} as const;

interface Settings {
  worker_name: string;
  domains: string[];
  account_id: string | null;
  /** The Worker's URL once known (wrangler's deploy output or --url). */
  url: string | null;
}

const invalid = (message: string, fix = `Usage:\n${USAGE}`) => new CliError('validation_error', message, fix);
const say = (text: string) => process.stdout.write(text + '\n');

function readSettings(dir: string): Settings {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, SETTINGS_FILE), 'utf8');
  } catch {
    throw new CliError('not_found', `${dir} is not a Cloudflare edge deploy directory (no ${SETTINGS_FILE}).`, 'Run `svc edge cloudflare init` first (with the same --dir).');
  }
  const s = JSON.parse(text) as Settings;
  if (!WORKER_NAME.test(s.worker_name) || !Array.isArray(s.domains)) throw new CliError('validation_error', `${path.join(dir, SETTINGS_FILE)} is damaged.`, 'Run `svc edge cloudflare init` again.');
  s.domains = s.domains.map((d) => normalizeDomainName(String(d)));
  return s;
}

function writeFile(file: string, text: string): boolean {
  let old: string | null = null;
  try {
    old = fs.readFileSync(file, 'utf8');
  } catch {
    // new
  }
  if (old === text) return false;
  fs.writeFileSync(file, text, { mode: 0o600 });
  return true;
}

/** The built Worker next to this file's directory (dist/src/edge/cloudflare/worker.js). */
const builtWorker = () => path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'edge', 'cloudflare', WORKER_FILE);

/** wrangler: svc's own node_modules (a source checkout), PATH, or the global npm root. */
export function findWrangler(): { command: string; args: string[]; where: string } | null {
  const roots = [path.join(packageRoot, 'package.json')];
  try {
    const global = execFileSync('npm', ['root', '-g'], { encoding: 'utf8', timeout: 15_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (global) roots.push(path.join(global, 'package.json'));
  } catch {
    // npm missing: PATH still counts
  }
  for (const from of roots.slice(0, 1)) {
    try {
      const pkg = createRequire(from).resolve('wrangler/package.json');
      const script = path.join(path.dirname(pkg), 'bin', 'wrangler.js');
      if (fs.existsSync(script)) return { command: process.execPath, args: [script], where: script };
    } catch {
      // not there
    }
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const exe = path.join(dir, 'wrangler');
    try {
      fs.accessSync(exe, fs.constants.X_OK);
      return { command: exe, args: [], where: exe };
    } catch {
      // next
    }
  }
  for (const from of roots.slice(1)) {
    const script = path.join(path.dirname(from), 'wrangler', 'bin', 'wrangler.js');
    if (fs.existsSync(script)) return { command: process.execPath, args: [script], where: script };
  }
  return null;
}

/** Runs wrangler with credentials in its environment only; stdin text when given. Resolves exit code and output. */
function runWrangler(w: NonNullable<ReturnType<typeof findWrangler>>, args: string[], env: NodeJS.ProcessEnv, cwd: string, stdin?: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(w.command, [...w.args, ...args], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    const keep = (d: Buffer) => {
      if (output.length < MAX_CHILD_OUTPUT) output += d.toString('utf8');
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.stdin.end(stdin ?? '');
    child.on('error', () => resolve({ code: 127, output }));
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

/** What wrangler printed, safe to show: any secret cut out. */
const scrub = (text: string, secrets: string[]) => secrets.filter((s) => s.length > 0).reduce((t, s) => t.split(s).join('[secret]'), text);

export function apiBaseOf(raw: string | undefined): string {
  if (raw === undefined) return CLOUDFLARE_API_BASE;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('--api-base is not a URL.');
  }
  // Only for tests against a local stand-in: a real deploy talks to api.cloudflare.com.
  // Loopback addresses only: a name such as localhost is whatever the resolver says it is.
  if (url.protocol !== 'http:' || !['127.0.0.1', '[::1]'].includes(url.hostname) || url.username || url.password || url.search || url.hash) {
    throw invalid('--api-base must be an http URL on the loopback interface (a local Cloudflare API stand-in).', 'Leave --api-base out for the real Cloudflare API.');
  }
  return raw.replace(/\/+$/, '');
}

function readToken(file: string | undefined): string | null {
  let token: string | undefined;
  if (file !== undefined) {
    try {
      token = (file === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(file, 'utf8')).trim();
    } catch {
      throw new CliError('validation_error', `--api-token-file ${file} cannot be read.`, 'Give a readable file holding the Cloudflare API token.');
    }
  } else token = process.env.CLOUDFLARE_API_TOKEN?.trim() || undefined;
  if (token === undefined) return null;
  if (!/^[\x21-\x7e]{1,1024}$/.test(token)) throw new CliError('validation_error', 'The Cloudflare API token must be printable characters without spaces.', 'Paste the token exactly as Cloudflare showed it.');
  return token;
}

/** The home's addresses on the deploy's domains (and each domain's self-test address), or null when the home is not reachable. */
async function homeAddresses(flags: { home?: string; flavor?: string }, domains: string[]): Promise<string[] | null> {
  let client;
  try {
    client = await connect(flags);
    const out = new Set(domains.map((d) => `${SELFTEST_LOCAL_PART}@${d}`));
    let pageToken: string | undefined;
    for (let i = 0; i < MAX_INBOX_PAGES; i++) {
      const page = await client.call<{ inboxes: { inbox_id: string }[]; next_page_token?: string | null }>('GET', '/v0/inboxes', { query: { limit: 100, page_token: pageToken } });
      for (const inbox of page.inboxes ?? []) {
        const address = inbox.inbox_id.toLowerCase();
        if (domains.includes(address.slice(address.lastIndexOf('@') + 1))) out.add(address);
      }
      if (!page.next_page_token) break;
      pageToken = page.next_page_token;
    }
    return [...out].sort();
  } catch {
    return null;
  }
}

function dirOf(flags: { dir?: string; home?: string; flavor?: string }): string {
  if (flags.dir !== undefined) return path.resolve(flags.dir);
  const flavor = (flags.flavor as Flavor | undefined) ?? (isSourceCheckout() ? 'development' : 'production');
  return path.join(resolveHome({ home: flags.home, flavor }), 'edge-cloudflare');
}

async function init(f: Flags): Promise<void> {
  const dir = dirOf(f);
  let previous: Settings | null = null;
  try {
    previous = readSettings(dir);
  } catch {
    // a new directory
  }
  const name = f.name ?? previous?.worker_name ?? DEFAULT_WORKER_NAME;
  if (!WORKER_NAME.test(name)) throw invalid(`--name "${name.slice(0, 80)}" is not a Worker name: 1 to 63 lower-case letters, digits and hyphens, not starting or ending with a hyphen.`);
  const domains = f.domain !== undefined ? f.domain.map((d) => normalizeOrRefuse(d)) : (previous?.domains ?? []);
  if (domains.length > MAX_DOMAINS) throw invalid(`At most ${MAX_DOMAINS} domains.`);
  const accountId = f['account-id'] ?? previous?.account_id ?? null;
  if (accountId !== null && !ACCOUNT_ID.test(accountId)) throw invalid('--account-id must be the 32 hex digits of the Cloudflare account id (its dashboard URL).');
  const worker = builtWorker();
  if (!fs.existsSync(worker)) throw new CliError('service_unavailable', `The built Worker is missing (${worker}).`, 'Run `npm run build` in a source checkout, or reinstall svc.');
  ensurePrivateDir(dir);
  const wrangler = {
    name,
    main: WORKER_FILE,
    compatibility_date: COMPATIBILITY_DATE,
    ...(accountId ? { account_id: accountId } : {}),
    workers_dev: true,
    r2_buckets: [{ binding: 'BUFFER', bucket_name: `${name}-buffer` }],
    vars: { MAX_MESSAGE_BYTES: String(DEFAULT_MAX_MESSAGE_BYTES), EDGE_HOSTNAME: 'route1.mx.cloudflare.net', WORKER_NAME: name },
    // The Worker never logs; Workers Logs off keeps no request metadata either.
    observability: { enabled: false },
    send_metrics: false,
  };
  const settings: Settings = { worker_name: name, domains, account_id: accountId, url: previous?.worker_name === name ? previous.url : null };
  const changed = [
    writeFile(path.join(dir, WORKER_FILE), fs.readFileSync(worker, 'utf8')) && WORKER_FILE,
    writeFile(path.join(dir, WRANGLER_FILE), JSON.stringify(wrangler, null, 2) + '\n') && WRANGLER_FILE,
    writeFile(path.join(dir, SETTINGS_FILE), JSON.stringify(settings, null, 2) + '\n') && SETTINGS_FILE,
  ].filter(Boolean);
  const token = loadOrCreateApiToken(dir);
  if (f.json) return void say(JSON.stringify({ dir, worker_name: name, domains, account_id: accountId, written: changed, token_file: token.file, token_created: token.created }));
  say(`Cloudflare edge deploy directory: ${dir}`);
  say(changed.length ? `  wrote ${changed.join(', ')}` : '  configuration unchanged');
  say(`  edge token: ${token.file} (${token.created ? 'new' : 'kept'}, mode 0600)`);
  say(`Next:\n  svc edge cloudflare deploy --dir ${dir} --dry-run          (bundles the Worker; no account needed)\n  CLOUDFLARE_ACCOUNT_ID=… svc edge cloudflare deploy --dir ${dir} --api-token-file cloudflare.token`);
}

/**
 * The domain as typed, in its ASCII form. Beyond `svc domains add`'s rules, a name that IDNA would
 * silently turn into another one (percent escapes, invisible characters, full-width dots) is
 * refused, so the zone routed is the one the owner read.
 */
export function normalizeOrRefuse(d: string): string {
  let ascii: string;
  try {
    ascii = normalizeDomainName(d);
  } catch (err) {
    throw invalid((err as Error).message.slice(0, 300), 'Give a registered domain name such as example.com.');
  }
  const typed = d.normalize('NFC').toLowerCase().replace(/\.$/, '');
  if (typed !== ascii && typed !== domainToUnicode(ascii)) {
    throw invalid(`\`${d.slice(0, 80)}\` would be read as ${ascii}: give the name exactly, without escapes or invisible characters.`, `Give ${ascii} if that is the domain.`);
  }
  return ascii;
}

/** --url: the Worker's https origin (a custom domain or workers.dev): no credentials, path, query or fragment. */
export function workerOrigin(raw: string): string {
  const refuse = () => invalid('--url must be the Worker\'s https origin, e.g. https://svc-edge.you.workers.dev.', 'Give only https://<host>, without a user, path, query or fragment.');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse();
  }
  const labels = url.hostname.split('.');
  if (url.protocol !== 'https:' || url.username || url.password || url.search || url.hash || url.pathname !== '/' || !/^https:\/\/[a-z0-9.-]+(?::\d{1,5})?\/?$/i.test(raw)) throw refuse();
  if (labels.length < 2 || !labels.every((l) => DNS_LABEL.test(l)) || /^[0-9]+$/.test(labels.at(-1)!)) throw refuse();
  return url.origin;
}

/**
 * The Worker's URL from `wrangler deploy`'s output: only a whole word that is exactly
 * `https://<this worker>.<one label>.workers.dev`, and only when the output names one such URL, so
 * what else it prints cannot choose the host the home pairs with. null when there is none.
 */
export function workersDevUrlOf(output: string, workerName: string): string | null {
  if (!WORKER_NAME.test(workerName)) return null;
  const found = new Set<string>();
  for (const word of output.replace(ANSI_ESCAPE, '').split(/\s+/)) {
    const m = /^https:\/\/([a-z0-9-]+)\.([a-z0-9-]+)\.workers\.dev\/?$/.exec(word);
    if (m && m[1] === workerName && DNS_LABEL.test(m[2])) found.add(`https://${m[1]}.${m[2]}.workers.dev`);
  }
  return found.size === 1 ? [...found][0] : null;
}

async function deploy(f: Flags): Promise<number> {
  const dir = dirOf(f);
  const settings = readSettings(dir);
  const token = readToken(f['api-token-file']);
  const apiBase = apiBaseOf(f['api-base']);
  if (f['dry-run'] && f['routing-only']) throw invalid('Give --dry-run or --routing-only, not both.');
  const givenUrl = f.url === undefined ? undefined : workerOrigin(f.url);
  const edgeToken = loadOrCreateApiToken(dir);
  const secrets = [token ?? '', edgeToken.token];
  let url = givenUrl ?? settings.url;

  if (!f['routing-only']) {
    const wrangler = findWrangler();
    if (!wrangler) throw new CliError('action_required', 'wrangler (Cloudflare\'s deploy tool) is not installed; an installed svc does not carry it.', `Install it once with: npm install -g wrangler@${WRANGLER_VERSION}`);
    // Credentials only in the child's environment: never in its argv, which `ps` shows.
    const env: NodeJS.ProcessEnv = { ...process.env, ...WRANGLER_QUIET, ...(token ? { CLOUDFLARE_API_TOKEN: token } : {}), ...(settings.account_id ? { CLOUDFLARE_ACCOUNT_ID: settings.account_id } : {}) };
    const config = ['--config', path.join(dir, WRANGLER_FILE)];
    if (f['dry-run']) {
      const outdir = path.join(dir, 'bundle');
      const r = await runWrangler(wrangler, ['deploy', '--dry-run', '--outdir', outdir, ...config], env, dir);
      if (r.code !== 0) throw new CliError('service_unavailable', `wrangler deploy --dry-run failed:\n${scrub(r.output, secrets).slice(-2000)}`, 'Run `svc edge cloudflare init` again, then retry.');
      say(`Bundled the Worker into ${outdir} (dry run: nothing uploaded, no secret set, Email Routing unchanged).`);
      say(`The deploy would set the secret EDGE_TOKEN from ${edgeToken.file} and route ${settings.domains.length ? settings.domains.join(', ') : 'no domain yet'} to the Worker ${settings.worker_name}.`);
      return 0;
    }
    const bucket = `${settings.worker_name}-buffer`;
    if ((await runWrangler(wrangler, ['r2', 'bucket', 'info', bucket, ...config], env, dir)).code !== 0) {
      const c = await runWrangler(wrangler, ['r2', 'bucket', 'create', bucket, ...config], env, dir);
      if (c.code !== 0) throw new CliError('service_unavailable', `Creating the R2 bucket ${bucket} failed:\n${scrub(c.output, secrets).slice(-2000)}`, 'The token needs Workers R2 Storage:Edit; R2 must be enabled on the account (dashboard → R2).');
    }
    const d = await runWrangler(wrangler, ['deploy', ...config], env, dir);
    if (d.code !== 0) throw new CliError('service_unavailable', `wrangler deploy failed:\n${scrub(d.output, secrets).slice(-2000)}`, 'The token needs Workers Scripts:Edit; set CLOUDFLARE_ACCOUNT_ID or init --account-id when it sees several accounts.');
    url = givenUrl ?? workersDevUrlOf(d.output, settings.worker_name) ?? url;
    say(`Deployed the Worker ${settings.worker_name}${url ? ` at ${url}` : ''}.`);
    const s = await runWrangler(wrangler, ['secret', 'put', 'EDGE_TOKEN', ...config], env, dir, edgeToken.token + '\n');
    if (s.code !== 0) throw new CliError('service_unavailable', `Setting the secret EDGE_TOKEN failed:\n${scrub(s.output, secrets).slice(-2000)}`, 'Run the deploy again.');
    say('Set the Worker secret EDGE_TOKEN.');
  }
  if (url !== settings.url) writeFile(path.join(dir, SETTINGS_FILE), JSON.stringify({ ...settings, url }, null, 2) + '\n');

  if (token !== null && settings.domains.length > 0) {
    const routing = new CloudflareEmailRouting(token, apiBase, settings.worker_name);
    const addresses = f['catch-all'] ? [] : await homeAddresses(f, settings.domains);
    if (addresses === null) throw new CliError('service_unavailable', 'The home is not running, so svc cannot list the addresses to route.', 'Start the home (svc service install, or svc serve) and deploy again, or route every address with --catch-all.');
    for (const domain of settings.domains) {
      const r = await routing.apply(domain, { addresses: addresses.filter((a) => a.endsWith(`@${domain}`)), catchAll: f['catch-all'] === true });
      say(`Email Routing on ${domain}: ${r.enabled ? 'enabled now' : 'already enabled'}; ${r.catchAll ? 'catch-all to the Worker; ' : ''}${r.created.length} new rule(s)${r.created.length ? ` (${r.created.join(', ')})` : ''}.`);
    }
  } else if (token === null) say('No Cloudflare API token (--api-token-file or CLOUDFLARE_API_TOKEN): Email Routing left as it is.');

  const addEdge = `svc transport add-edge --edge-url ${url ?? 'https://<worker>.<subdomain>.workers.dev'} --edge-token-file ${edgeToken.file}`;
  if (url === null) {
    say(`Pair the home once the Worker's URL is known:\n  ${addEdge}`);
    return 0;
  }
  try {
    const client = await connect(f);
    const current = await client.call<TransportResponse>('GET', '/v0/owner/transport');
    if (current.edges.some((e) => e.url === url)) say(`The home is already paired with ${url}.`);
    else {
      await client.call('PUT', '/v0/owner/transport', { body: { edges: [...current.edges.map((e) => ({ url: e.url })), { url, token: edgeToken.token }] } });
      say(`Paired the home with ${url}.`);
    }
  } catch {
    say(`The home is not running; pair it later with:\n  ${addEdge}`);
  }
  return 0;
}

async function status(f: Flags): Promise<void> {
  const dir = dirOf(f);
  const settings = readSettings(dir);
  const wrangler = findWrangler();
  const token = readToken(f['api-token-file']);
  let paired: { paired: boolean; healthy: boolean | null; error: string | null } | null = null;
  try {
    const t = await (await connect(f)).call<TransportResponse>('GET', '/v0/owner/transport');
    const edge = t.edges.find((e) => e.url === settings.url);
    paired = { paired: edge !== undefined, healthy: edge ? edge.health.healthy : null, error: edge?.health.last_error ?? null };
  } catch {
    // home not running
  }
  const routing: Record<string, unknown>[] = [];
  if (token !== null) {
    const api = new CloudflareEmailRouting(token, apiBaseOf(f['api-base']), settings.worker_name);
    for (const domain of settings.domains) {
      try {
        const s = await api.state(domain);
        routing.push({ domain, enabled: s.enabled, status: s.status, routed_addresses: s.routedAddresses, catch_all_to_worker: s.catchAllToWorker });
      } catch (err) {
        routing.push({ domain, error: scrub((err as Error).message, [token]) });
      }
    }
  }
  const view = { dir, worker_name: settings.worker_name, domains: settings.domains, wrangler: wrangler?.where ?? null, url: settings.url, home: paired, email_routing: token === null ? null : routing };
  if (f.json) return void say(JSON.stringify(view));
  say(`deploy dir:    ${dir}`);
  say(`worker:        ${settings.worker_name}${settings.url ? ` at ${settings.url}` : ' (URL not known yet: deploy, or deploy --url)'}`);
  say(`wrangler:      ${wrangler ? wrangler.where : `not found (npm install -g wrangler@${WRANGLER_VERSION})`}`);
  say(`home:          ${paired === null ? 'not running' : paired.paired ? `paired, ${paired.healthy ? 'healthy' : `unhealthy: ${paired.error ?? 'failing'}`}` : 'not paired with this Worker'}`);
  if (token === null) say('email routing: unknown (give --api-token-file or CLOUDFLARE_API_TOKEN)');
  for (const r of routing) say(`email routing: ${r.domain}: ${'error' in r ? r.error : `${r.enabled ? 'enabled' : 'disabled'} (${r.status}), ${(r.routed_addresses as string[]).length} address rule(s)${r.catch_all_to_worker ? ', catch-all to the Worker' : ''}`}`);
}

type Flags = { dir?: string; name?: string; domain?: string[]; 'account-id'?: string; home?: string; flavor?: string; 'dry-run'?: boolean; 'routing-only'?: boolean; 'api-token-file'?: string; 'api-base'?: string; 'catch-all'?: boolean; url?: string; json?: boolean };

/** Runs `svc edge cloudflare init|deploy|status <args>`; returns the exit code. */
export async function runEdgeCloudflareDeployCommand(action: 'init' | 'deploy' | 'status', args: string[]): Promise<number> {
  const json = args.includes('--json');
  try {
    const { flags, positionals } = parseArgs(args, FLAGS);
    if (positionals.length > 0) throw invalid(`Unexpected argument "${positionals[0].slice(0, 80)}".`);
    for (const [k, v] of Object.entries(flags) as [string, FlagValue][]) if (v === '') throw invalid(`--${k} must not be empty.`);
    const f = flags as Flags;
    if (f.flavor !== undefined && f.flavor !== 'development' && f.flavor !== 'production') throw invalid('--flavor must be development or production.');
    process.umask(0o077);
    if (action === 'init') await init(f);
    else if (action === 'deploy') return await deploy(f);
    else await status(f);
    return 0;
  } catch (err) {
    // A Cloudflare API failure names the call and the fix; it never carries the token.
    return reportCliError(err instanceof DnsProviderError ? new CliError('service_unavailable', err.message, 'Check the API token\'s permissions and the domain in the Cloudflare dashboard, then run the command again.') : err, json);
  }
}
