/**
 * The header rules of a composing payload (spec §2.4, src/mail/compose.ts), table by table:
 * caller headers (only `X-*` and `Auto-Submitted`, sizes, no line breaks, threading headers
 * reserved), the subject (one line, at most 998 characters), and recipient fields (plain
 * addresses, no groups, duplicates dropped across to/cc/bcc, 1–50 in all). Pure functions: no
 * service, no database. The limits are written as the spec states them, not imported, so a
 * changed constant fails here.
 */
import t from 'tap';
import { checkComplete, checkHeaders, checkRecipientCount, checkSubject, composition, dedupeRecipients, parseRecipients, type ComposeInput } from '../../src/mail/compose.js';
import type { Principal } from '../../src/auth/principal.js';

const owner: Principal = { kind: 'owner', id: 'owner', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };

/** `Auto-Submitted` spelled in n different letter cases: distinct JSON keys, one header name. */
const autoSubmittedSpellings = (n: number) =>
  Array.from({ length: n }, (_, i) => {
    let letter = 0;
    return [...'auto-submitted'].map((ch) => (ch === '-' ? ch : (i >> letter++) & 1 ? ch.toUpperCase() : ch)).join('');
  });

// ---- caller headers ----

const acceptedHeaders: [name: string, headers: Record<string, string> | null | undefined, stored: Record<string, string>][] = [
  ['no headers', undefined, {}],
  ['null', null, {}],
  ['an X- header, value trimmed', { 'X-Ticket': '  T-1  ' }, { 'X-Ticket': 'T-1' }],
  ['X- in any case', { 'x-lower': 'a', 'X-UPPER': 'b' }, { 'x-lower': 'a', 'X-UPPER': 'b' }],
  ['Auto-Submitted: auto-replied, lower-cased', { 'Auto-Submitted': ' Auto-Replied ' }, { 'Auto-Submitted': 'auto-replied' }],
  ['Auto-Submitted: auto-generated', { 'Auto-Submitted': 'auto-generated' }, { 'Auto-Submitted': 'auto-generated' }],
  ['Auto-Submitted: no', { 'Auto-Submitted': 'no' }, { 'Auto-Submitted': 'no' }],
  ['a name of exactly 100 bytes', { [`X-${'n'.repeat(98)}`]: 'v' }, { [`X-${'n'.repeat(98)}`]: 'v' }],
  ['a value of exactly 2048 bytes', { 'X-Long': 'v'.repeat(2048) }, { 'X-Long': 'v'.repeat(2048) }],
  ['20 headers other than X-', Object.fromEntries(autoSubmittedSpellings(20).map((n) => [n, 'no'])), Object.fromEntries(autoSubmittedSpellings(20).map((n) => [n, 'no']))],
];

for (const [name, headers, stored] of acceptedHeaders) {
  t.test(`headers accepted: ${name}`, async (t) => {
    t.same(checkHeaders(headers), stored);
  });
}

const refusedHeaders: [name: string, headers: Record<string, string>, message: RegExp][] = [
  ['a standard header (Subject)', { Subject: 'x' }, /cannot be set/],
  ['a standard header (From)', { From: 'a@b.example' }, /cannot be set/],
  ['a trace header (Received)', { Received: 'from nowhere' }, /cannot be set/],
  ['In-Reply-To, which replies derive', { 'In-Reply-To': '<a@b>' }, /reserved for threading/],
  ['References in any case', { REFERENCES: '<a@b>' }, /reserved for threading/],
  ['a name with a space', { 'X Bad': 'v' }, /not a valid header name/],
  ['a name with a colon', { 'X-Bad:': 'v' }, /not a valid header name/],
  ['a name outside ASCII', { 'X-Grüße': 'v' }, /not a valid header name/],
  ['an empty name', { '': 'v' }, /not a valid header name/],
  ['a name of 101 bytes', { [`X-${'n'.repeat(99)}`]: 'v' }, /longer than 100 bytes/],
  ['a CRLF in the value (header injection)', { 'X-Evil': 'a\r\nBcc: victim@example.org' }, /line break/],
  ['a bare LF in the value', { 'X-Evil': 'a\nb' }, /line break/],
  ['a NUL in the value', { 'X-Evil': 'a\0b' }, /line break/],
  ['a value of 2049 bytes', { 'X-Long': 'v'.repeat(2049) }, /longer than 2048 bytes/],
  ['a value whose multi-byte characters pass 2048 bytes', { 'X-Long': 'é'.repeat(1025) }, /longer than 2048 bytes/],
  ['Auto-Submitted with another value', { 'Auto-Submitted': 'yes' }, /must be `no`, `auto-generated` or `auto-replied`/],
  ['21 headers other than X-', Object.fromEntries(autoSubmittedSpellings(21).map((n) => [n, 'no'])), /At most 20 headers/],
  ['more than 16 KiB in all', Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`X-Part-${i}`, 'v'.repeat(2048)])), /the limit is 16384/],
];

for (const [name, headers, message] of refusedHeaders) {
  t.test(`headers refused: ${name}`, async (t) => {
    t.throws(() => checkHeaders(headers), { code: 'validation_error', message, fix: /\S/ });
  });
}

// ---- subject ----

const subjects: [name: string, subject: string | null | undefined, result: string | null | RegExp][] = [
  ['absent', undefined, null],
  ['null', null, null],
  ['one line', 'Quarterly report', 'Quarterly report'],
  ['998 characters', 's'.repeat(998), 's'.repeat(998)],
  ['998 characters outside the BMP (counted as characters, not UTF-16 units)', '😀'.repeat(998), '😀'.repeat(998)],
  ['999 characters', 's'.repeat(999), /longer than 998 characters/],
  ['a CRLF', 'Hi\r\nBcc: victim@example.org', /line breaks or NUL/],
  ['a bare CR', 'Hi\rthere', /line breaks or NUL/],
  ['a NUL', 'Hi\0there', /line breaks or NUL/],
];

for (const [name, subject, result] of subjects) {
  t.test(`subject ${name}: ${result instanceof RegExp ? 'refused' : 'accepted'}`, async (t) => {
    if (result instanceof RegExp) t.throws(() => checkSubject(subject), { code: 'validation_error', message: result });
    else t.equal(checkSubject(subject), result);
  });
}

// ---- recipient fields ----

const recipientFields: [name: string, field: string | string[] | null | undefined, parsed: { address: string; display: string }[] | RegExp][] = [
  ['absent', undefined, []],
  ['a bare address, lower-cased', 'Ann@Example.ORG', [{ address: 'ann@example.org', display: 'ann@example.org' }]],
  ['a display name', 'Ann Lee <ann@example.org>', [{ address: 'ann@example.org', display: 'Ann Lee <ann@example.org>' }]],
  ['several in one string', 'a@x.example, b@x.example', [{ address: 'a@x.example', display: 'a@x.example' }, { address: 'b@x.example', display: 'b@x.example' }]],
  ['a list with an empty entry, which is skipped', ['a@x.example', '  '], [{ address: 'a@x.example', display: 'a@x.example' }]],
  ['a line break (header injection)', 'a@x.example\r\nBcc: victim@example.org', /line break/],
  ['a group', 'team: a@x.example, b@x.example;', /not an email address/],
  ['no domain', 'just-a-name', /not an email address/],
];

for (const [name, field, parsed] of recipientFields) {
  t.test(`recipients ${name}: ${parsed instanceof RegExp ? 'refused' : 'parsed'}`, async (t) => {
    if (parsed instanceof RegExp) t.throws(() => parseRecipients(field, 'to'), { code: 'validation_error', message: parsed });
    else t.same(parseRecipients(field, 'to'), parsed);
  });
}

t.test('a repeated address is dropped across to, cc and bcc: the first place it appears wins', async (t) => {
  const [to, cc, bcc] = dedupeRecipients(parseRecipients('a@x.example, A@X.example', 'to'), parseRecipients(['a@x.example', 'c@x.example'], 'cc'), parseRecipients('c@x.example, d@x.example', 'bcc'));
  t.same(
    [to, cc, bcc].map((list) => list.map((r) => r.address)),
    [['a@x.example'], ['c@x.example'], ['d@x.example']],
  );
});

const counts: [to: number, cc: number, bcc: number, refused: RegExp | null][] = [
  [0, 0, 0, /at least one recipient/],
  [1, 0, 0, null],
  [0, 0, 1, null],
  [50, 0, 0, null],
  [20, 20, 10, null],
  [20, 20, 11, /at most 50 recipients in total; this one has 51/],
];

for (const [to, cc, bcc, refused] of counts) {
  t.test(`${to} to + ${cc} cc + ${bcc} bcc: ${refused ? 'refused' : 'accepted'}`, async (t) => {
    const list = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ address: `${tag}${i}@x.example`, display: `${tag}${i}@x.example` }));
    if (refused) t.throws(() => checkRecipientCount(list(to, 't'), list(cc, 'c'), list(bcc, 'b')), { code: 'validation_error', message: refused });
    else t.doesNotThrow(() => checkRecipientCount(list(to, 't'), list(cc, 'c'), list(bcc, 'b')));
  });
}

// ---- the whole payload ----

const payloads: [name: string, body: ComposeInput, refused: { code: string; message: RegExp } | null][] = [
  ['text only', { to: 'a@x.example', text: 'hi' }, null],
  ['html only', { to: 'a@x.example', html: '<p>hi</p>' }, null],
  ['neither text nor html', { to: 'a@x.example', subject: 'empty' }, { code: 'validation_error', message: /needs `text` or `html`/ }],
  ['two reply-to addresses', { to: 'a@x.example', text: 'x', reply_to: ['r1@x.example', 'r2@x.example'] }, { code: 'validation_error', message: /at most one address/ }],
  ['open tracking asked for', { to: 'a@x.example', text: 'x', track_opens: true }, { code: 'not_supported', message: /Open tracking/ }],
  ['a reserved header', { to: 'a@x.example', text: 'x', headers: { References: '<a@b>' } }, { code: 'validation_error', message: /reserved for threading/ }],
];

for (const [name, body, refused] of payloads) {
  t.test(`payload with ${name}: ${refused ? refused.code : 'accepted'}`, async (t) => {
    const compose = () => checkComplete(composition(owner, body));
    if (refused) t.throws(compose, refused);
    else t.doesNotThrow(compose);
  });
}
