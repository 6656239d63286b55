/**
 * The mail transport configuration (ARCHITECTURE §6): the paired edges (`[{url, token}, …]`, in
 * order; docs/edge.md "Several edges") and an optional SMTP smart host for outbound. Kept in the
 * settings table (inside the encrypted database) as `{edges, smtp}`; migration 20 turned the
 * single `edge` it held before into a list of one. Secrets are write-only: reads say whether one
 * is set, never what it is.
 */
import type { Db } from '../db/open.js';
import { ApiError } from '../core/errors.js';
import type { EdgeSettings, SmtpSettings, TransportBody } from './transport-schemas.js';
import type { EdgeIdentity } from '../edge/identity.js';
import { SPF_MECHANISM_HELP, spfMechanism } from '../domains/spf.js';
import { edgesHealth, forgetOtherEdges } from './edge-health.js';

export type { EdgeSettings, SmtpSettings, TransportBody, TransportResponse } from './transport-schemas.js';

export interface Transport {
  /** Every paired edge, in the owner's order: all are pulled, outbound prefers the first healthy one. */
  edges: EdgeSettings[];
  /** The first edge (null without one): what code that knows one edge reads. */
  edge: EdgeSettings | null;
  smtp: SmtpSettings | null;
}

/**
 * The most edges one home pulls from and sends through (a VPS edge and a backup, or an edge and
 * its replacement during a migration): each costs a long-poll and a pull per pass.
 */
export const MAX_EDGES = 8;

const KEY = 'transport';

/** What the settings row holds; `edge` only in a row written before migration 20. */
interface StoredTransport {
  edges?: EdgeSettings[];
  edge?: EdgeSettings | null;
  smtp: SmtpSettings | null;
}

export function readTransport(db: Db): Transport {
  const row = db.prepare('SELECT value FROM settings WHERE key = ?').get(KEY) as { value: string } | undefined;
  if (!row) return { edges: [], edge: null, smtp: null };
  const stored = JSON.parse(row.value) as StoredTransport;
  const edges = stored.edges ?? (stored.edge ? [stored.edge] : []);
  return { edges, edge: edges[0] ?? null, smtp: stored.smtp ?? null };
}

const LOCAL_EDGE_TOKEN_KEY = 'local_edge_token';

/** The API token of the built-in edge (`svc serve --local-edge`), or undefined before its first start. */
export function localEdgeToken(db: Db): string | undefined {
  return (db.prepare('SELECT value FROM settings WHERE key = ?').get(LOCAL_EDGE_TOKEN_KEY) as { value: string } | undefined)?.value;
}

/** Keeps the built-in edge's token across restarts: stores `fresh` unless one is stored; returns the one in use. */
export function keepLocalEdgeToken(db: Db, fresh: string): string {
  const stored = localEdgeToken(db);
  if (stored !== undefined) return stored;
  db.prepare('INSERT INTO settings (key, value) VALUES (?, ?)').run(LOCAL_EDGE_TOKEN_KEY, fresh);
  return fresh;
}

function checkEdgeUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ApiError('validation_error', 'edge.url is not a valid URL.', { fix: 'Use the edge API URL printed by `svc edge`, e.g. https://edge.example.com:8443.' });
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname);
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && loopback)) {
    throw new ApiError('validation_error', 'edge.url must use https (plain http is allowed only on loopback).', { fix: 'Put the edge API behind TLS and use its https:// URL.' });
  }
}

/**
 * What an owner's PUT sends, checked before any lookup: an edge URL must parse and use https
 * (http only on loopback); a smart host's `spf_include` must be one plain SPF mechanism, as it
 * goes verbatim into every domain's SPF record (stored in canonical form).
 */
export function checkTransportBody(body: TransportBody): TransportBody {
  if (body.edge !== undefined && body.edges !== undefined) {
    throw new ApiError('validation_error', 'Give either edge (one edge) or edges (the whole list), not both.', { fix: 'Send the list as edges: [{url, token}, …]; edge is the older single-edge form.' });
  }
  if (body.edges && body.edges.length > MAX_EDGES) {
    throw new ApiError('validation_error', `Too many edges: ${body.edges.length}; a home pulls from at most ${MAX_EDGES}.`, { fix: `Pair at most ${MAX_EDGES} edges; remove the ones you no longer use.` });
  }
  if (body.edge) checkEdgeUrl(body.edge.url);
  const seen = new Set<string>();
  for (const edge of body.edges ?? []) {
    checkEdgeUrl(edge.url);
    const url = edgeUrl(edge.url);
    if (seen.has(url)) throw new ApiError('validation_error', `The edge ${url} is listed twice.`, { fix: 'List each edge once.' });
    seen.add(url);
  }
  if (body.smtp?.spf_include !== undefined) {
    const mechanism = spfMechanism(body.smtp.spf_include);
    if (mechanism === null) {
      throw new ApiError('validation_error', 'smtp.spf_include is not an SPF mechanism svc publishes.', { fix: `Give ${SPF_MECHANISM_HELP}; your provider's documentation names it.` });
    }
    return { ...body, smtp: { ...body.smtp, spf_include: mechanism } };
  }
  return body;
}

/** The form an edge URL is stored and compared in: no trailing slash. */
const edgeUrl = (url: string) => url.replace(/\/+$/, '');

/** Before several edges the one report was kept under this key; each edge's is now under `edge_report:<url>`. */
const EDGE_REPORT_KEY = 'edge_report';
const reportKey = (url: string) => `${EDGE_REPORT_KEY}:${url}`;

/** What the paired edge last reported of itself (src/edge/identity.ts); `identity` null: an edge that reports nothing (an older release). */
export interface EdgeReport {
  url: string;
  identity: EdgeIdentity | null;
  reported_at: string;
}

/** The last report of the edge at `url`, or null when that edge has not answered a routing push yet. */
export function readEdgeReport(db: Db, url: string): EdgeReport | null {
  const row = (db.prepare('SELECT value FROM settings WHERE key = ?').get(reportKey(url)) ?? db.prepare('SELECT value FROM settings WHERE key = ?').get(EDGE_REPORT_KEY)) as { value: string } | undefined;
  const report = row ? (JSON.parse(row.value) as EdgeReport) : null;
  return report && report.url === url ? report : null;
}

/** Keeps what the edge at `url` reported with its routing answer; written only when it changed. */
export function storeEdgeReport(db: Db, url: string, identity: EdgeIdentity | null): void {
  const current = readEdgeReport(db, url);
  if (current && JSON.stringify(current.identity) === JSON.stringify(identity)) return;
  const report: EdgeReport = { url, identity, reported_at: new Date().toISOString() };
  db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(reportKey(url), JSON.stringify(report));
}

/**
 * Replaces the parts given: a key that is present replaces (or with null removes) that part; an
 * omitted key keeps it. Returns the stored configuration. A read-modify-write: runs inside the
 * caller's transaction, so two writes cannot lose each other's part. The owner's body is checked
 * first (checkTransportBody); the supervisor writes the built-in edge's own loopback URL.
 */
export function writeTransport(db: Db, body: TransportBody): Transport {
  const current = readTransport(db);
  const given = body.edges ?? (body.edge === undefined ? undefined : body.edge === null ? [] : [body.edge]);
  const edges = (given ?? current.edges).map(({ url, token }): EdgeSettings => {
    const normal = edgeUrl(url);
    const kept = token ?? current.edges.find((e) => e.url === normal)?.token;
    if (kept === undefined) throw new ApiError('validation_error', `The edge ${normal} is not paired yet, so it needs its token.`, { fix: 'Give {url, token} for a new edge (`svc edge` prints both); an entry without token keeps the token of an edge already paired.' });
    return { url: normal, token: kept };
  });
  const smtp = body.smtp === undefined ? current.smtp : body.smtp;
  const stored: StoredTransport = { edges, smtp };
  db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(KEY, JSON.stringify(stored));
  forgetOtherEdges(db, edges.map((e) => e.url));
  return { edges, edge: edges[0] ?? null, smtp };
}

/** Removes the whole configuration. Runs inside the caller's transaction. */
export function clearTransport(db: Db): void {
  db.prepare('DELETE FROM settings WHERE key = ?').run(KEY);
  forgetOtherEdges(db, []);
}

/** The configuration as the owner may read it: secrets replaced by whether they are set; each edge with its health. */
export function transportView(db: Db, t: Transport) {
  return {
    configured: t.edge !== null || t.smtp !== null,
    edge: t.edge ? { url: t.edge.url, token_set: true } : null,
    edges: edgesHealth(
      db,
      t.edges.map((e) => e.url),
    ).map(({ url, health }) => ({ url, token_set: true, health })),
    smtp: t.smtp
      ? { host: t.smtp.host, port: t.smtp.port, secure: t.smtp.secure ?? false, username: t.smtp.username ?? null, password_set: Boolean(t.smtp.password), spf_include: t.smtp.spf_include ?? null }
      : null,
  };
}
