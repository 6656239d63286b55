/**
 * The mail transport configuration (ARCHITECTURE §6): the paired edge (`{url, token}`) and an
 * optional SMTP smart host for outbound. Kept in the settings table (inside the encrypted
 * database); secrets are write-only: reads say whether one is set, never what it is.
 */
import type { Db } from '../db/open.js';
import { ApiError } from '../core/errors.js';
import type { EdgeSettings, SmtpSettings, TransportBody } from './transport-schemas.js';

export type { EdgeSettings, SmtpSettings, TransportBody, TransportResponse } from './transport-schemas.js';

export interface Transport {
  edge: EdgeSettings | null;
  smtp: SmtpSettings | null;
}

const KEY = 'transport';

export function readTransport(db: Db): Transport {
  const row = db.prepare('SELECT value FROM settings WHERE key = ?').get(KEY) as { value: string } | undefined;
  return row ? (JSON.parse(row.value) as Transport) : { edge: null, smtp: null };
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

/** What an owner's PUT sends, checked before any lookup: an edge URL must parse and use https (http only on loopback). */
export function checkTransportBody(body: TransportBody): TransportBody {
  if (body.edge) checkEdgeUrl(body.edge.url);
  return body;
}

/**
 * Replaces the parts given: a key that is present replaces (or with null removes) that part; an
 * omitted key keeps it. Returns the stored configuration. A read-modify-write: runs inside the
 * caller's transaction, so two writes cannot lose each other's part. The owner's body is checked
 * first (checkTransportBody); the supervisor writes the built-in edge's own loopback URL.
 */
export function writeTransport(db: Db, body: TransportBody): Transport {
  const current = readTransport(db);
  const next: Transport = {
    edge: body.edge === undefined ? current.edge : body.edge,
    smtp: body.smtp === undefined ? current.smtp : body.smtp,
  };
  if (next.edge) next.edge = { ...next.edge, url: next.edge.url.replace(/\/+$/, '') };
  db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(KEY, JSON.stringify(next));
  return next;
}

/** Removes the whole configuration. Runs inside the caller's transaction. */
export function clearTransport(db: Db): void {
  db.prepare('DELETE FROM settings WHERE key = ?').run(KEY);
}

/** The configuration as the owner may read it: secrets replaced by whether they are set. */
export function transportView(t: Transport) {
  return {
    configured: t.edge !== null || t.smtp !== null,
    edge: t.edge ? { url: t.edge.url, token_set: true } : null,
    smtp: t.smtp ? { host: t.smtp.host, port: t.smtp.port, secure: t.smtp.secure ?? false, username: t.smtp.username ?? null, password_set: Boolean(t.smtp.password) } : null,
  };
}
