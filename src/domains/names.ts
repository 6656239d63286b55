/** Domain names as svc stores them: lower-case ASCII (punycode for IDNs), a real multi-label DNS name. */
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { ApiError } from '../core/errors.js';

export const DOMAIN_MAX = 253;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** The stored form of `raw`, or 400 validation_error saying what is wrong. */
export function normalizeDomainName(raw: string): string {
  const invalid = (why: string) =>
    new ApiError('validation_error', `\`${raw}\` is not a usable domain: ${why}`, {
      fix: 'Send a registered DNS name such as `agents.example.com` (internationalized names are converted to their xn-- form).',
    });
  const trimmed = raw.trim().replace(/\.$/, '');
  if (trimmed === '' || /[\s/@:]/.test(trimmed)) throw invalid('it must be a bare host name, without spaces, `@`, `:` or `/`.');
  if (isIP(trimmed) || isIP(trimmed.replace(/^\[|\]$/g, ''))) throw invalid('IP addresses cannot receive mail as a domain.');
  const ascii = domainToASCII(trimmed).toLowerCase();
  if (ascii === '') throw invalid('it is not a valid (internationalized) DNS name.');
  if (ascii.length > DOMAIN_MAX) throw invalid(`it is longer than ${DOMAIN_MAX} characters.`);
  const labels = ascii.split('.');
  if (labels.length < 2) throw invalid('it needs at least two labels, e.g. `example.com`.');
  if (!labels.every((l) => LABEL.test(l))) throw invalid('each label must be 1 to 63 letters, digits or hyphens, not starting or ending with a hyphen.');
  if (/^[0-9]+$/.test(labels.at(-1)!)) throw invalid('the top-level label cannot be numeric.');
  if (labels.at(-1) === 'localhost' || ascii === 'localhost') throw invalid('`localhost` is not a mail domain.');
  return ascii;
}
