/** `send_at` parsing (src/mail/drafts/send-at.ts; docs/drafts.md "Payload rules"), one case per rule. */
import t from 'tap';
import { ApiError } from '../../src/core/errors.js';
import { parseSendAt } from '../../src/mail/drafts/send-at.js';

/** Accepted input and the stored value: UTC with milliseconds. */
const ACCEPTED: [input: string, stored: string, why: string][] = [
  ['2030-01-31T09:00:00Z', '2030-01-31T09:00:00.000Z', 'UTC with Z'],
  ['2030-01-31T09:00:00z', '2030-01-31T09:00:00.000Z', 'lower-case z'],
  ['2030-01-31t09:00:00Z', '2030-01-31T09:00:00.000Z', 'lower-case t'],
  ['2030-01-31 09:00:00Z', '2030-01-31T09:00:00.000Z', 'a space between date and time'],
  ['2030-01-31T10:00:00+01:00', '2030-01-31T09:00:00.000Z', 'a positive offset'],
  ['2030-01-31T04:30:00-04:30', '2030-01-31T09:00:00.000Z', 'a negative offset with minutes'],
  ['2030-01-01T00:30:00+01:00', '2029-12-31T23:30:00.000Z', 'an offset that crosses the year'],
  ['2030-01-31T09:00:00.5Z', '2030-01-31T09:00:00.500Z', 'a fraction'],
  ['2030-01-31T09:00:00.123456789Z', '2030-01-31T09:00:00.123Z', 'nanoseconds, cut to milliseconds'],
  ['2028-02-29T12:00:00Z', '2028-02-29T12:00:00.000Z', 'February 29 of a leap year'],
  ['2000-01-01T00:00:00Z', '2000-01-01T00:00:00.000Z', 'a time in the past is allowed'],
];

const REFUSED: [input: string, why: string][] = [
  ['2030-01-31T09:00:00', 'no time zone'],
  ['2030-01-31', 'a date alone'],
  ['2030-01-31T09:00Z', 'no seconds'],
  ['2030-1-31T09:00:00Z', 'a one-digit month'],
  ['2030-02-30T09:00:00Z', 'a day that does not exist'],
  ['2029-02-29T09:00:00Z', 'February 29 of a common year'],
  ['2030-13-01T09:00:00Z', 'month 13'],
  ['2030-00-10T09:00:00Z', 'month 0'],
  ['2030-01-31T24:00:00Z', 'hour 24'],
  ['2030-01-31T09:60:00Z', 'minute 60'],
  ['2030-01-31T09:00:60Z', 'second 60'],
  ['2030-01-31T09:00:00+24:00', 'an offset of 24 hours'],
  ['2030-01-31T09:00:00+01:60', 'an offset minute of 60'],
  ['2030-01-31T09:00:00+0100', 'an offset without a colon'],
  ['tomorrow', 'words'],
  ['1893456000', 'a Unix time'],
  ['', 'empty'],
];

for (const [input, stored, why] of ACCEPTED) t.test(`accepted: ${why}`, async (t) => t.equal(parseSendAt(input), stored));

for (const [input, why] of REFUSED) {
  t.test(`refused: ${why}`, async (t) => {
    try {
      parseSendAt(input);
      t.fail(`${JSON.stringify(input)} was accepted`);
    } catch (err) {
      t.ok(err instanceof ApiError, 'an ApiError');
      t.equal((err as ApiError).code, 'validation_error');
      t.ok((err as ApiError).fix, 'says how to fix it');
    }
  });
}
