/**
 * `svc status`: one look at the running service — service, loops, transport and edge, remote
 * access, and counts — assembled from the owner routes (spec §4.13) and the list routes. There
 * is no loop-status route: a loop that crashes stops the whole service (spec §8), so a service
 * that answers has every loop running. Agents see what their key can see.
 */
import fs from 'node:fs';
import { homeFiles } from '../keys/home.js';
import { CliError } from './exit-codes.js';
import type { Group } from './commands.js';
import type { ServiceClient } from './owner-client.js';
import { fields, out, printJson } from './output.js';
import type { TransportResponse } from '../mail/transport.js';
import type { RemoteResponse } from '../remote/schemas.js';
import type { BackupStatus } from '../routes/backup.js';

/** Counting follows pages of 100 up to this many items, then reports "at least". */
const COUNT_CAP = 1000;
const PAGE = 100;
/** The edge API answers at once when it is up; this only bounds a dead host. */
const EDGE_PROBE_MS = 2000;

interface Count {
  count: number;
  /** True when the cap was reached and more may exist. */
  more: boolean;
}

/** Counts items of a list route (optionally only those matching `keep`), or null when the caller may not list them. */
async function countItems<T>(client: ServiceClient, path: string, key: string, query: Record<string, string | string[]> = {}, keep: (item: T) => boolean = () => true): Promise<Count | null> {
  let count = 0;
  let seen = 0;
  let token: string | undefined;
  try {
    do {
      const page = await client.call<Record<string, unknown> & { next_page_token?: string }>('GET', path, { query: { ...query, limit: String(PAGE), ...(token ? { page_token: token } : {}) } });
      const items = (page[key] as T[]) ?? [];
      seen += items.length;
      count += items.filter(keep).length;
      token = page.next_page_token;
    } while (token && seen < COUNT_CAP);
  } catch (err) {
    if (err instanceof CliError && (err.code === 'missing_permission' || err.code === 'not_found')) return null;
    throw err;
  }
  return { count, more: Boolean(token) };
}

/** The owner's quarantine: the API's `total` (svc extension) counts every waiting item in one call. */
async function quarantineCount(client: ServiceClient): Promise<Count> {
  const page = await client.call<{ total: number }>('GET', '/v0/owner/quarantine', { query: { limit: '1' } });
  return { count: page.total, more: false };
}

const shown = (c: Count | null) => (c === null ? 'n/a' : `${c.count}${c.more ? '+' : ''}`);

async function edgeReachable(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(EDGE_PROBE_MS), redirect: 'manual' });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** One edge's line: whether it answers now, and what the home saw of it (src/mail/edge-health.ts). */
function edgeLine(e: { url: string; reachable: boolean; health: TransportResponse['edges'][number]['health'] }, named: boolean): string {
  const h = e.health;
  const since = (at: string) => `${ageText(Math.max(0, Math.round((Date.now() - Date.parse(at)) / 1000)))} ago`;
  const parts = [named || !e.reachable ? `${e.url} ${e.reachable ? 'reachable' : 'not answering'}` : 'reachable'];
  parts.push(h.last_success_at ? `last contact ${since(h.last_success_at)}` : 'no contact yet');
  if (h.consecutive_failures > 0) parts.push(`${h.consecutive_failures} failure${h.consecutive_failures > 1 ? 's' : ''} in a row (${h.last_error ?? 'error'})`);
  if (h.backoff_until) parts.push(`retrying after ${h.backoff_until}`);
  return parts.join('; ');
}

/** A backup's age the way a person reads it: the largest unit. */
export function ageText(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 2 * 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 2 * 86400) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} days`;
}

function connectionInfo(home: string): { pid: number | null; started_at: string | null } {
  try {
    const data = JSON.parse(fs.readFileSync(homeFiles(home).connection, 'utf8')) as { pid?: unknown; started_at?: unknown };
    return { pid: typeof data.pid === 'number' ? data.pid : null, started_at: typeof data.started_at === 'string' ? data.started_at : null };
  } catch {
    return { pid: null, started_at: null };
  }
}

export const group: Group = {
  name: 'status',
  summary: 'show the running service: transport, edge, loops, remote access and counts',
  actions: {
    '': {
      summary: 'Show the running service: its address, loops, transport and edge, remote access and counts. Agents see the counts their key can read.',
      examples: ['svc status', 'svc status --json | jq .counts'],
      async run(ctx) {
        const client = await ctx.client();
        const owner = await client.call<{ setup_required: boolean }>('GET', '/v0/owner/status');
        const loops = { state: 'running', note: 'A loop that stops ends the whole service, so an answering service runs every loop.' };
        if (client.mode === 'agent') {
          const counts = {
            inboxes: await countItems(client, '/v0/inboxes', 'inboxes'),
            threads_send_unknown: await countItems(client, '/v0/threads', 'threads', { labels: ['send_unknown'] }),
          };
          const report = { mode: 'agent', url: client.url, service: { running: true }, loops, counts };
          if (ctx.json) printJson(report);
          else out(fields([['service', `running at ${client.url} (agent, SVC_URL)`], ['loops', 'running'], ['inboxes', shown(counts.inboxes)]]));
          return;
        }
        const transport = await client.call<TransportResponse>('GET', '/v0/owner/transport');
        const remote = await client.call<RemoteResponse>('GET', '/v0/owner/remote');
        const backupStatus = await client.call<BackupStatus>('GET', '/v0/owner/backup');
        const backup = { ...backupStatus, age_seconds: backupStatus.last_backup_at ? Math.max(0, Math.round((Date.now() - Date.parse(backupStatus.last_backup_at)) / 1000)) : null };
        // Every paired edge probed side by side; `edge` is the first, as before several edges.
        const edges = await Promise.all(transport.edges.map(async (e) => ({ url: e.url, reachable: await edgeReachable(e.url), health: e.health })));
        const edge = edges[0] ? { url: edges[0].url, reachable: edges[0].reachable } : null;
        const counts = {
          inboxes: await countItems(client, '/v0/inboxes', 'inboxes'),
          domains: await countItems(client, '/v0/domains', 'domains'),
          domains_verified: await countItems<{ state: string }>(client, '/v0/domains', 'domains', {}, (d) => d.state === 'verified'),
          // The API filters by state, so only the waiting drafts are paged through, however many others exist.
          drafts_pending_approval: await countItems(client, '/v0/drafts', 'drafts', { send_status: 'pending_approval' }),
          threads_send_unknown: await countItems(client, '/v0/threads', 'threads', { labels: ['send_unknown'] }),
          quarantine: await quarantineCount(client),
        };
        const info = connectionInfo(client.home!);
        const report = {
          mode: 'owner',
          url: client.url,
          home: client.home,
          service: { running: true, pid: info.pid, started_at: info.started_at, setup_required: owner.setup_required },
          loops,
          transport,
          edge,
          edges,
          remote,
          backup,
          counts,
        };
        if (ctx.json) return printJson(report);
        const smtp = transport.smtp ? `smtp ${transport.smtp.host}:${transport.smtp.port}` : null;
        out(
          fields([
            ['service', `running at ${client.url} (pid ${info.pid ?? '?'}, since ${info.started_at ?? '?'})`],
            ['home', client.home],
            ['owner', owner.setup_required ? 'setup required: run `svc open` and set a password' : 'set up'],
            ['loops', 'running'],
            ['transport', transport.configured ? [transport.edges.length > 1 ? `${transport.edges.length} edges` : transport.edge ? `edge ${transport.edge.url}` : null, smtp].filter(Boolean).join(', ') : 'not configured: sending answers service_unavailable (see `svc transport set`)'],
            ...(edges.length === 0 ? [['edge', 'not paired'] as [string, string]] : edges.map((e, i) => [edges.length > 1 ? `edge ${i + 1}` : 'edge', edgeLine(e, edges.length > 1)] as [string, string])),
            ['remote', remote.enabled ? `enabled at ${remote.url} (connector ${remote.connector.state}, ${remote.connector.restarts} restarts)` : 'disabled'],
            ['backup', backup.age_seconds === null ? 'never: run `svc backup --to FILE`' : `${ageText(backup.age_seconds)} ago (${backup.last_backup_at})`],
            ...(backup.recovery_code_set ? [] : [['recovery', 'no recovery code: run `svc key recovery`'] as [string, string]]),
            ['inboxes', shown(counts.inboxes)],
            ['domains', `${shown(counts.domains)} (${shown(counts.domains_verified)} verified)`],
            ['approvals', `${shown(counts.drafts_pending_approval)} drafts awaiting approval`],
            ['send_unknown', `${shown(counts.threads_send_unknown)} threads (see \`svc resolve\`)`],
            ['quarantine', counts.quarantine.count > 0 ? `${shown(counts.quarantine)} items waiting (see \`svc quarantine list\`)` : '0 items'],
          ]),
        );
      },
    },
  },
};
