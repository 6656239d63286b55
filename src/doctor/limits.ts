/**
 * What `svc doctor` calls healthy, and how long it waits for each probe (docs/doctor.md). Every
 * probe of another host is bounded, so the report answers within a few seconds even when a host
 * is dead or a hostile peer never answers.
 */

/** The longest any one check may take; a check still running then reports that it did not finish. */
export const CHECK_TIMEOUT_MS = 6_000;
/** One request to an edge's API (it answers from its disk in milliseconds when up). */
export const EDGE_PROBE_MS = 3_000;
/** The TLS handshake that reads the edge's certificate. */
export const CERTIFICATE_PROBE_MS = 3_000;
/** One DNS lookup, asked once: a domain check makes at most two in a row (the PTR and its forward confirmation). */
export const DNS_LOOKUP_MS = 2_000;
/** Connecting to the smart host, its greeting, and each command of the login. */
export const SMTP_STEP_MS = 3_000;

/** A certificate with fewer days left than this warns, however long it was issued for. */
export const CERTIFICATE_WARN_DAYS = 7;
/** A certificate with less than this part of its lifetime left warns: renewal (at a third left, docs/acme.md) should have happened. */
export const CERTIFICATE_WARN_FRACTION = 1 / 3;

/** Below this much free space in the home's file system a write may fail at any moment: fail. */
export const DISK_FAIL_BYTES = 256 * 1024 * 1024;
/** Below this much free space (or twice svc.db, what a backup needs, when that is more): warn. */
export const DISK_WARN_BYTES = 2 * 1024 * 1024 * 1024;

/** A backup older than this warns: a week of mail is the most a lost disk should cost. */
export const BACKUP_MAX_AGE_DAYS = 7;

/** A loop pass running this long is stuck (the longest pass, an outbox handover, is bounded at about a minute per message). */
export const LOOP_PASS_STUCK_MS = 15 * 60_000;
/** A loop that began no pass for its idle wait plus this long is not running. */
export const LOOP_LATE_MS = 2 * 60_000;
