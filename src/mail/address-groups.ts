/**
 * A check of a received message's address headers before the MIME parser reads them. mailparser
 * parses `From`, `To`, `Cc` and the other address headers of every MIME part with nodemailer's
 * addressparser, which re-parses the rest of a header once for every group colon (`name:`) not
 * closed by `;`, up to 50 deep: a 512 KiB header of colons took 3.6 s, ten times a header of
 * plain addresses, and a message may repeat one in each of its parts (issue 32). RFC 5322 has no
 * nested groups, and real headers have one open group at most (`undisclosed-recipients:;`). Plain
 * addresses cost the parser about 0.7 s a MiB, twenty times the rest of a message, so their total
 * is bounded as well: 25 MB of `To:` lines spread over parts would take some 17 s.
 *
 * One forward pass over the raw bytes, looking only at header blocks (the message's own, and
 * those after a line starting `--`, where a part's headers begin); every colon of an address
 * header counts, quoted or not, so no quoting the parser reads differently can hide one.
 */

/** Colons not closed by `;` in one address header, above which the message is refused unparsed. */
export const MAX_OPEN_ADDRESS_GROUPS = 8;
/** Bytes of address headers in one message, all parts together; a list of ten thousand recipients fits. */
export const MAX_ADDRESS_HEADER_BYTES = 1024 * 1024;

/** The headers mailparser runs through addressparser, lower-cased. */
const ADDRESS_HEADERS = new Set(['from', 'to', 'cc', 'bcc', 'sender', 'reply-to', 'delivered-to', 'return-path', 'disposition-notification-to']);
/** Longer than any of those names. */
const MAX_NAME_BYTES = 32;

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SEMICOLON = 0x3b;
const DASH = 0x2d;
const isFoldSpace = (c: number) => c === 0x20 || c === 0x09;

/**
 * Whether the address headers of `raw` would cost the parser far more than their size: one opens
 * more than MAX_OPEN_ADDRESS_GROUPS groups, or together they pass MAX_ADDRESS_HEADER_BYTES. Linear in `raw`.
 */
export function exceedsAddressHeaderLimits(raw: Uint8Array): boolean {
  const n = raw.length;
  let addressBytes = 0;
  let inHeaders = true;
  /** Inside an address header (its first line or a continuation). */
  let inAddress = false;
  let open = 0;
  for (let start = 0; start < n; ) {
    let end = raw.indexOf(LF, start);
    if (end === -1) end = n;
    const lineEnd = end > start && raw[end - 1] === CR ? end - 1 : end;
    if (!inHeaders) {
      if (raw[start] === DASH && raw[start + 1] === DASH) inHeaders = true; // a part's headers may follow
    } else if (lineEnd === start) {
      inHeaders = false; // the blank line ends the header block
      inAddress = false;
    } else {
      let from = start;
      if (!isFoldSpace(raw[start])) {
        const colon = nameEnd(raw, start, lineEnd);
        inAddress = colon !== -1 && ADDRESS_HEADERS.has(headerName(raw, start, colon));
        open = 0;
        from = colon + 1;
      }
      if (inAddress) {
        addressBytes += lineEnd - start;
        if (addressBytes > MAX_ADDRESS_HEADER_BYTES) return true;
        for (let k = from; k < lineEnd; k++) {
          const c = raw[k];
          if (c === SEMICOLON) open = 0;
          else if (c === COLON && ++open > MAX_OPEN_ADDRESS_GROUPS) return true;
        }
      }
    }
    start = end + 1;
  }
  return false;
}

/** The colon after a header name of at most MAX_NAME_BYTES at `start`, or -1; reads no further than that. */
function nameEnd(raw: Uint8Array, start: number, lineEnd: number): number {
  const last = Math.min(lineEnd, start + MAX_NAME_BYTES + 1);
  for (let k = start; k < last; k++) if (raw[k] === COLON) return k;
  return -1;
}

function headerName(raw: Uint8Array, start: number, colon: number): string {
  let name = '';
  for (let k = start; k < colon; k++) name += String.fromCharCode(raw[k]);
  return name.trim().toLowerCase();
}
