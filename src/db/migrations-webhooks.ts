/**
 * Migration 6: webhooks, their custom headers and delivery state (issue 6; see docs/webhooks.md).
 *
 * Delivery is strictly in order per webhook with at most one event in flight, so the retry state
 * of "the event being delivered" lives on the webhook row itself (retry_seq, attempts,
 * next_attempt_at) rather than in a per-event table.
 */
export const WEBHOOKS_MIGRATION = `
  CREATE TABLE webhooks (
    webhook_id TEXT PRIMARY KEY,                  -- UUIDv7
    owner_kind TEXT NOT NULL CHECK (owner_kind IN ('owner', 'api_key', 'oauth')),
    creator_id TEXT,                              -- api_key_id or OAuth grant; NULL for the owner
    inbox_scope TEXT,                             -- the inbox of /inboxes/{id}/webhooks; NULL instance-wide
    inbox_ids TEXT,                               -- JSON filter (instance-wide only); NULL = every inbox
    url TEXT NOT NULL,
    event_types TEXT NOT NULL,                    -- JSON array of event type names
    secret TEXT NOT NULL,                         -- whsec_..., needed for signing; only in the encrypted DB
    enabled INTEGER NOT NULL DEFAULT 1,
    disabled_reason TEXT,
    epoch INTEGER NOT NULL DEFAULT 0,             -- bumped on enable/disable, so a delivery in flight cannot write stale state
    failure_count INTEGER NOT NULL DEFAULT 0,     -- failed attempts since the last success
    dropped_count INTEGER NOT NULL DEFAULT 0,     -- deliveries given up after the last retry
    last_error_code TEXT,
    last_success_at TEXT,
    first_failure_at TEXT,                        -- start of the current unbroken failure run
    cursor_seq INTEGER NOT NULL,                  -- every event up to here is delivered, dropped or filtered out
    retry_seq INTEGER,                            -- the event whose delivery is being retried
    attempts INTEGER NOT NULL DEFAULT 0,          -- failed attempts for retry_seq
    next_attempt_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX webhooks_creator ON webhooks (owner_kind, creator_id);
  CREATE INDEX webhooks_inbox ON webhooks (inbox_scope) WHERE inbox_scope IS NOT NULL;
  CREATE INDEX webhooks_listing ON webhooks (created_at, webhook_id);

  CREATE TABLE webhook_headers (
    webhook_id TEXT NOT NULL REFERENCES webhooks (webhook_id) ON DELETE CASCADE,
    name_key TEXT NOT NULL,                       -- lower-cased name: header names are case-insensitive
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (webhook_id, name_key)
  ) STRICT;
`;
