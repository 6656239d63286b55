/**
 * Migration 10: when the inbound-pull loop next retries a quarantine item by itself
 * (src/inbound/quarantine.ts, docs/inbound.md "Quarantine"), stored with the item, so the loop
 * finds the due ones with an index instead of reading every transient item.
 *
 * `auto_retry_at` is written with each item and each failed retry from nextAutoRetryAt, the one
 * rule; NULL when the loop never retries it (a permanent reason, a queue-message item, the
 * schedule used up). The loop's query adds `status = 'quarantined'`, so an owner action in
 * progress keeps the item out until it is back. The backfill computes the same rule once for the
 * items already there, with the backoff schedule as it stands at this migration (1 min, 5 min,
 * 30 min, 2 h after attempts 1 to 4; QUARANTINE_RETRY_BACKOFF_MS).
 */
export const QUARANTINE_AUTO_RETRY_MIGRATION = `
  ALTER TABLE inbound_quarantine ADD COLUMN auto_retry_at TEXT;
  UPDATE inbound_quarantine
     SET auto_retry_at = strftime('%Y-%m-%dT%H:%M:%fZ', coalesce(last_attempt_at, first_seen),
           '+' || (json_extract('[60000, 300000, 1800000, 7200000]', '$[' || (coalesce(attempts, 1) - 1) || ']') / 1000) || ' seconds')
   WHERE source_kind = 'buffer_object' AND reason_code IN ('parse_failed', 'commit_failed') AND coalesce(attempts, 1) BETWEEN 1 AND 4;
  CREATE INDEX inbound_quarantine_auto_retry ON inbound_quarantine (status, auto_retry_at) WHERE auto_retry_at IS NOT NULL;
`;
