/**
 * Migration 8: the OAuth authorization server (spec §5.3; see docs/oauth.md).
 *
 * A grant is one consent and one refresh-token family: its id is what agents' webhooks and the
 * owner's grant list name, and it ends 30 days after consent. Tokens and codes are stored only as
 * SHA-256 hashes. Revoking a grant deletes its tokens and codes and stamps `revoked_at`.
 */
export const OAUTH_MIGRATION = `
  CREATE TABLE oauth_clients (
    client_id TEXT PRIMARY KEY,                   -- UUIDv7
    client_name TEXT,                             -- as declared by the client: unverified
    redirect_uris TEXT NOT NULL,                  -- JSON array
    grant_types TEXT NOT NULL,                    -- JSON array
    response_types TEXT NOT NULL,                 -- JSON array
    granted INTEGER NOT NULL DEFAULT 0,           -- 1 once any grant was issued: never expires unused
    created_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX oauth_clients_created ON oauth_clients (created_at, client_id);

  -- Authorization requests waiting on the consent screen.
  CREATE TABLE oauth_requests (
    request_id TEXT PRIMARY KEY,                  -- UUIDv7
    client_id TEXT NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,                   -- exactly as sent to /oauth/authorize
    state TEXT,
    code_challenge TEXT NOT NULL,                 -- PKCE S256
    resource TEXT NOT NULL,                       -- <origin>/mcp or <origin>/v0
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX oauth_requests_expiry ON oauth_requests (expires_at);

  CREATE TABLE oauth_grants (
    grant_id TEXT PRIMARY KEY,                    -- UUIDv7
    client_id TEXT NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
    resource TEXT NOT NULL,
    origin TEXT NOT NULL,                         -- tokens work on this origin only
    audience TEXT NOT NULL CHECK (audience IN ('/v0', '/mcp')),
    inbox_ids TEXT NOT NULL,                      -- JSON array, at least one inbox
    permissions TEXT NOT NULL,                    -- JSON array of permission names
    send_policy TEXT NOT NULL CHECK (send_policy IN ('direct', 'approval', 'read_only')),
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,                     -- consent + 30 days: the family's end
    revoked_at TEXT,
    last_used_at TEXT
  ) STRICT;
  CREATE INDEX oauth_grants_client ON oauth_grants (client_id, created_at);

  CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,                   -- sha256 hex
    grant_id TEXT NOT NULL REFERENCES oauth_grants (grant_id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at TEXT                                  -- set on the one successful exchange
  ) STRICT;
  CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id);

  CREATE TABLE oauth_tokens (
    token_id TEXT PRIMARY KEY,                    -- UUIDv7
    grant_id TEXT NOT NULL REFERENCES oauth_grants (grant_id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    token_hash TEXT NOT NULL UNIQUE,              -- sha256 hex
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at TEXT                                  -- refresh tokens: rotated; a second use is reuse
  ) STRICT;
  CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id, kind, expires_at);
`;
