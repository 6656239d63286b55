/**
 * Migration 18: what svc published for a domain through the DNS provider (docs/dns-providers.md).
 * `dns_added` is the exact RRs svc added (`[{type, name, value, priority?, ttl}]`) in `dns_zone`,
 * so teardown removes those and nothing the owner had; `dns_published_at` is when the current
 * apply's records were last published (reset when the domain moves to provisioning).
 */
export const DNS_PROVIDER_MIGRATION = `
  ALTER TABLE domains ADD COLUMN dns_zone TEXT;
  ALTER TABLE domains ADD COLUMN dns_added TEXT NOT NULL DEFAULT '[]';
  ALTER TABLE domains ADD COLUMN dns_published_at TEXT;
`;
