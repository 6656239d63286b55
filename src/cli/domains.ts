/**
 * `svc domains`: add, list, show, plan, zone-file, apply, verify, teardown, delete (spec §2.10,
 * §4.12, owner only; states in docs/domains.md). `apply` and `verify` can wait for a final state
 * with a progress display, bounded by --timeout. A domain is named by its id or its name.
 */
import { CliError } from './exit-codes.js';
import { enc, opt, PAGE_OPTIONS, pageQuery, type Ctx, type Group } from './commands.js';
import type { ServiceClient } from './owner-client.js';
import type { Domain as FullDomain, DomainItem } from '../domains/schemas.js';
import { cell, fields, itemsTable, out, pageTable, printJson, type Column, WHOLE } from './output.js';
import type { DnsProviderResponse } from '../domains/providers/schemas.js';

type DomainRecord = FullDomain['records'][number] | FullDomain['extra_records'][number];
/** A list item, or the full domain (its records and self-test only on the full one). */
type Domain = DomainItem & Partial<Pick<FullDomain, 'records' | 'extra_records' | 'selftest'>>;
/** Every planned record, the SDK-typed and the edge's address and reverse-DNS ones, in the plan's order of kinds. */
const allRecords = (d: Domain): DomainRecord[] => [...(d.records ?? []), ...(d.extra_records ?? [])];

/** States a wait ends in (docs/domains.md). */
const FINAL = new Set(['verified', 'failed', 'torn_down']);
const POLL_MS = 1000;
const DEFAULT_TIMEOUT_S = 600;
const MAX_TIMEOUT_S = 3600;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_LOOKUP_PAGES = 50;

const COLUMNS: Column<Domain>[] = [
  ['DOMAIN', (d) => d.domain],
  ['ID', (d) => d.domain_id, WHOLE],
  ['STATUS', (d) => d.state],
  ['REASON', (d) => d.reason, 60],
];

const RECORD_COLUMNS: Column<DomainRecord>[] = [
  ['TYPE', (r) => r.type],
  ['NAME', (r) => r.name],
  ['VALUE', (r) => `${r.priority !== undefined ? `${r.priority} ` : ''}${r.value}`, 70],
  ['STATUS', (r) => `${r.state}${r.reason ? ` (${r.reason})` : ''}`, 60],
];

/** The domain id for an id or a name (names are looked up in the list). */
async function domainId(client: ServiceClient, given: string): Promise<string> {
  if (UUID.test(given)) return given;
  const name = given.toLowerCase().replace(/\.$/, '');
  let token: string | undefined;
  for (let i = 0; i < MAX_LOOKUP_PAGES; i++) {
    const page = await client.call<{ domains: Domain[]; next_page_token?: string }>('GET', '/v0/domains', { query: { limit: 100, page_token: token } });
    const found = page.domains.find((d) => d.domain === name);
    if (found) return found.domain_id;
    token = page.next_page_token;
    if (!token) break;
  }
  throw new CliError('not_found', `The domain ${given} is not registered.`, 'Register it with `svc domains add <domain>`, or list them with `svc domains list`.');
}

function showDomain(ctx: Ctx, d: Domain, lead?: string): void {
  if (ctx.json) return printJson(d);
  const head = fields([
    ['domain', d.domain],
    ['id', d.domain_id],
    ['status', d.state],
    ['reason', d.reason],
    ['self-test', d.selftest?.status],
    ['verified', d.verified_at],
  ]);
  out(`${lead ? `${lead}\n` : ''}${head}${allRecords(d).length ? `\n\n${itemsTable(allRecords(d), RECORD_COLUMNS, '')}` : ''}`);
}

const progressLine = (d: Domain) => {
  const records = allRecords(d);
  const valid = records.filter((r) => r.state === 'valid').length;
  return `${d.domain}: ${d.state}${records.length ? ` — records ${valid}/${records.length} valid` : ''}${d.selftest ? `, self-test ${d.selftest.status}` : ''}${d.reason ? ` — ${cell(d.reason)}` : ''}`;
};

/**
 * Polls until the domain reaches a final state (or the timeout). Progress goes to stderr: one
 * rewritten line on a terminal, a line per change otherwise; nothing with --json.
 */
async function waitForFinal(ctx: Ctx, client: ServiceClient, id: string, start: Domain): Promise<Domain> {
  const timeoutS = ctx.int('timeout', 1, MAX_TIMEOUT_S) ?? DEFAULT_TIMEOUT_S;
  const deadline = Date.now() + timeoutS * 1000;
  const tty = process.stderr.isTTY === true;
  let last = '';
  const show = (d: Domain) => {
    if (ctx.json) return;
    const line = progressLine(d);
    if (line === last) return;
    last = line;
    process.stderr.write(tty ? `\r\u001b[2K${line}` : `${line}\n`);
  };
  let d = start;
  show(d);
  while (!FINAL.has(d.state)) {
    if (Date.now() >= deadline) {
      if (tty && !ctx.json) process.stderr.write('\n');
      throw new CliError('timeout', `${d.domain} is still ${d.state} after ${timeoutS} s.`, 'Check again later with `svc domains show`, or wait longer with --timeout.', { domain_id: id, status: d.state });
    }
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
    d = await client.call<Domain>('GET', `/v0/domains/${enc(id)}`);
    show(d);
  }
  if (tty && !ctx.json) process.stderr.write('\n');
  return d;
}

/** Starts apply or verify and, unless --no-wait, follows it to the end; `failed` exits 1. */
async function startAndWait(ctx: Ctx, action: 'apply' | 'verify'): Promise<void> {
  const client = await ctx.client();
  const id = await domainId(client, ctx.args[0]);
  const started = await client.call<Domain>('POST', `/v0/domains/${enc(id)}/${action}`, { body: {} });
  if (ctx.bool('no-wait')) return showDomain(ctx, started, `${action === 'apply' ? 'Applying' : 'Verifying'} ${started.domain}.`);
  // A verified domain stays verified on apply: nothing to wait for.
  const d = action === 'apply' && started.state === 'verified' ? started : await waitForFinal(ctx, client, id, started);
  if (d.state === 'failed') {
    if (!ctx.json) showDomain(ctx, d);
    throw new CliError('verification_failed', `${d.domain} failed verification: ${(d.reason ?? 'see the records.').replace(/\.?$/, '.')}`, 'Fix the records listed (see `svc domains plan`), then run `svc domains verify` again.', { domain_id: id, status: d.state });
  }
  showDomain(ctx, d, d.state === 'verified' ? `${d.domain} is verified.` : undefined);
}

const waitOptions = [opt('timeout SECONDS', `Stop waiting after this long (default ${DEFAULT_TIMEOUT_S}, exit 1 with code timeout).`), opt('no-wait', 'Return at once instead of waiting for a final state.')];

function showProvider(ctx: Ctx, v: DnsProviderResponse, lead?: string): void {
  if (ctx.json) return printJson(v);
  const p = v.provider;
  const rows: [string, string | null | undefined][] = !p
    ? [['provider', 'none (apply asks you to create the records by hand)']]
    : p.kind === 'rfc2136'
      ? [['provider', 'RFC 2136 dynamic updates with TSIG'], ['server', `${p.server}:${p.port} over ${p.transport.toUpperCase()}`], ['key', `${p.key_name} (${p.algorithm})${p.secret_set ? ', secret set' : ''}`]]
      : p.kind === 'powerdns'
        ? [['provider', 'PowerDNS HTTP API'], ['url', p.url], ['server id', p.server_id], ['api key', p.api_key_set ? 'set' : 'not set']]
        : [['provider', 'Cloudflare DNS API'], ['api', p.api_base], ['zone id', p.zone_id ?? 'looked up by the zone\'s name'], ['api token', p.api_token_set ? 'set' : 'not set']];
  if (p) rows.push(['zones', p.zones.length ? p.zones.join(', ') : 'each domain is its own zone'], ['ttl', String(p.ttl)]);
  out((lead ? `${lead}\n` : '') + fields(rows));
}

/** A secret from --NAME-file (FILE or - for stdin; trailing newline dropped), never from the command line. */
const secretFile = (ctx: Ctx, name: string) => ctx.file(`${name}-file`)?.toString('utf8').replace(/\r?\n$/, '');

export const group: Group = {
  name: 'domains',
  summary: 'register domains, publish their DNS records and verify them (owner)',
  notes: 'A domain is named by its id or its name. States: pending, provisioning, verifying, verified, failed, tearing_down, torn_down.',
  actions: {
    list: {
      summary: 'List registered domains.',
      options: PAGE_OPTIONS,
      examples: ['svc domains list'],
      async run(ctx) {
        const client = await ctx.client();
        const page = await client.call<{ domains: Domain[]; next_page_token?: string }>('GET', '/v0/domains', { query: pageQuery(ctx) });
        if (ctx.json) return printJson(page);
        out(pageTable(page, page.domains, COLUMNS, 'No domains. Register one with `svc domains add <domain>`.'));
      },
    },
    add: {
      summary: 'Register a domain (status pending); then see `svc domains plan`.',
      usage: '<domain>',
      args: [1, 1],
      options: [opt('no-feedback', 'Leave out the feedback-loop registration step.'), opt('subdomains', 'Set subdomains_enabled.')],
      examples: ['svc domains add example.com'],
      async run(ctx) {
        const client = await ctx.client();
        const body = { domain: ctx.args[0], feedback_enabled: ctx.bool('no-feedback') ? false : undefined, subdomains_enabled: ctx.bool('subdomains') ? true : undefined };
        const d = await client.call<Domain>('POST', '/v0/domains', { body });
        showDomain(ctx, d, `Registered ${d.domain}. Next: \`svc domains plan ${d.domain}\`, create the records, then \`svc domains apply ${d.domain}\`.`);
      },
    },
    show: {
      summary: 'Show a domain with its records and their last check.',
      usage: '<domain>',
      args: [1, 1],
      examples: ['svc domains show example.com'],
      async run(ctx) {
        const client = await ctx.client();
        showDomain(ctx, await client.call<Domain>('GET', `/v0/domains/${enc(await domainId(client, ctx.args[0]))}`));
      },
    },
    plan: {
      summary: 'Show the DNS records to create, the steps and warnings.',
      usage: '<domain>',
      args: [1, 1],
      examples: ['svc domains plan example.com'],
      async run(ctx) {
        const client = await ctx.client();
        const plan = await client.call<{ domain: string; steps: unknown[]; records: DomainRecord[]; warnings: unknown[] }>('GET', `/v0/domains/${enc(await domainId(client, ctx.args[0]))}/plan`);
        if (ctx.json) return printJson(plan);
        const text = (s: unknown) => (typeof s === 'string' ? s : typeof s === 'object' && s !== null ? String((s as { title?: unknown; description?: unknown; message?: unknown }).title ?? (s as { message?: unknown }).message ?? JSON.stringify(s)) : String(s));
        out(
          [
            `Records for ${plan.domain}:`,
            itemsTable(plan.records, RECORD_COLUMNS.slice(0, 3), '(none)'),
            '',
            'Steps:',
            ...plan.steps.map((s, i) => `  ${i + 1}. ${cell(text(s))}`),
            ...(plan.warnings.length ? ['', 'Warnings:', ...plan.warnings.map((w) => `  - ${cell(text(w))}`)] : []),
            '',
            `The same records as a zone file: svc domains zone-file ${plan.domain} > ${plan.domain}.zone`,
          ].join('\n'),
        );
      },
    },
    'zone-file': {
      summary: 'Print the records as a BIND zone file on stdout.',
      usage: '<domain>',
      args: [1, 1],
      examples: ['svc domains zone-file example.com > example.com.zone'],
      async run(ctx) {
        const client = await ctx.client();
        const { body } = await client.bytes('GET', `/v0/domains/${enc(await domainId(client, ctx.args[0]))}/zone-file`);
        if (ctx.json) return printJson({ zone_file: body.toString('utf8') });
        process.stdout.write(body);
      },
    },
    apply: {
      summary: 'Provision (or resume): route the domain at the edge, then verify; waits for verified or failed.',
      usage: '<domain>',
      args: [1, 1],
      options: waitOptions,
      examples: ['svc domains apply example.com', 'svc domains apply example.com --no-wait'],
      run: (ctx) => startAndWait(ctx, 'apply'),
    },
    verify: {
      summary: 'Check the records and the self-test again; waits for verified or failed with a progress display.',
      usage: '<domain>',
      args: [1, 1],
      options: waitOptions,
      examples: ['svc domains verify example.com --timeout 120'],
      run: (ctx) => startAndWait(ctx, 'verify'),
    },
    teardown: {
      summary: 'Stop routing the domain (and its inboxes) at the edge; waits for torn_down.',
      usage: '<domain>',
      args: [1, 1],
      options: waitOptions,
      examples: ['svc domains teardown example.com'],
      async run(ctx) {
        const client = await ctx.client();
        const id = await domainId(client, ctx.args[0]);
        const started = await client.call<Domain>('POST', `/v0/domains/${enc(id)}/teardown`, { body: {} });
        const d = ctx.bool('no-wait') || started.state === 'torn_down' ? started : await waitForFinal(ctx, client, id, started);
        showDomain(ctx, d, d.state === 'torn_down' ? `${d.domain} is torn down; \`svc domains delete\` removes it.` : undefined);
      },
    },
    delete: {
      summary: 'Remove a registration (only pending or torn_down).',
      usage: '<domain>',
      args: [1, 1],
      examples: ['svc domains delete example.com'],
      async run(ctx) {
        const client = await ctx.client();
        const id = await domainId(client, ctx.args[0]);
        await client.call('DELETE', `/v0/domains/${enc(id)}`);
        if (ctx.json) return printJson({ deleted: true, domain_id: id });
        out(`Deleted ${ctx.args[0]}.`);
      },
    },
    'provider-show': {
      summary: 'Show the DNS provider apply publishes records through (secrets are never shown).',
      examples: ['svc domains provider-show'],
      async run(ctx) {
        const client = await ctx.client();
        showProvider(ctx, await client.call<DnsProviderResponse>('GET', '/v0/owner/dns-provider'));
      },
    },
    'provider-set': {
      summary: 'Publish records through a DNS provider: RFC 2136 with TSIG, the PowerDNS API or the Cloudflare API (docs/dns-providers.md).',
      options: [
        opt('kind KIND', 'rfc2136, powerdns or cloudflare.'),
        opt('server HOST', 'rfc2136: the primary name server (IP address or host name).'),
        opt('port PORT', 'rfc2136: its port (default 53).'),
        opt('udp', 'rfc2136: send updates over UDP (default TCP).'),
        opt('key-name NAME', 'rfc2136: the TSIG key\'s name.'),
        opt('algorithm ALG', 'rfc2136: hmac-sha256 (default) or hmac-sha512.'),
        opt('secret-file FILE', 'rfc2136: read the base64 TSIG secret from FILE (- for stdin). Omitted: the stored one is kept for the same key.'),
        opt('url URL', 'powerdns: the API base URL (https, or http on loopback or a private network).'),
        opt('server-id ID', 'powerdns: the server id (default localhost).'),
        opt('api-key-file FILE', 'powerdns: read the API key from FILE (- for stdin). Omitted: the stored one is kept for the same URL.'),
        opt('api-token-file FILE', 'cloudflare: read the API token (Zone:DNS:Edit) from FILE (- for stdin). Omitted: the stored one is kept for the same API base.'),
        opt('zone-id ID', 'cloudflare: the zone\'s id (its Overview page). Omitted: looked up by the zone\'s name (the token then also needs Zone:Read).'),
        opt('api-base URL', 'cloudflare: the API base URL (default https://api.cloudflare.com/client/v4).'),
        opt('zone ZONE...', 'A zone the provider serves (repeatable); a domain goes into the longest one it is under. Default: each domain is its own zone.'),
        opt('ttl SECONDS', 'TTL of the records (default 3600).'),
      ],
      examples: [
        'svc domains provider-set --kind rfc2136 --server 10.0.0.53 --key-name svc-update --secret-file svc-update.secret --zone example.com',
        'svc domains provider-set --kind powerdns --url http://127.0.0.1:8081 --api-key-file pdns.key',
        'svc domains provider-set --kind cloudflare --api-token-file cloudflare.token',
      ],
      async run(ctx) {
        const kind = ctx.str('kind');
        const common = { zones: ctx.list('zone', true).length ? ctx.list('zone', true) : undefined, ttl: ctx.int('ttl', 60, 86_400) };
        let body: Record<string, unknown>;
        if (kind === 'rfc2136') {
          const server = ctx.str('server');
          const keyName = ctx.str('key-name');
          if (!server || !keyName) throw new CliError('validation_error', 'rfc2136 needs --server and --key-name (and --secret-file the first time).');
          const algorithm = ctx.str('algorithm');
          body = { kind, server, port: ctx.int('port', 1, 65535), transport: ctx.bool('udp') ? 'udp' : undefined, key_name: keyName, algorithm, secret: secretFile(ctx, 'secret'), ...common };
        } else if (kind === 'powerdns') {
          const url = ctx.str('url');
          if (!url) throw new CliError('validation_error', 'powerdns needs --url (and --api-key-file the first time).');
          body = { kind, url, server_id: ctx.str('server-id'), api_key: secretFile(ctx, 'api-key'), ...common };
        } else if (kind === 'cloudflare') {
          body = { kind, api_token: secretFile(ctx, 'api-token'), zone_id: ctx.str('zone-id'), api_base: ctx.str('api-base'), ...common };
        } else throw new CliError('validation_error', '--kind must be rfc2136, powerdns or cloudflare.', 'Run `svc domains provider-set --help`.');
        const client = await ctx.client();
        showProvider(ctx, await client.call<DnsProviderResponse>('PUT', '/v0/owner/dns-provider', { body }), 'DNS provider set; domains applied from now on publish their records through it.');
      },
    },
    'provider-clear': {
      summary: 'Remove the DNS provider (records are created by hand again).',
      examples: ['svc domains provider-clear'],
      async run(ctx) {
        const client = await ctx.client();
        showProvider(ctx, await client.call<DnsProviderResponse>('DELETE', '/v0/owner/dns-provider'), 'DNS provider removed.');
      },
    },
  },
};
