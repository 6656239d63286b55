/** `send_at` parsing (docs/drafts.md "Payload rules"): pure, no storage, no clock. */
import { ApiError } from '../../core/errors.js';

const invalid = (message: string, fix: string) => new ApiError('validation_error', message, { fix });

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** `send_at` as stored: RFC 3339 in, UTC with milliseconds out. A time in the past is allowed. */
export function parseSendAt(value: string): string {
  const bad = () => invalid(`\`send_at\` is not an RFC 3339 timestamp: ${JSON.stringify(value.slice(0, 64))}.`, 'Use a timestamp with a time zone, e.g. `2030-01-31T09:00:00Z` or `2030-01-31T10:00:00+01:00`.');
  const m = RFC3339.exec(value);
  if (!m) throw bad();
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const offsetHours = m[9] === undefined ? 0 : Number(m[9]);
  const offsetMinutes = m[10] === undefined ? 0 : Number(m[10]);
  const calendarDay = new Date(Date.UTC(year, month - 1, day));
  const dayExists = month >= 1 && month <= 12 && calendarDay.getUTCMonth() === month - 1 && calendarDay.getUTCDate() === day;
  if (!dayExists || hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) throw bad();
  const ms = Date.parse(value.replace(/[t ]/, 'T'));
  if (Number.isNaN(ms)) throw bad();
  return new Date(ms).toISOString();
}
