/**
 * Migration 7: domains and their provisioning state (issue 6; see docs/domains.md).
 *
 * The DNS records a domain needs are derived from the transport and the domain's DKIM key each
 * time they are shown (the plan), so only what was observed is stored: `checks` holds the last
 * DNS check per record (`[{type, name, expected, status, reason, observed, checked_at}]`).
 */
export const DOMAINS_MIGRATION = `
  CREATE TABLE domains (
    domain_id TEXT PRIMARY KEY,
    domain TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL CHECK (status IN ('pending', 'provisioning', 'verifying', 'verified', 'failed', 'tearing_down', 'torn_down')),
    reason TEXT,
    feedback_enabled INTEGER NOT NULL DEFAULT 1,
    subdomains_enabled INTEGER NOT NULL DEFAULT 0,
    tracking_enabled INTEGER NOT NULL DEFAULT 0,
    checks TEXT NOT NULL DEFAULT '[]',
    checked_at TEXT,
    selftest_token TEXT,
    selftest_sent_at TEXT,
    selftest_received_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    verified_at TEXT
  ) STRICT;
  CREATE INDEX domains_by_status ON domains (status);
  CREATE INDEX domains_by_created ON domains (created_at, domain_id);
`;
