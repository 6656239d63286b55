/**
 * Migration 26: svc's own verdict on a received message's authentication (SPF, DKIM, DMARC, ARC
 * as the edge or the home evaluated them, src/edge/sealed.ts `InboundAuth`) as JSON, so the
 * owner's message view can show it (docs/web-app.md "Mail"). NULL for sent mail and for mail
 * received before this migration: the verdict was not kept then.
 */
export const MESSAGE_AUTH_MIGRATION = `
  ALTER TABLE messages ADD COLUMN auth TEXT;
`;
