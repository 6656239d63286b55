/**
 * Migration 15: the one-time codes and action links found in a received message (issue 20 §2,
 * src/mail/actions.ts, docs/extraction.md), as JSON `{codes, links}`, computed with the rest of the
 * message's text work before its commit. NULL for sent mail and for mail stored before: reads of
 * that mail compute it from the stored text, HTML and headers (nothing is rewritten on upgrade).
 */
export const ACTIONS_MIGRATION = `
  ALTER TABLE messages ADD COLUMN actions TEXT;
`;
