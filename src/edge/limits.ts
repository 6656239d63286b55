/** Every limit and timing of the edge, named in one place (docs/edge.md lists them). */

/** Largest message the SMTP receiver accepts (SIZE extension and counted DATA bytes); over it → 552. */
export const DEFAULT_MAX_MESSAGE_BYTES = 25 * 1024 * 1024;

/** RCPT commands accepted in one transaction (RFC 5321 §4.5.3.1.8 asks for at least 100); more → 452. */
export const MAX_RECIPIENTS_PER_MESSAGE = 100;

/** Concurrent SMTP sessions admitted; more are turned away with 421 so a flood cannot exhaust memory. */
export const MAX_SMTP_CLIENTS = 200;

/**
 * Sockets the SMTP server holds at once, admitted sessions and those being told 421 together (its
 * own `maxClients`). Above MAX_SMTP_CLIENTS so that connections being refused for a moment do not
 * crowd out a sender the fair-share rules below would admit.
 */
export const MAX_SMTP_SOCKETS = 2 * MAX_SMTP_CLIENTS;

/**
 * Concurrent SMTP connections from one client (an IPv4 address, an IPv6 /64); more get 421.
 * Without it one address could hold every MAX_SMTP_CLIENTS slot and lock out every other sender
 * (issue 16 finding 8). Real MTAs open a few per destination (Postfix: 20 at most by default).
 */
export const MAX_SMTP_CONNECTIONS_PER_CLIENT = 20;

/**
 * Concurrent SMTP connections from one network (an IPv4 /24, an IPv6 /48); more get 421. One
 * operator usually holds a whole /24 or /48, so without it ten addresses of one network filled all
 * 200 slots (issue 32). Big senders spread across many networks and need far fewer.
 */
export const MAX_SMTP_CONNECTIONS_PER_NETWORK = 50;

/**
 * Slots kept for networks that have no connection open: once MAX_SMTP_CLIENTS minus these are
 * taken, a network is admitted only for its first connection, and the networks already holding
 * slots get 421. So senders with a few networks cannot fill the server, and whoever wants the last
 * slots must bring a new network for each one.
 */
export const SMTP_SLOTS_FOR_NEW_NETWORKS = 40;

/**
 * Idle SMTP connections (also before the greeting is answered, and between commands) are closed
 * after this long, so a held slot is freed within a minute. RFC 5321 suggests 5 min; a sender
 * that is really working sends a command or data well within this.
 */
export const SMTP_SOCKET_TIMEOUT_MS = 60_000;

/** On stop, SMTP sessions get this long to finish before they are told 421 and closed. */
export const SMTP_CLOSE_GRACE_MS = 5_000;

/** One DNS query (SPF, DKIM, DMARC, ARC lookups) gives up after this long, tried this many times. */
export const DNS_TIMEOUT_MS = 3_000;
export const DNS_TRIES = 2;

/** The optional rspamd check; on timeout the verdict is `unknown` and the mail is still accepted. */
export const SPAM_CHECK_TIMEOUT_MS = 10_000;

/** Edge API list pages: default and largest `limit`. */
export const LIST_DEFAULT_LIMIT = 100;
export const LIST_MAX_LIMIT = 1_000;

/** Keys in one `POST /objects/fetch` or `POST /objects/delete` request. */
export const BATCH_MAX_KEYS = 1_000;

/** Sealed bytes in one `POST /objects/fetch` answer (at least one object is always included). */
export const BATCH_FETCH_MAX_BYTES = 16 * 1024 * 1024;

/** `GET /wait` holds at most this long (and this long when `timeout_ms` is not given). */
export const WAIT_MAX_MS = 30_000;

/** JSON bodies on the edge API (only `PUT /routing` has one; 100k addresses fit). */
export const API_BODY_LIMIT = 16 * 1024 * 1024;

/** Routing table size caps. */
export const MAX_ROUTED_DOMAINS = 10_000;
export const MAX_ROUTED_ADDRESSES = 100_000;

/** On stop, in-flight edge API requests (long-polls are released first) get this long. */
export const API_DRAIN_MS = 5_000;

/** Shortest edge API token an Edge accepts (generated tokens are `edge_` + 43 characters). */
export const MIN_API_TOKEN_LENGTH = 32;

// ---------------------------------------------------------------------------------------------
// Outbound relay (docs/edge.md "Outbound")

/** Recipients in one `POST /outbound` job (the same cap as inbound RCPT). */
export const MAX_OUTBOUND_RECIPIENTS = MAX_RECIPIENTS_PER_MESSAGE;

/** `ref` of an outbound job: the home's message reference, also the VERP tag of its return path. */
export const OUTBOUND_REF_PATTERN = '^[A-Za-z0-9._-]{1,128}$';

/**
 * Waits after the 1st, 2nd, … failed attempt of a recipient; once they are used up the next
 * temporary failure bounces. The default adds up to about two days (RFC 5321 §4.5.4.1 asks for 4–5).
 */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  60_000, 300_000, 900_000, 1_800_000, 3_600_000, 7_200_000,
  ...Array.from({ length: 11 }, () => 14_400_000),
];

/** Jobs delivered at the same time (each may hold one SMTP session per recipient domain). */
export const MAX_PARALLEL_DELIVERIES = 8;

/** SMTP client timeouts towards remote MX hosts. */
export const RELAY_CONNECT_TIMEOUT_MS = 30_000;
export const RELAY_GREETING_TIMEOUT_MS = 60_000;
export const RELAY_SOCKET_TIMEOUT_MS = 300_000;

/** The remote reply kept per recipient and in reports. */
export const MAX_REPLY_CHARS = 500;

/** Finished job records (no MIME) and delivery reports are kept at least this long. */
export const OUTBOUND_RETENTION_MS = 7 * 24 * 3_600_000;

/** How often old job records and report segments are pruned. */
export const OUTBOUND_PRUNE_INTERVAL_MS = 3_600_000;

/** A report segment file is closed and a new one started after this long. */
export const REPORT_SEGMENT_MS = 24 * 3_600_000;

/** `GET /events` page size. */
export const EVENTS_DEFAULT_LIMIT = 100;
export const EVENTS_MAX_LIMIT = 500;

/** Parts and nesting a delivery report may have before it is treated as unparseable. */
export const MAX_REPORT_PARTS = 50;
export const MAX_REPORT_DEPTH = 5;
