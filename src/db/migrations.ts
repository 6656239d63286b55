/** Numbered schema migrations; `PRAGMA user_version` records how many have run. */
import { DOMAINS_MIGRATION } from './migrations-domains.js';
import { DNS_PROVIDER_MIGRATION } from './migrations-dns-provider.js';
import { WEBHOOKS_MIGRATION } from './migrations-webhooks.js';
import { OAUTH_MIGRATION } from './migrations-oauth.js';
import { QUARANTINE_AUTO_RETRY_MIGRATION } from './migrations-quarantine.js';
import { RAW_PARTS_MIGRATION } from './migrations-raw-parts.js';
import { THREAD_LISTING_MIGRATION, THREAD_PAGES_MIGRATION, THREAD_SUMMARIES_MIGRATION } from './migrations-thread-summaries.js';
import { CONTENTLESS_FTS_MIGRATION } from './migrations-contentless-fts.js';
import { EXTRACTED_SPAN_MIGRATION } from './migrations-extracted-span.js';
import { ACTIONS_MIGRATION } from './migrations-actions.js';
import { MANIPULATION_MIGRATION } from './migrations-manipulation.js';
import { AUTHENTICATED_CORRESPONDENTS_MIGRATION, GUARD_MIGRATION } from './migrations-guard.js';
import { EDGES_MIGRATION } from './migrations-edges.js';
import { LABEL_EVENTS_MIGRATION } from './migrations-label-events.js';
import { ATTACHMENT_TEXT_MIGRATION } from './migrations-attachment-text.js';
import { RETENTION_MIGRATION } from './migrations-retention.js';
import { PODS_MIGRATION, WEBHOOK_POD_FILTER_MIGRATION } from './migrations-pods.js';
import { METRIC_DAYS_MIGRATION } from './migrations-metric-days.js';
import { MESSAGE_AUTH_MIGRATION } from './migrations-message-auth.js';
import { INBOX_UNREAD_MIGRATION, INBOX_UNREAD_THREADS_MIGRATION, METRIC_DAY_ROLLUPS_MIGRATION, METRIC_HOURS_MIGRATION, METRIC_ROLLUPS_MIGRATION } from './migrations-metric-rollups.js';
import { EVENT_BODIES_MIGRATION } from './migrations-event-bodies.js';
import { SCOPED_SHARDS_MIGRATION, SEARCH_KEYS_MIGRATION, SEARCH_SHARDS_MIGRATION, SHARD_SPANS_MIGRATION } from './migrations-search-shards.js';

export const MIGRATIONS: readonly string[] = [
  // 1: settings and the owner account
  `
  CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) STRICT;

  CREATE TABLE owner (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    password_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;

  CREATE TABLE owner_sessions (
    session_id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    csrf_token TEXT NOT NULL,
    user_agent_hash TEXT,
    created_at TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
  ) STRICT;
  `,
  // 2: inboxes, API keys, the mail store, lists and the event log
  `
  CREATE TABLE inboxes (
    inbox_id TEXT PRIMARY KEY,            -- the address, lower-cased
    username TEXT NOT NULL,
    domain TEXT NOT NULL,
    display_name TEXT,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
    metadata TEXT,                        -- JSON object or NULL
    client_id TEXT UNIQUE,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX inboxes_created ON inboxes (created_at, inbox_id);

  CREATE TABLE api_keys (
    api_key_id TEXT PRIMARY KEY,
    name TEXT,
    prefix TEXT NOT NULL,                 -- first characters of the secret, for display
    key_hash TEXT NOT NULL UNIQUE,        -- sha256 hex of the secret
    permissions TEXT NOT NULL,            -- JSON array of permission names
    send_policy TEXT NOT NULL CHECK (send_policy IN ('direct', 'approval', 'read_only')),
    inbox_ids TEXT,                       -- JSON array; NULL means every inbox
    expires_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    used_at TEXT
  ) STRICT;

  CREATE TABLE threads (
    thread_id TEXT PRIMARY KEY,
    inbox_id TEXT NOT NULL REFERENCES inboxes (inbox_id) ON DELETE CASCADE,
    subject TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX threads_inbox ON threads (inbox_id, updated_at);

  CREATE TABLE messages (
    id INTEGER PRIMARY KEY,               -- internal row id (FTS, labels, attachments)
    inbox_id TEXT NOT NULL REFERENCES inboxes (inbox_id) ON DELETE CASCADE,
    thread_id TEXT NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,             -- RFC 5322 Message-ID with angle brackets
    from_address TEXT,                    -- display form "Name <addr>"
    sender TEXT,                          -- bare lower-cased address of From
    to_addresses TEXT NOT NULL,           -- JSON array of display forms
    cc_addresses TEXT,                    -- JSON array or NULL
    bcc_addresses TEXT,
    reply_to TEXT,
    subject TEXT,
    preview TEXT,
    text TEXT,
    html TEXT,
    extracted_text TEXT,
    extracted_html TEXT,
    headers TEXT,                         -- JSON object
    in_reply_to TEXT,
    refs TEXT,                            -- JSON array of Message-IDs
    size INTEGER NOT NULL,
    timestamp TEXT NOT NULL,              -- received or sent time
    direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    send_status TEXT,
    send_reason TEXT,
    source_key TEXT UNIQUE,               -- edge buffer object key: inbound commit is idempotent on it
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (inbox_id, message_id)
  ) STRICT;
  CREATE INDEX messages_thread ON messages (thread_id, timestamp);
  CREATE INDEX messages_inbox_time ON messages (inbox_id, timestamp);

  CREATE TABLE message_labels (
    message_rowid INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    PRIMARY KEY (message_rowid, label)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX message_labels_label ON message_labels (label, message_rowid);

  CREATE TABLE attachments (
    message_rowid INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    attachment_id TEXT NOT NULL,
    filename TEXT,
    content_type TEXT,
    content_disposition TEXT,
    content_id TEXT,
    size INTEGER NOT NULL,
    content BLOB NOT NULL,
    PRIMARY KEY (message_rowid, attachment_id)
  ) STRICT;

  CREATE TABLE raw_messages (
    message_rowid INTEGER PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    mime BLOB NOT NULL
  ) STRICT;

  -- Full-text index over subject, addresses and body text; rowid = messages.id.
  CREATE VIRTUAL TABLE messages_fts USING fts5 (subject, participants, body, tokenize = 'unicode61 remove_diacritics 2');

  CREATE TABLE list_entries (
    inbox_id TEXT NOT NULL DEFAULT '',    -- '' for the global lists
    direction TEXT NOT NULL CHECK (direction IN ('receive', 'send', 'reply')),
    type TEXT NOT NULL CHECK (type IN ('allow', 'block')),
    entry TEXT NOT NULL,                  -- lower-cased address or domain
    reason TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (inbox_id, direction, type, entry)
  ) STRICT;

  CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    event_type TEXT NOT NULL,
    inbox_id TEXT,
    message_rowid INTEGER,                -- the message the payload describes, for redaction
    payload TEXT NOT NULL,                -- the full event object as JSON
    created_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX events_message ON events (message_rowid) WHERE message_rowid IS NOT NULL;
  CREATE INDEX events_created ON events (created_at);
  `,
  // 3: inbound pipeline state: the home's sealing key, quarantine, rejections
  `
  CREATE TABLE inbound_quarantine (
    quarantine_id TEXT PRIMARY KEY,
    source_kind TEXT NOT NULL CHECK (source_kind IN ('buffer_object', 'queue_message')),
    source_key TEXT NOT NULL UNIQUE,      -- edge object or queue key
    reason_code TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    size INTEGER,
    inbox_id TEXT,
    attempts INTEGER,
    last_attempt_at TEXT,
    -- 'released' and 'deleted' are kept as tombstones (never listed) so repeated calls answer 200
    status TEXT NOT NULL DEFAULT 'quarantined' CHECK (status IN ('quarantined', 'release_pending', 'delete_pending', 'released', 'deleted'))
  ) STRICT;
  CREATE INDEX inbound_quarantine_seen ON inbound_quarantine (first_seen, quarantine_id);

  CREATE TABLE inbound_rejections (
    rejection_id TEXT PRIMARY KEY,
    source_key TEXT NOT NULL UNIQUE,      -- edge object key + recipient: idempotent like commits
    inbox_id TEXT NOT NULL,
    sender TEXT,
    subject TEXT,
    reason TEXT NOT NULL,
    received_at TEXT NOT NULL,
    created_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX inbound_rejections_inbox ON inbound_rejections (inbox_id, created_at);
  `,
  // 4: outbound mail: the outbox, drafts and their attachments, idempotency keys
  `
  CREATE TABLE outbox (
    message_rowid INTEGER PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    inbox_id TEXT NOT NULL,
    ref TEXT NOT NULL UNIQUE,             -- transport reference: the edge relay is idempotent on it
    kind TEXT NOT NULL CHECK (kind IN ('send', 'reply', 'forward')),
    mail_from TEXT NOT NULL,              -- envelope sender (VERP return path)
    recipients TEXT NOT NULL,             -- JSON array of bare addresses (to, cc and bcc)
    state TEXT NOT NULL CHECK (state IN ('queued', 'handing_over', 'done')),
    transport TEXT,                       -- 'edge' or 'smtp' once handed over
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    last_error TEXT,                      -- an error code, never content
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX outbox_due ON outbox (state, next_attempt_at);
  CREATE INDEX outbox_recent ON outbox (state, updated_at);

  CREATE TABLE drafts (
    draft_id TEXT PRIMARY KEY,
    inbox_id TEXT NOT NULL REFERENCES inboxes (inbox_id) ON DELETE CASCADE,
    client_id TEXT,
    to_addresses TEXT,                    -- JSON arrays of display forms, or NULL
    cc_addresses TEXT,
    bcc_addresses TEXT,
    reply_to TEXT,
    subject TEXT,
    text TEXT,
    html TEXT,
    headers TEXT,                         -- JSON object or NULL
    labels TEXT NOT NULL DEFAULT '[]',    -- JSON array
    in_reply_to TEXT,                     -- Message-ID of the message replied to
    forward_of TEXT,                      -- Message-ID of the message forwarded
    reply_all INTEGER NOT NULL DEFAULT 0,
    refs TEXT,                            -- JSON array of Message-IDs
    send_at TEXT,
    send_status TEXT NOT NULL CHECK (send_status IN ('draft', 'pending_approval', 'scheduled', 'sending', 'sent', 'rejected', 'failed')),
    send_reason TEXT,
    approved INTEGER NOT NULL DEFAULT 0,  -- the owner approved it, or a direct-policy credential scheduled it
    created_by TEXT,                      -- 'owner' or the credential id
    message_id TEXT,                      -- once sent
    thread_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (inbox_id, client_id)
  ) STRICT;
  CREATE INDEX drafts_inbox ON drafts (inbox_id, updated_at);
  CREATE INDEX drafts_due ON drafts (send_status, send_at);

  CREATE TABLE draft_attachments (
    draft_id TEXT NOT NULL REFERENCES drafts (draft_id) ON DELETE CASCADE,
    attachment_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    filename TEXT,
    content_type TEXT,
    content_disposition TEXT,
    content_id TEXT,
    size INTEGER NOT NULL,
    content BLOB NOT NULL,
    PRIMARY KEY (draft_id, attachment_id)
  ) STRICT;

  CREATE TABLE idempotency_keys (
    inbox_id TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('send', 'approval', 'draft_send', 'draft_approve')),
    message_id TEXT,
    thread_id TEXT,
    draft_id TEXT,
    final_at TEXT,                        -- when the send reached a final state (reusable 24 h later)
    created_at TEXT NOT NULL,
    PRIMARY KEY (inbox_id, key)
  ) STRICT;
  CREATE INDEX idempotency_message ON idempotency_keys (inbox_id, message_id);
  `,
  // 5: per-domain DKIM signing keys the home generates (the public half is published in DNS)
  `
  CREATE TABLE dkim_keys (
    domain TEXT PRIMARY KEY,
    selector TEXT NOT NULL,
    private_key TEXT NOT NULL,            -- PKCS#8 PEM, inside the encrypted database only
    public_key TEXT NOT NULL,             -- base64 SubjectPublicKeyInfo, the p= of the DNS record
    created_at TEXT NOT NULL
  ) STRICT;
  `,
  // 6: webhooks (src/db/migrations-webhooks.ts)
  WEBHOOKS_MIGRATION,
  // 7: domains (src/db/migrations-domains.ts)
  DOMAINS_MIGRATION,
  // 8: the OAuth authorization server (src/db/migrations-oauth.ts)
  OAUTH_MIGRATION,
  // 9: idempotent webhook create with the AgentMail SDK's client_id (docs/webhooks.md)
  `
  ALTER TABLE webhooks ADD COLUMN client_id TEXT;              -- unique per creator, checked inside the create transaction
  ALTER TABLE webhooks ADD COLUMN client_request_hash TEXT;    -- hash of the create body, so a repeat with another body is refused
  CREATE INDEX webhooks_client ON webhooks (owner_kind, creator_id, client_id) WHERE client_id IS NOT NULL;
  `,
  // 10: the quarantine's automatic retry time, indexed (src/db/migrations-quarantine.ts)
  QUARANTINE_AUTO_RETRY_MIGRATION,
  // 11: raw MIME in parts of at most 1 MiB (src/db/migrations-raw-parts.ts)
  RAW_PARTS_MIGRATION,
  // 12: stored thread summaries, kept by triggers and the commit hook
  THREAD_SUMMARIES_MIGRATION,
  // 13: the search index keeps no copy of the text it indexes (src/db/migrations-contentless-fts.ts)
  CONTENTLESS_FTS_MIGRATION,
  // 14: extracted_text kept as a span of text when it is one (src/db/migrations-extracted-span.ts)
  EXTRACTED_SPAN_MIGRATION,
  // 15: one-time codes and action links of received mail (src/db/migrations-actions.ts)
  ACTIONS_MIGRATION,
  // 16: the manipulation verdict and each inbox's correspondent domains (src/db/migrations-manipulation.ts)
  MANIPULATION_MIGRATION,
  // 17: the guarded send policy, why the guard held a draft, each inbox's correspondent addresses (src/db/migrations-guard.ts)
  GUARD_MIGRATION,
  // 18: what svc published through the DNS provider per domain (src/db/migrations-dns-provider.ts)
  DNS_PROVIDER_MIGRATION,
  // 19: only authenticated senders are known correspondents; addresses known only from received mail are forgotten (src/db/migrations-guard.ts)
  AUTHENTICATED_CORRESPONDENTS_MIGRATION,
  // 20: several edges per home: the transport's edge list, per-edge health, inbound dedup, outbound handovers per edge (src/db/migrations-edges.ts)
  EDGES_MIGRATION,
  // 21: the label change log behind GET /v0/inboxes/{inbox_id}/events (src/db/migrations-label-events.ts)
  LABEL_EVENTS_MIGRATION,
  // 22: each attachment's extracted text, searchable with its message (src/db/migrations-attachment-text.ts)
  ATTACHMENT_TEXT_MIGRATION,
  // 23: when a quarantine item was resolved, and the indexes the retention pass deletes by (src/db/migrations-retention.ts)
  RETENTION_MIGRATION,
  // 24: pods, and the pod of each inbox, domain, webhook and API key (src/db/migrations-pods.ts)
  PODS_MIGRATION,
  // 25: stored per-day counters for the usage metrics, kept by triggers (src/db/migrations-metric-days.ts)
  METRIC_DAYS_MIGRATION,
  // 26: svc's authentication verdict of each received message (src/db/migrations-message-auth.ts)
  MESSAGE_AUTH_MIGRATION,
  // 27: a webhook's pod filter, AgentMail's `pod_ids` (src/db/migrations-pods.ts)
  WEBHOOK_POD_FILTER_MIGRATION,
  // 28: all-time and whole-home roll-ups of the metric counters (src/db/migrations-metric-rollups.ts)
  METRIC_ROLLUPS_MIGRATION,
  // 29: each inbox's visible unread count, kept by triggers (src/db/migrations-metric-rollups.ts)
  INBOX_UNREAD_MIGRATION,
  // 30: each inbox's count of threads with visible unread mail, kept from the thread summaries (src/db/migrations-metric-rollups.ts)
  INBOX_UNREAD_THREADS_MIGRATION,
  // 31: the search index in shards of 8,192 message row ids, each its own FTS5 table (src/db/migrations-search-shards.ts)
  SEARCH_SHARDS_MIGRATION,
  // 32: a received message's event reads the message's bodies from its row when delivered instead of storing a copy (src/db/migrations-event-bodies.ts)
  EVENT_BODIES_MIGRATION,
  // 33: each search shard's time span, so search finds a scope's share of a shard from the inbox index (src/db/migrations-search-shards.ts)
  SHARD_SPANS_MIGRATION,
  // 34: the metric counters and their roll-ups per UTC hour instead of per day (src/db/migrations-metric-days.ts)
  METRIC_HOURS_MIGRATION,
  // 35: thread pages read from one covering index (threads_listing, replacing threads_inbox); messages by Message-ID and by time over every inbox (src/db/migrations-thread-summaries.ts)
  THREAD_LISTING_MIGRATION,
  // 36: new search shards also index each message's words tagged with its inbox, so a search of a few inboxes reads only their postings (src/db/migrations-search-shards.ts)
  SCOPED_SHARDS_MIGRATION,
  // 37: each visible message's (inbox_id, id, thread_id) in one index, so a search of one inbox checks its matches without reading their rows (src/db/migrations-search-shards.ts)
  SEARCH_KEYS_MIGRATION,
  // 38: what a thread page shows in a table of its own, each inbox's threads together by last activity, instead of a deep covering index (src/db/migrations-thread-summaries.ts);
  // kept by four triggers on `threads`: a later migration that rebuilds `threads` must make them again
  THREAD_PAGES_MIGRATION,
  // 39: per-day roll-ups of the per-hour metric counters, so a series of daily buckets reads a row per day (src/db/migrations-metric-rollups.ts)
  METRIC_DAY_ROLLUPS_MIGRATION,
];

/**
 * Migrations (by their 1-based number) that rebuild a table other tables reference: they run
 * with foreign keys off (so a DROP does not cascade), and the keys are checked before they commit.
 */
export const FOREIGN_KEYS_OFF: ReadonlySet<number> = new Set([17]);
