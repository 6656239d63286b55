/**
 * Migration 24: pods, AgentMail's tenants (docs/pods.md). A pod owns inboxes (and through them
 * their threads, messages and drafts), domains, webhooks and API keys. The home's existing
 * records keep working unchanged:
 * - every inbox belongs to exactly one pod; existing inboxes go to the pod `default`, created here;
 * - domains, webhooks and API keys carry a pod or NULL: NULL is the home itself (every pod), which
 *   is what each existing one was before pods existed, so old keys stay unscoped and old webhooks
 *   keep seeing every inbox.
 * Events record their inbox's pod when appended, for the WebSocket's and webhooks' pod filters.
 * No foreign key on the added columns (SQLite cannot add one with a non-NULL default): the pod's
 * existence is checked in the same write transaction that uses it (src/pods/store.ts).
 */
export const PODS_MIGRATION = `
  CREATE TABLE pods (
    pod_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    client_id TEXT UNIQUE,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX pods_created ON pods (created_at, pod_id);
  INSERT INTO pods (pod_id, name, client_id, created_at, updated_at)
    VALUES ('default', 'default', NULL, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));

  ALTER TABLE inboxes ADD COLUMN pod_id TEXT NOT NULL DEFAULT 'default';
  CREATE INDEX inboxes_pod ON inboxes (pod_id, created_at, inbox_id);
  ALTER TABLE domains ADD COLUMN pod_id TEXT;
  CREATE INDEX domains_pod ON domains (pod_id, created_at, domain_id);
  ALTER TABLE webhooks ADD COLUMN pod_id TEXT;
  ALTER TABLE api_keys ADD COLUMN pod_id TEXT;

  -- Each event's pod, from its inbox at append time (NULL: an owner-only event of no inbox).
  ALTER TABLE events ADD COLUMN pod_id TEXT;
  UPDATE events SET pod_id = 'default' WHERE inbox_id IS NOT NULL;
`;

/**
 * Migration 27: AgentMail's `pod_ids` filter on a webhook (docs/pods.md): a JSON array of pods
 * whose events the webhook hears, or NULL for every pod its creator can see. It narrows a
 * webhook of the home; a pod's own webhook (`pod_id`) hears that pod only, whatever the filter.
 */
export const WEBHOOK_POD_FILTER_MIGRATION = `
  ALTER TABLE webhooks ADD COLUMN pod_ids TEXT;
`;
