/**
 * Migration 20: several edges per home (docs/edge.md "Several edges").
 * - The transport setting's single `edge` becomes the list `edges` (of one, or none); the smart
 *   host is kept as it was. A home that had one edge works unchanged.
 * - The delivery-report cursor and the edge's own report become per edge (keyed by its URL).
 * - `edge_health`: each edge's last success, last failure (our code) and backoff.
 * - `inbound_seen`: the content hash of each received message per recipient inbox, for
 *   INBOUND_DEDUP_WINDOW_MS, so the same mail delivered through two edges is committed once
 *   (src/inbound/dedup.ts); the primary key makes a race of two edges commit it once.
 * - `outbound_edge_handovers`: which edges an outbound ref may have reached, so a failover never
 *   hands the same job to a second edge while the first might still send it (docs/outbound.md).
 */
export const EDGES_MIGRATION = `
  UPDATE settings
     SET value = json_object(
       'edges', CASE WHEN json_type(value, '$.edge') = 'object' THEN json_array(json(json_extract(value, '$.edge'))) ELSE json('[]') END,
       'smtp', CASE WHEN json_type(value, '$.smtp') = 'object' THEN json(json_extract(value, '$.smtp')) ELSE NULL END)
   WHERE key = 'transport' AND json_valid(value) AND json_type(value, '$.edges') IS NULL;

  UPDATE settings
     SET key = 'delivery_events_cursor:' || (SELECT json_extract(value, '$.edges[0].url') FROM settings WHERE key = 'transport')
   WHERE key = 'delivery_events_cursor'
     AND (SELECT json_extract(value, '$.edges[0].url') FROM settings WHERE key = 'transport') IS NOT NULL;

  UPDATE settings
     SET key = 'edge_report:' || json_extract(value, '$.url')
   WHERE key = 'edge_report' AND json_valid(value) AND json_extract(value, '$.url') IS NOT NULL;

  CREATE TABLE edge_health (
    url TEXT PRIMARY KEY,
    last_success_at TEXT,
    last_error TEXT,                      -- our code (edge_unreachable, edge_status_503), never the edge's text
    last_error_at TEXT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    backoff_until TEXT
  ) STRICT;

  CREATE TABLE inbound_seen (
    content_hash TEXT NOT NULL,           -- sha256 hex of the opened raw message
    inbox_id TEXT NOT NULL,               -- the recipient it was committed (or refused) for
    seen_at TEXT NOT NULL,
    PRIMARY KEY (content_hash, inbox_id)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX inbound_seen_at ON inbound_seen (seen_at);

  CREATE TABLE outbound_edge_handovers (
    ref TEXT NOT NULL,
    url TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (ref, url)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX outbound_edge_handovers_at ON outbound_edge_handovers (at);
`;
