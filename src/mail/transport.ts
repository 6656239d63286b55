/**
 * The mail transport configuration (ARCHITECTURE §6): the paired edge (`{url, token}`) and an
 * optional SMTP smart host for outbound. Kept in the settings table (inside the encrypted
 * database); secrets are write-only: reads say whether one is set, never what it is.
 */
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { ApiError } from '../core/errors.js';

export const EdgeConfig = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    token: Type.String({ minLength: 16, maxLength: 512 }),
  },
  { additionalProperties: false },
);

export const SmtpConfig = Type.Object(
  {
    host: Type.String({ minLength: 1, maxLength: 253 }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    secure: Type.Optional(Type.Boolean()),
    username: Type.Optional(Type.String({ maxLength: 512 })),
    password: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { additionalProperties: false },
);

export const TransportBody = Type.Object(
  {
    edge: Type.Optional(Type.Union([EdgeConfig, Type.Null()])),
    smtp: Type.Optional(Type.Union([SmtpConfig, Type.Null()])),
  },
  { additionalProperties: false },
);

export type TransportBody = Static<typeof TransportBody>;

/** The owner's view of the transport (`GET`/`PUT /owner/transport`): secrets only as `*_set` flags. */
export const TransportResponse = Type.Object({
  configured: Type.Boolean(),
  edge: Type.Union([Type.Object({ url: Type.String(), token_set: Type.Boolean() }), Type.Null()]),
  smtp: Type.Union([
    Type.Object({ host: Type.String(), port: Type.Integer(), secure: Type.Boolean(), username: Type.Union([Type.String(), Type.Null()]), password_set: Type.Boolean() }),
    Type.Null(),
  ]),
});
export type TransportResponse = Static<typeof TransportResponse>;
export type EdgeSettings = Static<typeof EdgeConfig>;
export type SmtpSettings = Static<typeof SmtpConfig>;

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
