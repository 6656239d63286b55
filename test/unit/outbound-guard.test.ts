/**
 * The guarded send policy's detectors (src/mail/outbound-guard.ts): leaks and ordinary mail
 * (test/fixtures/outbound-guard-corpus.ts), one test per rule, details that never repeat the
 * secret, the `enabled` set, and hostile inputs that must stay within the bounds and take time
 * linear in their size.
 */
import t, { type Test } from 'tap';
import { performance } from 'node:perf_hooks';
import { GUARD_DETECTORS, inspectOutgoing, MAX_SCANNED_CHARS, type GuardDetector, type GuardFinding, type GuardSource } from '../../src/mail/outbound-guard.js';
import { CLEAN, HOME_SECRETS, LEAKS, seeded } from '../fixtures/outbound-guard-corpus.js';
import { assertLinear, cpuMs } from '../helpers/linear.js';

const ALL = new Set<GuardDetector>(GUARD_DETECTORS);
const EMPTY: GuardSource = { subject: null, text: null, html: null, attachments: [], homeSecrets: [] };
const KiB = 1024;

const inspect = (source: Partial<GuardSource>, enabled: ReadonlySet<GuardDetector> = ALL) => inspectOutgoing({ ...EMPTY, ...source }, enabled);
const detectorsOf = (source: Partial<GuardSource>, enabled?: ReadonlySet<GuardDetector>) => inspect(source, enabled).map((f) => f.detector);
const flags = (source: Partial<GuardSource>, detector: GuardDetector) => detectorsOf(source).includes(detector);
const detailOf = (source: Partial<GuardSource>, detector: GuardDetector) => inspect(source).find((f) => f.detector === detector)?.detail;

/** The findings' own invariants: known detectors, at most one each, in order, short details. */
function assertWellFormed(t: Test, findings: GuardFinding[], name: string): void {
  const detectors = findings.map((f) => f.detector);
  t.same(detectors, GUARD_DETECTORS.filter((d) => detectors.includes(d)), `${name}: at most one finding per detector, in GUARD_DETECTORS order`);
  for (const f of findings) {
    t.ok(f.detail.length > 0 && f.detail.length <= 160, `${name}: detail of ${f.detail.length} characters`);
    t.ok(f.detail.isWellFormed() && !/[\p{Cc}]/u.test(f.detail), `${name}: a well-formed detail without control characters`);
  }
}

/** The detail shows none of the secret, or at most its last 4 characters: no 5 of them in a row, in any spacing. */
function assertHides(t: Test, detail: string, secret: string, shows: 'last4' | 'nothing', name: string): void {
  const forms = [secret, secret.replace(/[\s-]/g, '')];
  t.ok(forms.every((f) => !detail.includes(f)), `${name}: the detail does not contain the secret`);
  const width = shows === 'last4' ? 5 : 4;
  const compact = forms[1];
  const leaked = Array.from({ length: Math.max(0, compact.length - width + 1) }, (_, k) => compact.slice(k, k + width)).filter((w) => detail.includes(w));
  t.same(leaked, [], `${name}: no ${width} characters of the secret in a row in ${JSON.stringify(detail)}`);
}

t.test('corpus: every leak is reported by its detector, and every ordinary mail is clean', async (t) => {
  t.ok(LEAKS.length >= 60, `${LEAKS.length} leaks`);
  t.ok(CLEAN.length >= 20, `${CLEAN.length} ordinary mails`);
  for (const d of GUARD_DETECTORS) t.ok(LEAKS.some((c) => c.detector === d), `leaks for ${d}`);
  for (const field of ['subject', 'text', 'html'] as const) t.ok(LEAKS.some((c) => c.source[field] !== null && c.source[field] !== ''), `leaks in the ${field}`);
  t.ok(LEAKS.some((c) => c.source.attachments.length > 0), 'leaks in attachments');

  let found = 0;
  for (const c of LEAKS) {
    const findings = inspectOutgoing(c.source, ALL);
    const finding = findings.find((f) => f.detector === c.detector);
    if (finding !== undefined) found++;
    else t.comment(`${c.name}: expected ${c.detector}, got ${JSON.stringify(findings)}`);
    t.ok(finding, `leak: ${c.name}`);
    assertWellFormed(t, findings, c.name);
    for (const f of findings) assertHides(t, f.detail, c.secret, f.detector === c.detector ? c.shows : 'last4', c.name);
  }
  let clean = 0;
  for (const c of CLEAN) {
    const findings = inspectOutgoing(c.source, ALL);
    if (findings.length === 0) clean++;
    else t.comment(`${c.name}: flagged ${JSON.stringify(findings)}`);
    t.same(findings, [], `clean: ${c.name}`);
  }
  t.comment(`true positives found ${found}/${LEAKS.length}`);
  t.comment(`clean cases passed ${clean}/${CLEAN.length}`);
});

// ---------------------------------------------------------------------------------------------
// Findings and details

t.test('findings: at most one per detector, the first by field then position, in GUARD_DETECTORS order', async (t) => {
  const source: Partial<GuardSource> = {
    subject: 'DNI 12345678Z',
    text: 'card 5555 5555 5555 4444 then 4242 4242 4242 4242; key ghp_' + seeded(36, 1) + ' and AKIAIOSFODNN7EXAMPLE',
    html: '<p>GB82 WEST 1234 5698 7654 32</p>',
    attachments: [{ filename: 'a.txt', text: '4242 4242 4242 4242' }],
    homeSecrets: HOME_SECRETS,
  };
  const findings = inspect({ ...source, text: `${source.text} ${HOME_SECRETS[0]}` });
  t.same(findings.map((f) => f.detector), ['credentials', 'card_numbers', 'iban', 'national_ids', 'home_secrets']);
  t.match(findings[0].detail, /GitHub personal access token .* in the text/, 'the first credential in the text');
  t.match(findings[1].detail, /Mastercard.*ending in 4444 in the text/, 'the first card in the text, not the later one nor the attachment');
  t.match(findings[2].detail, /in the HTML$/);
  t.match(findings[3].detail, /Spanish DNI number in the subject$/, 'the subject is read first');
});

t.test('details: where (subject, text, HTML, attachment "name") and what, never the secret', async (t) => {
  const card = '4242 4242 4242 4242';
  t.equal(detailOf({ text: `pay with ${card}` }, 'card_numbers'), 'a card number (Visa, Luhn-valid) ending in 4242 in the text');
  t.equal(detailOf({ subject: 'AKIAIOSFODNN7EXAMPLE' }, 'credentials'), 'an AWS access key ID (…MPLE) in the subject');
  t.equal(detailOf({ html: '<b>GB82 WEST 1234 5698 7654 32</b>' }, 'iban'), 'an IBAN (GB) ending in 5432 in the HTML');
  t.equal(detailOf({ attachments: [{ filename: 'keys.txt', text: 'SSN 219-09-9999' }] }, 'national_ids'), 'a US Social Security number in attachment "keys.txt"');
  t.equal(detailOf({ attachments: [{ filename: null, text: card }, { filename: '', text: card }] }, 'card_numbers'), 'a card number (Visa, Luhn-valid) ending in 4242 in attachment #1');
  t.equal(detailOf({ text: `x ${HOME_SECRETS[0]} y`, homeSecrets: HOME_SECRETS }, 'home_secrets'), 'a secret of this svc home (an API key or token) in the text');
  t.equal(detailOf({ text: 'DB_PASSWORD=Tr0ub4dor9x!' }, 'credentials'), 'a password assigned to "DB_PASSWORD" in the text');

  // A file named after a key does not carry the key into the detail.
  const named = detailOf({ attachments: [{ filename: 'AKIAIOSFODNN7EXAMPLE-and-more.txt', text: card }] }, 'card_numbers') ?? '';
  t.notOk(named.includes('AKIAIOSFODNN7EXAMPLE'), `masked file name: ${named}`);
  const long = detailOf({ attachments: [{ filename: `${'quarterly report '.repeat(10)}\u0000\u202e.txt`, text: card }] }, 'card_numbers') ?? '';
  t.ok(long.length <= 160 && !/[\p{Cc}]/u.test(long), `a long, odd file name is cut and cleaned: ${long}`);
});

t.test('enabled: a detector not in the set never reports', async (t) => {
  const everything: Partial<GuardSource> = {
    text: `AKIAIOSFODNN7EXAMPLE\n-----BEGIN PRIVATE KEY-----\n${seeded(64, 5, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/')}\n-----END PRIVATE KEY-----\n4242 4242 4242 4242\nGB82 WEST 1234 5698 7654 32\nSSN 219-09-9999\n${HOME_SECRETS[0]}`,
    homeSecrets: HOME_SECRETS,
  };
  t.same(detectorsOf(everything), [...GUARD_DETECTORS], 'all six when all are enabled');
  for (const d of GUARD_DETECTORS) {
    t.same(detectorsOf(everything, new Set([d])), [d], `only ${d}`);
    t.same(detectorsOf(everything, new Set(GUARD_DETECTORS.filter((x) => x !== d))), GUARD_DETECTORS.filter((x) => x !== d), `all but ${d}`);
  }
  t.same(detectorsOf(everything, new Set()), [], 'none enabled, none reported');
});

// ---------------------------------------------------------------------------------------------
// credentials

t.test('credentials: a token shape counts only as a whole token of the exact length', async (t) => {
  const gh = `ghp_${seeded(36, 9)}`;
  t.ok(flags({ text: gh }, 'credentials'), 'exact');
  t.notOk(flags({ text: `${gh}X` }, 'credentials'), 'one character longer');
  t.notOk(flags({ text: gh.slice(0, -1) }, 'credentials'), 'one character shorter');
  t.notOk(flags({ text: `x${gh}` }, 'credentials'), 'inside a longer word');
  t.notOk(flags({ text: 'AKIAIOSFODNN7EXAMPLEs' }, 'credentials'), 'AWS key ID followed by a letter');
  t.notOk(flags({ text: 'AKIAiosfodnn7example' }, 'credentials'), 'AWS key ID in lower case');
  t.notOk(flags({ text: `AIza${seeded(34, 9)}` }, 'credentials'), 'Google key one short');
  t.notOk(flags({ text: 'sk-learn sk-1234 sk-' + 'a'.repeat(30) }, 'credentials'), 'sk- words that are not keys');
  t.notOk(flags({ text: `svc_key_${seeded(4, 9)} is the prefix shown in the list` }, 'credentials'), 'the display prefix of an API key');
  t.notOk(flags({ text: `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.short` }, 'credentials'), 'a JWT without a signature');
  t.notOk(flags({ text: `eyJmb28iOiJiYXIifQ.eyJzdWIiOiIxIn0.${seeded(43, 9)}` }, 'credentials'), 'a JWT-like string whose header has no "alg"');
});

t.test('credentials: placeholders of a token shape are not flagged', async (t) => {
  for (const text of ['AKIAXXXXXXXXXXXXXXXX', `ghp_${'x'.repeat(36)}`, `sk_live_${'0'.repeat(24)}`, `sk-${'abc'.repeat(10)}1`, 'https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX']) {
    t.notOk(flags({ text }, 'credentials'), text);
  }
});

t.test('credentials: Stripe test keys are secrets too, reported as test keys; publishable keys are not', async (t) => {
  t.match(detailOf({ text: `sk_test_${seeded(24, 3)}` }, 'credentials'), /^a Stripe test secret key/);
  t.match(detailOf({ text: `rk_test_${seeded(24, 3)}` }, 'credentials'), /^a Stripe test restricted key/);
  t.match(detailOf({ text: `sk_live_${seeded(24, 3)}` }, 'credentials'), /^a Stripe live secret key/);
  t.notOk(flags({ text: `pk_test_${seeded(24, 3)} pk_live_${seeded(24, 4)}` }, 'credentials'), 'publishable keys');
});

t.test('credentials: an AWS key ID in a pre-signed URL is not flagged, elsewhere it is', async (t) => {
  t.notOk(flags({ text: 'https://b.s3.amazonaws.com/f?X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20240115' }, 'credentials'), 'X-Amz-Credential=');
  t.notOk(flags({ text: 'https://b.s3.amazonaws.com/f?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1' }, 'credentials'), 'AWSAccessKeyId=');
  t.ok(flags({ text: 'https://b.example/f?key=AKIAIOSFODNN7EXAMPLE' }, 'credentials'), 'another parameter');
});

t.test('credentials: assignments of a non-trivial value count; prose, placeholders and code do not', async (t) => {
  const secret: [string, string][] = [
    ['password=Summer2024!', 'password='],
    ['PGPASSWORD=s3cr3tvalue', 'a key ending in password'],
    ['spring.datasource.password=Hx72kLmQ', 'a dotted key'],
    ['"passwd": "correct horse battery"', 'a quoted value with spaces'],
    ["secret = 'q8Zr2LmP0aXc'", 'secret ='],
    ['api_key: 7c9e6679f4254e8b', 'api_key:'],
    ['apiKey => "a8f5f167f44f4964e6c998dee827110c"', 'apiKey =>'],
    ['token := "d41d8cd98f00b204"', 'token :='],
    ['<li>Password: Xk9#mPq2vL</li>', 'a label in HTML'],
    ['https://api.example.com/v1?api_key=9d4e1e23bd5b7273', 'api_key in a URL'],
    ['DB_PASSWORD=correcthorse', 'letters only, after ='],
    ['Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l', 'basic auth'],
    ['<tr><td>Password:</td><td>Xk9#mPq2vL</td></tr>', 'a label and its value in table cells'],
    ['<p>Password:&nbsp;<b>Xk9#mPq2vL</b></p>', 'after &nbsp; and a tag'],
  ];
  for (const [text, name] of secret) t.ok(flags({ text }, 'credentials'), `flagged: ${name}`);
  const clean: [string, string][] = [
    ['Please reset your password.', 'prose'],
    ['The password policy requires 12 characters.', 'prose about a policy'],
    ['Password: at least 12 characters', 'a label with a short value'],
    ['Password: same-as-before', 'a phrase after a label'],
    ['Token: expired', 'a word after a label'],
    ['password: ********', 'masked'],
    ['password: ••••••••••', 'masked with bullets'],
    ['api_key=YOUR_API_KEY', 'your'],
    ['password=<password>', 'angle brackets'],
    ['password=your_password', 'your_password'],
    ['password=xxx', 'xxx'],
    ['password: xxxxxxxxxx', 'x run'],
    ['token=${GITHUB_TOKEN}', 'a template'],
    ['token: {{ secrets.TOKEN }}', 'a template in braces'],
    ['api_key: %API_KEY%', 'a Windows variable'],
    ['password = os.environ["DB_PASSWORD"]', 'read from the environment'],
    ['token = get_token()', 'a call'],
    ['api_key = settings.api_key', 'a dotted name'],
    ['if password == "hunter2hunter2":', 'a comparison'],
    ['https://example.com/reset?token=abc123def456ghi789', 'a reset link'],
    ['https://example.com/u?secret=a1b2c3d4e5f6', 'an unsubscribe link'],
    ['"next_page_token": "AbC123dEf456"', 'a page token'],
    ['"max_tokens": 4096', 'a token count'],
    ['"csrf_token": "a1b2c3d4e5f6g7h8"', 'an anti-forgery token'],
    ['password: changeme', 'changeme'],
    ['password: undefined', 'a type name'],
    ['secret: https://vault.example.com/v1/kv/app', 'a link to a vault'],
    ['password: 2024-01-15', 'a date'],
    ['Authorization: Bearer <token>', 'a bearer placeholder'],
    ['<p>Password:</p><p>Choose a strong one.</p>', 'prose after a label in HTML'],
  ];
  for (const [text, name] of clean) t.notOk(flags({ text }, 'credentials'), `clean: ${name} (${text})`);
});

// ---------------------------------------------------------------------------------------------
// private_keys

t.test('private_keys: every private key header with key material counts; public keys and certificates do not', async (t) => {
  const body = `${seeded(64, 7, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/')}\n`;
  for (const label of ['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY', 'DSA PRIVATE KEY', 'OPENSSH PRIVATE KEY', 'ENCRYPTED PRIVATE KEY', 'PGP PRIVATE KEY BLOCK']) {
    t.ok(flags({ text: `-----BEGIN ${label}-----\n${body}-----END ${label}-----` }, 'private_keys'), label);
  }
  for (const label of ['PUBLIC KEY', 'RSA PUBLIC KEY', 'CERTIFICATE', 'PGP PUBLIC KEY BLOCK', 'PGP SIGNATURE', 'CERTIFICATE REQUEST', 'OPENSSH PUBLIC KEY']) {
    t.notOk(flags({ text: `-----BEGIN ${label}-----\n${body}-----END ${label}-----` }, 'private_keys'), label);
  }
  t.notOk(flags({ text: '-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----' }, 'private_keys'), 'a header without key material');
  t.notOk(flags({ text: '-----BEGIN PRIVATE KEY-----' }, 'private_keys'), 'a header alone at the end');
  t.notOk(flags({ text: `-----BEGIN PRIVATE KEY----\n${body}` }, 'private_keys'), 'a malformed header');
});

// ---------------------------------------------------------------------------------------------
// card_numbers

t.test('card_numbers: brand, length and Luhn must all hold', async (t) => {
  const cards: [string, string][] = [
    ['4242424242424242', 'Visa'],
    ['4222222222222', 'Visa'],
    ['5105105105105100', 'Mastercard'],
    ['2223003122003222', 'Mastercard'],
    ['371449635398431', 'American Express'],
    ['6011000990139424', 'Discover'],
    ['6500000000000002', 'Discover'],
    ['3566002020360505', 'JCB'],
    ['36227206271667', 'Diners Club'],
    ['6200000000000005', 'UnionPay'],
  ];
  for (const [number, brand] of cards) t.match(detailOf({ text: `card ${number} ok` }, 'card_numbers'), new RegExp(`\\(${brand}, Luhn-valid\\) ending in ${number.slice(-4)}`), `${brand} ${number}`);
  t.notOk(flags({ text: 'card 4242424242424241' }, 'card_numbers'), 'Luhn-invalid');
  t.notOk(flags({ text: 'card 1234567812345670' }, 'card_numbers'), 'Luhn-valid without an issuer prefix');
  t.notOk(flags({ text: 'card 42424242424242' }, 'card_numbers'), 'Visa of a length Visa does not issue (14)');
  t.notOk(flags({ text: 'card 0000 0000 0000 0000' }, 'card_numbers'), 'zeros');
  t.notOk(flags({ text: 'card 4444 4444 4444 4444' }, 'card_numbers'), 'one repeated digit');
});

t.test('card_numbers: grouped by one space or dash, the whole digit run, standing alone', async (t) => {
  t.ok(flags({ text: '4242-4242-4242-4242' }, 'card_numbers'), 'dashes');
  t.ok(flags({ text: '3782 822463 10005' }, 'card_numbers'), '4-6-5');
  t.ok(flags({ text: 'Card 4242 4242 4242 4242 12/28' }, 'card_numbers'), 'an expiry after it');
  t.ok(flags({ text: '"4242424242424242"' }, 'card_numbers'), 'quoted');
  t.ok(flags({ text: 'Card:4242424242424242' }, 'card_numbers'), 'right after a colon');
  t.notOk(flags({ text: 'http://host.example:4242424242424242/x' }, 'card_numbers'), 'a port-like number in a URL');
  t.notOk(flags({ text: '4242  4242  4242  4242' }, 'card_numbers'), 'double spaces');
  t.notOk(flags({ text: '4242 4242-4242 4242' }, 'card_numbers'), 'mixed separators');
  t.notOk(flags({ text: '14242424242424242' }, 'card_numbers'), 'part of a longer run (17 digits, not Luhn)');
  t.notOk(flags({ text: '42424242424242424242' }, 'card_numbers'), 'part of a longer run (20 digits)');
  t.notOk(flags({ text: '4242 4242 4242 4242 4242' }, 'card_numbers'), 'part of a longer grouped run');
  t.notOk(flags({ text: '4242 4242424242424242' }, 'card_numbers'), 'a group of more than 6 digits');
  t.notOk(flags({ text: 'https://x.example/4242424242424242' }, 'card_numbers'), 'in a URL path');
  t.notOk(flags({ text: 'https://x.example/a?b=c&d=e 9 https://x.example/p,4242424242424242' }, 'card_numbers'), 'after a comma in a URL');
  t.notOk(flags({ text: '4242424242424242@example.com' }, 'card_numbers'), 'an email local part');
  t.notOk(flags({ text: 'id4242424242424242' }, 'card_numbers'), 'in a word');
  t.notOk(flags({ text: '4242424242424242.50' }, 'card_numbers'), 'a decimal');
  t.notOk(flags({ text: '#4242424242424242' }, 'card_numbers'), 'a reference');
  t.notOk(flags({ html: '<div data-order="4242424242424242">' }, 'card_numbers'), 'an attribute value');
});

// ---------------------------------------------------------------------------------------------
// iban

t.test('iban: the country length and the mod-97 check must hold', async (t) => {
  t.ok(flags({ text: 'GB82WEST12345698765432' }, 'iban'), 'compact');
  t.ok(flags({ text: 'GB82 WEST 1234 5698 7654 32' }, 'iban'), 'grouped');
  t.notOk(flags({ text: 'GB82 WEST 1234 5698 7654 33' }, 'iban'), 'wrong check');
  t.notOk(flags({ text: 'GB82WEST123456987654321' }, 'iban'), 'one longer than GB allows');
  t.notOk(flags({ text: 'GB82WEST1234569876543' }, 'iban'), 'one shorter than GB allows');
  t.notOk(flags({ text: 'GB82 WEST 12345 698 7654 32' }, 'iban'), 'groups not of 4');
  t.notOk(flags({ text: 'xGB82WEST12345698765432' }, 'iban'), 'inside a word');
  t.notOk(flags({ text: 'gb82west12345698765432' }, 'iban'), 'lower case');
  t.notOk(flags({ text: 'AB12 3456 7890' }, 'iban'), 'too short for any country');
  t.match(detailOf({ text: 'DE89 3704 0044 0532 0130 00' }, 'iban'), /^an IBAN \(DE\) ending in 3000/);
});

// ---------------------------------------------------------------------------------------------
// national_ids

t.test('national_ids: US SSN dashed anywhere, undashed only next to its name, valid numbers only', async (t) => {
  t.ok(flags({ text: '219-09-9999' }, 'national_ids'), 'dashed');
  t.ok(flags({ text: 'my ssn is 219099999' }, 'national_ids'), 'undashed next to "ssn"');
  t.notOk(flags({ text: 'ref 219099999' }, 'national_ids'), 'undashed alone');
  for (const bad of ['000-12-3456', '666-12-3456', '900-12-3456', '219-00-1234', '219-09-0000']) t.notOk(flags({ text: `SSN ${bad}` }, 'national_ids'), `invalid ${bad}`);
  for (const other of ['415-555-2671', '2024-01-15', '1-219-09-9999', '219-09-99999', '219-09-9999-1', 'Order #219-09-9999', '12-34-5678']) {
    t.notOk(flags({ text: other }, 'national_ids'), `not an SSN: ${other}`);
  }
});

t.test('national_ids: UK NINO next to "NI" or "national insurance", with a valid prefix', async (t) => {
  t.ok(flags({ text: 'NINO: AB123456C' }, 'national_ids'), 'NINO');
  t.ok(flags({ text: 'AB 12 34 56 D (national insurance)' }, 'national_ids'), 'spaced, words after');
  t.notOk(flags({ text: 'code AB123456C' }, 'national_ids'), 'no words');
  t.notOk(flags({ text: 'ni number AB123456C' }, 'national_ids'), '"ni" in lower case is not "NI"');
  for (const bad of ['QQ123456C', 'DA123456C', 'AO123456C', 'GB123456C', 'AB123456E']) t.notOk(flags({ text: `NI ${bad}` }, 'national_ids'), `invalid ${bad}`);
});

t.test('national_ids: German tax ID only next to its name, with a valid check digit', async (t) => {
  t.ok(flags({ text: 'Steuer-ID 86095742719' }, 'national_ids'), 'Steuer-ID');
  t.ok(flags({ text: 'Steuerliche Identifikationsnummer: 86095742719' }, 'national_ids'), 'Identifikationsnummer');
  t.notOk(flags({ text: 'Kundennummer 86095742719' }, 'national_ids'), 'another number');
  t.notOk(flags({ text: 'Steuer-ID 86095742718' }, 'national_ids'), 'wrong check digit');
  t.notOk(flags({ text: 'Steuer-ID 06095742719' }, 'national_ids'), 'leading zero');
  t.notOk(flags({ text: 'Steuer-ID 11111111116' }, 'national_ids'), 'a digit repeated too often');
});

t.test('national_ids: Spanish DNI and NIE with a valid check letter', async (t) => {
  t.ok(flags({ text: '12345678Z' }, 'national_ids'), 'DNI');
  t.ok(flags({ text: '12345678 Z' }, 'national_ids'), 'DNI with a space');
  t.ok(flags({ text: 'Z1234567R' }, 'national_ids'), 'NIE Z');
  t.notOk(flags({ text: '12345678A' }, 'national_ids'), 'DNI with the wrong letter');
  t.notOk(flags({ text: 'X1234567A' }, 'national_ids'), 'NIE with the wrong letter');
  t.notOk(flags({ text: '12345678Zb' }, 'national_ids'), 'in a word');
  t.notOk(flags({ text: '112345678Z' }, 'national_ids'), 'nine digits');
  t.notOk(flags({ text: '20240115T103000Z' }, 'national_ids'), 'a timestamp');
});

// ---------------------------------------------------------------------------------------------
// home_secrets

t.test('home_secrets: a secret verbatim (case-sensitive) in any field; short ones are not looked for', async (t) => {
  const secret = HOME_SECRETS[0];
  for (const field of ['subject', 'text', 'html'] as const) t.ok(flags({ [field]: `a${secret}b`, homeSecrets: HOME_SECRETS }, 'home_secrets'), field);
  t.ok(flags({ attachments: [{ filename: 'x', text: 'no' }, { filename: 'y', text: secret }], homeSecrets: HOME_SECRETS }, 'home_secrets'), 'the second attachment');
  t.notOk(flags({ text: secret.toUpperCase(), homeSecrets: HOME_SECRETS }, 'home_secrets'), 'another case');
  t.notOk(flags({ text: secret.slice(0, -1), homeSecrets: HOME_SECRETS }, 'home_secrets'), 'all but its last character');
  t.notOk(flags({ text: 'the word password appears', homeSecrets: ['password', 'appears'] }, 'home_secrets'), 'secrets under 16 characters are ignored');
  t.ok(flags({ text: 'xxabcabcabcabcabcabd', homeSecrets: ['abcabcabcabcabcabd', 'bcabcabcabcabcabx1'] }, 'home_secrets'), 'a secret found after a partial match of another');
  t.notOk(flags({ text: secret }, 'home_secrets'), 'no secrets given');
});

t.test('home_secrets: the first 1,000 of 10,000 secrets are considered, quickly', async (t) => {
  const secrets = Array.from({ length: 10_000 }, (_, i) => `svc_key_${seeded(43, 10_000 + i, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_')}`);
  const text = `${'lorem ipsum '.repeat(20_000)}${secrets[999]}`;
  const start = cpuMs();
  const found = flags({ text, homeSecrets: secrets }, 'home_secrets');
  const ms = cpuMs() - start;
  t.ok(found, 'the 1,000th secret is found');
  t.ok(ms < 1_000, `${ms.toFixed(1)} ms`);
  t.notOk(inspect({ text: secrets[1000], homeSecrets: secrets }, new Set(['home_secrets'])).length, 'the 1,001st is not considered');
  // Secrets that share a long start: the automaton stays linear where indexOf per secret would not.
  const shared = Array.from({ length: 1_000 }, (_, i) => `${'a'.repeat(200)}${i}`);
  const start2 = cpuMs();
  t.notOk(flags({ text: 'a'.repeat(256 * KiB), homeSecrets: shared }, 'home_secrets'), 'no secret in a run of their common start');
  t.ok(cpuMs() - start2 < 2_000, 'secrets sharing 200 characters, 256 KiB of that character');
});

// ---------------------------------------------------------------------------------------------
// Bounds and hostile input

t.test('bounds: each field is read to MAX_SCANNED_CHARS, and 32 attachments', async (t) => {
  t.equal(MAX_SCANNED_CHARS, 512 * KiB);
  const padding = ' '.repeat(MAX_SCANNED_CHARS);
  t.same(detectorsOf({ text: `${padding}4242 4242 4242 4242` }), [], 'a card past the bound is not read');
  t.same(detectorsOf({ text: `${padding.slice(20)}4242 4242 4242 4242` }), ['card_numbers'], 'a card just inside it is');
  const card = { filename: 'c.txt', text: '4242 4242 4242 4242' };
  const blank = { filename: 'b.txt', text: 'nothing here' };
  t.same(detectorsOf({ attachments: [...Array(31).fill(blank), card] }), ['card_numbers'], 'the 32nd attachment is read');
  t.same(detectorsOf({ attachments: [...Array(32).fill(blank), card] }), [], 'the 33rd is not');
});

const HOSTILE: { name: string; build: (size: number) => Partial<GuardSource> }[] = [
  { name: 'digits', build: (size) => ({ text: '4'.repeat(size), html: '42'.repeat(size / 2) }) },
  { name: 'alternating digit and space', build: (size) => ({ text: '4 '.repeat(size / 2), html: '4-'.repeat(size / 2) }) },
  { name: '4-digit groups', build: (size) => ({ text: '4242 '.repeat(size / 5), html: '4242-'.repeat(size / 5) }) },
  { name: '-----BEGIN ', build: (size) => ({ text: '-----BEGIN '.repeat(size / 11), html: '-----BEGIN PRIVATE KEY-----'.repeat(size / 27) }) },
  { name: 'AKIA', build: (size) => ({ text: 'AKIA'.repeat(size / 4), html: 'AKIA '.repeat(size / 5) }) },
  { name: 'eyJ segments', build: (size) => ({ text: 'eyJ.'.repeat(size / 4), html: `eyJ${'a'.repeat(size)}` }) },
  { name: 'separators and keys', build: (size) => ({ text: ':='.repeat(size / 2), html: `${'a'.repeat(63)}=`.repeat(size / 64) }) },
  { name: 'password assignments without a value', build: (size) => ({ text: 'password=\n'.repeat(size / 10), html: `password=${'a'.repeat(300)} `.repeat(size / 310) }) },
  { name: 'IBAN starts', build: (size) => ({ text: 'AB12 '.repeat(size / 5), html: 'GB82 WEST '.repeat(size / 10) }) },
  { name: 'ID shapes', build: (size) => ({ text: '000-00-0000 '.repeat(size / 12), html: 'AB123456C '.repeat(size / 10) }) },
  { name: 'Slack webhook prefixes', build: (size) => ({ text: 'hooks.slack.com/services/'.repeat(size / 25) }) },
  { name: 'home secrets sharing a start', build: (size) => ({ text: 'a'.repeat(size), homeSecrets: Array.from({ length: 50 }, (_, i) => `${'a'.repeat(100)}${i}b`) }) },
];

t.test('hostile input: bounded output, and time at most linear in the size', async (t) => {
  assertLinear(t, HOSTILE.map(({ name, build }) => ({ name, build: (size: number) => ({ ...EMPTY, ...build(size) }) })), (s) => inspectOutgoing(s, ALL), (result, label) => assertWellFormed(t, result, label));
});

// Speed is the linearity test's business above (a ratio, not a clock); this one checks what a
// megabyte of each kind yields, and prints how long it took.
t.test('hostile input: a megabyte of each kind is read within MAX_SCANNED_CHARS and found clean', async (t) => {
  const MiB = 1024 * KiB;
  const inputs: [string, Partial<GuardSource>][] = [
    ['1 MiB of digits', { subject: '4'.repeat(MiB), text: '1234'.repeat(MiB / 4), html: '9'.repeat(MiB) }],
    ['1 MiB of -----BEGIN ', { text: '-----BEGIN '.repeat(MiB / 11), html: '-----BEGIN RSA PRIVATE KEY-----\n'.repeat(MiB / 32) }],
    ['1 MiB of AKIA', { text: 'AKIA'.repeat(MiB / 4), html: 'AKIA-'.repeat(MiB / 5) }],
    ['1 MiB of alternating digits and spaces', { text: '1 '.repeat(MiB / 2), html: '12 '.repeat(MiB / 3) }],
    ['32 attachments of 1 MiB', { attachments: Array.from({ length: 40 }, (_, i) => ({ filename: `f${i}.txt`, text: `${i % 2 === 0 ? '4 ' : 'sk-'}`.repeat(MiB / 3) })) }],
  ];
  for (const [name, source] of inputs) {
    const start = cpuMs();
    const findings = inspect(source);
    const ms = cpuMs() - start;
    assertWellFormed(t, findings, name);
    t.same(findings, [], `${name}: clean`);
    t.comment(`${name}: ${ms.toFixed(1)} ms`);
  }
});

t.test('never throws, whatever the input; a check that cannot read the message holds it', async (t) => {
  const odd: unknown[] = [
    {}, { subject: 5, text: {}, html: [], attachments: 'x', homeSecrets: 'y' }, { attachments: [null, 5, { filename: 5, text: 7 }, { text: '\ud800 4242 4242 4242 4242' }] },
    { text: '\u0000'.repeat(100), html: '<a href="', subject: '\udfff' }, { homeSecrets: [null, 5, {}, 'x'.repeat(100_000)] }, { text: '-----BEGIN ', html: 'eyJ.', subject: 'password=' },
    { text: 'hooks.slack.com/services/', html: 'aws_secret_access_key=' }, { text: 'Authorization: Bearer' }, { text: '4242 4242 4242 4242 ' }, { text: 'GB82' }, { text: 'X1234567' },
  ];
  for (const value of odd) {
    const findings = inspectOutgoing({ ...EMPTY, ...(value as object) } as GuardSource, ALL);
    assertWellFormed(t, findings, JSON.stringify(value).slice(0, 60));
  }
  t.same(inspectOutgoing(null as unknown as GuardSource, ALL), [], 'no source: nothing to find');
  t.same(inspectOutgoing({ ...EMPTY, text: 'AKIAIOSFODNN7EXAMPLE' }, null as unknown as Set<GuardDetector>).map((f) => f.detector), ['credentials'], 'no enabled set: every detector runs');
  const hostile = {
    ...EMPTY,
    get text(): string {
      throw new Error('boom');
    },
  };
  const held = inspectOutgoing(hostile, new Set(['credentials', 'iban']));
  t.same(held.map((f) => f.detector), ['credentials', 'iban'], 'an unreadable message is held by each enabled detector');
  t.match(held[0].detail, /held for review/);
});
