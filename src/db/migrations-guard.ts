/**
 * Migration 17: the `guarded` send policy (issue 20 §4, src/mail/guard.ts, docs/guarded.md).
 * - `api_keys` and `oauth_grants` accept `guarded` in `send_policy`. SQLite cannot change a CHECK
 *   in place, so both tables are rebuilt (SQLite's documented twelve steps): this migration runs
 *   with foreign keys off (FOREIGN_KEYS_OFF in src/db/migrations.ts) so that dropping the old
 *   `oauth_grants` does not cascade to its codes and tokens, and the foreign keys are checked
 *   before it commits.
 * - `drafts.guard_findings`: why the guard held a draft for the owner, JSON
 *   `[{detector, detail}]`, or NULL.
 * - `correspondent_addresses`: the addresses each inbox has mailed or received clean mail from,
 *   so that the guard can count recipients it writes to for the first time. `introduced_at` is
 *   set when a send made the address known (NULL when it first wrote to the inbox); the backfill
 *   takes the senders of clean received mail (not spam, blocked, unauthenticated or suspicious)
 *   and the recipients of mail that was sent, all as already known (their time is outside any
 *   volume window).
 */
const ADDRESS_OF = (column: string) =>
  `lower(trim(CASE WHEN instr(${column}, '<') > 0 AND instr(${column}, '>') > instr(${column}, '<')
                 THEN substr(${column}, instr(${column}, '<') + 1, instr(${column}, '>') - instr(${column}, '<') - 1)
                 ELSE ${column} END))`;

/** The recipients of mail that was sent, as already known (their time outside any volume window). */
const SENT_RECIPIENTS_KNOWN = `
  INSERT OR IGNORE INTO correspondent_addresses (inbox_id, address)
    SELECT m.inbox_id, ${ADDRESS_OF('r.value')} FROM messages m,
           json_each(json_array(json(m.to_addresses), json(coalesce(m.cc_addresses, '[]')), json(coalesce(m.bcc_addresses, '[]')))) AS g,
           json_each(g.value) AS r
     WHERE m.direction = 'outbound' AND instr(r.value, '@') > 0
       AND EXISTS (SELECT 1 FROM message_labels l WHERE l.message_rowid = m.id AND l.label IN ('sent', 'delivered'));`;

export const GUARD_MIGRATION = `
  CREATE TABLE api_keys_next (
    api_key_id TEXT PRIMARY KEY,
    name TEXT,
    prefix TEXT NOT NULL,                 -- first characters of the secret, for display
    key_hash TEXT NOT NULL UNIQUE,        -- sha256 hex of the secret
    permissions TEXT NOT NULL,            -- JSON array of permission names
    send_policy TEXT NOT NULL CHECK (send_policy IN ('direct', 'approval', 'guarded', 'read_only')),
    inbox_ids TEXT,                       -- JSON array; NULL means every inbox
    expires_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    used_at TEXT
  ) STRICT;
  INSERT INTO api_keys_next (api_key_id, name, prefix, key_hash, permissions, send_policy, inbox_ids, expires_at, created_at, updated_at, used_at)
    SELECT api_key_id, name, prefix, key_hash, permissions, send_policy, inbox_ids, expires_at, created_at, updated_at, used_at FROM api_keys;
  DROP TABLE api_keys;
  ALTER TABLE api_keys_next RENAME TO api_keys;

  CREATE TABLE oauth_grants_next (
    grant_id TEXT PRIMARY KEY,                    -- UUIDv7
    client_id TEXT NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
    resource TEXT NOT NULL,
    origin TEXT NOT NULL,                         -- tokens work on this origin only
    audience TEXT NOT NULL CHECK (audience IN ('/v0', '/mcp')),
    inbox_ids TEXT NOT NULL,                      -- JSON array, at least one inbox
    permissions TEXT NOT NULL,                    -- JSON array of permission names
    send_policy TEXT NOT NULL CHECK (send_policy IN ('direct', 'approval', 'guarded', 'read_only')),
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,                     -- consent + 30 days: the family's end
    revoked_at TEXT,
    last_used_at TEXT
  ) STRICT;
  INSERT INTO oauth_grants_next (grant_id, client_id, resource, origin, audience, inbox_ids, permissions, send_policy, created_at, expires_at, revoked_at, last_used_at)
    SELECT grant_id, client_id, resource, origin, audience, inbox_ids, permissions, send_policy, created_at, expires_at, revoked_at, last_used_at FROM oauth_grants;
  DROP TABLE oauth_grants;
  ALTER TABLE oauth_grants_next RENAME TO oauth_grants;
  CREATE INDEX oauth_grants_client ON oauth_grants (client_id, created_at);

  ALTER TABLE drafts ADD COLUMN guard_findings TEXT;

  CREATE TABLE correspondent_addresses (
    inbox_id TEXT NOT NULL REFERENCES inboxes (inbox_id) ON DELETE CASCADE,
    address TEXT NOT NULL,                -- bare, lower-cased
    introduced_at TEXT,                   -- when a send first wrote to it; NULL: known otherwise
    PRIMARY KEY (inbox_id, address)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX correspondent_addresses_introduced ON correspondent_addresses (inbox_id, introduced_at) WHERE introduced_at IS NOT NULL;
  INSERT OR IGNORE INTO correspondent_addresses (inbox_id, address)
    SELECT m.inbox_id, m.sender FROM messages m
     WHERE m.direction = 'inbound' AND instr(m.sender, '@') > 0
       AND NOT EXISTS (SELECT 1 FROM message_labels l WHERE l.message_rowid = m.id AND l.label IN ('spam', 'blocked', 'unauthenticated', 'suspicious'));
  ${SENT_RECIPIENTS_KNOWN}
`;

/**
 * Migration 19: only an authenticated sender is a known correspondent (issue 32 §5,
 * src/inbound/ingest.ts isAuthenticatedSender). Whether stored mail passed authentication was
 * never kept, so an address known only from received mail may have come from a forged From: every
 * such address is forgotten, and the recipients of sent mail are known again as migration 17 made
 * them. A real correspondent becomes known again with its next authenticated message. Domains
 * (correspondent_domains) stay: a forged domain there only adds a reference for the lookalike
 * check (docs/manipulation.md).
 */
export const AUTHENTICATED_CORRESPONDENTS_MIGRATION = `
  DELETE FROM correspondent_addresses WHERE introduced_at IS NULL;
  ${SENT_RECIPIENTS_KNOWN}
`;
