/**
 * The limits of an inbox's fields, checked by the request schemas (./inbox-schemas.ts) and by the
 * store (./inboxes.ts). A module of their own that imports nothing: the store imports its schemas'
 * types, so the schemas cannot import the store (no import cycles, test/unit/layers.test.ts), and
 * the store must not load typebox.
 */

export const USERNAME_MAX = 64;
export const DOMAIN_MAX = 253;
export const DISPLAY_NAME_MAX = 256;
export const CLIENT_ID_MAX = 128;
export const METADATA_MAX_KEYS = 50;
export const METADATA_KEY_MAX = 64;
export const METADATA_STRING_MAX = 1024;
/** Serialized size of the whole metadata object after a merge. */
export const METADATA_MAX_BYTES = 8 * 1024;
