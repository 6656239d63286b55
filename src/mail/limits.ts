/**
 * Every limit of composing, storing and threading mail on the home side, named in one place
 * (spec §2.4, §2.5, §8; docs/drafts.md, docs/mail-store.md). Each has a one-line reason. The edge
 * has its own (src/edge/limits.ts). This module imports nothing, so any layer may use it.
 */

/** Recipients of one message or draft in total (to + cc + bcc, spec §2.4); more belongs on a mailing list. */
export const MAX_RECIPIENTS = 50;

/** Attachments of one message or draft (spec §2.4); more files are better zipped. */
export const MAX_ATTACHMENTS = 32;

/** Characters of one header line (RFC 5322 §2.1.1); a longer value cannot be a real header's. */
export const MAX_HEADER_LINE = 998;

/** Characters of a subject: one header line, so it needs no folding rules of ours. */
export const MAX_SUBJECT = MAX_HEADER_LINE;

/** Characters of a Message-ID (with angle brackets): one header line, longer ones are replaced on store. */
export const MAX_MESSAGE_ID = MAX_HEADER_LINE;

/** A Message-ID as callers may give it: MAX_MESSAGE_ID plus the two angle brackets they may leave out or add. */
export const MAX_MESSAGE_ID_INPUT = MAX_MESSAGE_ID + 2;

/** References a reply carries (oldest dropped): enough for any real conversation, bounded header size. */
export const MAX_REFERENCES = 100;

/** References threading looks at (the newest): the same bound as a reply carries. */
export const MAX_THREAD_REFS = MAX_REFERENCES;

/** References a draft may be created with, like the threading of a reply. */
export const MAX_DRAFT_REFERENCES = MAX_REFERENCES;

/** Bytes of a caller header's name (spec §2.4); real header names are a few dozen. */
export const MAX_HEADER_NAME_BYTES = 100;

/** Bytes of a caller header's value (spec §2.4); long values belong in the body. */
export const MAX_HEADER_VALUE_BYTES = 2048;

/** Bytes of all caller headers together (spec §2.4), so headers cannot crowd out the body. */
export const MAX_HEADERS_BYTES = 16 * 1024;

/** Caller headers other than `X-*` (spec §2.4): only `Auto-Submitted` is allowed, a few repeats at most. */
export const MAX_NON_X_HEADERS = 20;

/** The whole message, encoded, must stay under this (spec §8): what common providers accept. */
export const MAX_MESSAGE_BYTES = 5 * 1024 * 1024;

/** Characters of a `text` or `html` body in a request: schema bound above MAX_MESSAGE_BYTES, which decides. */
export const MAX_BODY_CHARS = 6 * 1024 * 1024;

/** Characters of a subject in a request schema: generous, so checkSubject gives the clear MAX_SUBJECT error. */
export const MAX_SUBJECT_INPUT = 64 * 1024;

/** Attachments in a request schema: generous, so the count check gives the clear MAX_ATTACHMENTS error. */
export const MAX_ATTACHMENTS_INPUT = 1000;

/** Characters of one recipient field given as a string (several comma-separated addresses): 50 long addresses fit. */
export const MAX_ADDRESS_LIST_CHARS = 64 * 1024;

/** Characters of one entry of a recipient list: a display name and an address, generously. */
export const MAX_ADDRESS_CHARS = 2048;

/** Entries of a recipient list in a request schema: generous, so the count check gives the clear MAX_RECIPIENTS error. */
export const MAX_ADDRESS_ITEMS = 200;

/** Base64 characters of one attachment in a request schema: above what fits in MAX_MESSAGE_BYTES, which decides. */
export const MAX_ATTACHMENT_BASE64_CHARS = 8 * 1024 * 1024;

/** Characters of the owner's reason for rejecting a draft: a sentence or a short paragraph. */
export const MAX_REJECT_REASON = 1000;

/** Values of one repeated list filter (e.g. `labels`): a query, not a bulk export. */
export const MAX_FILTER_VALUES = 20;

/** The longest wait for the next message one request may ask for, in seconds, and the default (docs/waiting.md). */
export const MAX_WAIT_S = 60;
export const DEFAULT_WAIT_S = 30;
