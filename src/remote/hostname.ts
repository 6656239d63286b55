/**
 * The tunnel's public hostname: a DNS name the tunnel provider routes to this service, used to
 * build the tunnel origin `https://<hostname>`. Checked strictly so it can be pasted into an
 * origin and a URL without escaping.
 */

/** RFC 1035: 253 characters in presentation form, 63 per label. */
const NAME_MAX = 253;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
/** Top-level labels are alphabetic (or IDNA `xn--…`), which also keeps IPv4 addresses out. */
const TOP_LABEL = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

/** The hostname lower-cased, or null when it is not a fully qualified DNS name. */
export function normalizeHostname(input: string): string | null {
  const name = input.trim().toLowerCase();
  if (name.length === 0 || name.length > NAME_MAX) return null;
  const labels = name.split('.');
  // A public name has at least a registered domain and its suffix; `localhost` or `intranet` never route through a tunnel.
  if (labels.length < 2) return null;
  if (!labels.every((label) => LABEL.test(label))) return null;
  if (!TOP_LABEL.test(labels[labels.length - 1])) return null;
  return name;
}
