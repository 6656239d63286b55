/**
 * Migration 23: when a quarantine item was resolved (released or deleted), so its tombstone can
 * be forgotten 30 days later (src/db/retention.ts). Tombstones from before the migration count
 * as resolved at the upgrade: they are kept the full 30 days from then.
 */
export const RETENTION_MIGRATION = `
  ALTER TABLE inbound_quarantine ADD COLUMN resolved_at TEXT;
  UPDATE inbound_quarantine SET resolved_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE status IN ('released', 'deleted');
  CREATE INDEX inbound_quarantine_resolved ON inbound_quarantine (resolved_at) WHERE resolved_at IS NOT NULL;
  CREATE INDEX inbound_rejections_created ON inbound_rejections (created_at);
  CREATE INDEX owner_sessions_expiry ON owner_sessions (expires_at);
  CREATE INDEX idempotency_final ON idempotency_keys (final_at) WHERE kind = 'send' AND final_at IS NOT NULL;
`;
