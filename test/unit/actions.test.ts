/**
 * One-time codes and action links (src/mail/actions.ts): precision and recall over a corpus of
 * realistic messages (test/fixtures/actions-corpus.ts), one test per extraction rule, and hostile
 * bodies that must stay within the bounds and take time linear in their size.
 */
import t, { type Test } from 'tap';
import { performance } from 'node:perf_hooks';
import { extractActions, MAX_CODES, MAX_LINKS, MAX_SCANNED_CHARS, type ActionSource, type ExtractedActions } from '../../src/mail/actions.js';
import { CORPUS, SIGN_IN_CASES } from '../fixtures/actions-corpus.js';
import { assertLinear, cpuMs } from '../helpers/linear.js';

const EMPTY: ActionSource = { subject: null, text: null, html: null, listUnsubscribe: null };
const ACTION_KINDS = new Set(['verification', 'magic_link', 'password_reset', 'unsubscribe']);

const codesOf = (source: Partial<ActionSource>) => extractActions({ ...EMPTY, ...source }).codes.map((c) => c.value);
const linksOf = (source: Partial<ActionSource>) => extractActions({ ...EMPTY, ...source }).links;

interface Tally {
  truePositives: number;
  falsePositives: number;
  falseNegatives: number;
}

const precision = (s: Tally) => (s.truePositives + s.falsePositives === 0 ? 1 : s.truePositives / (s.truePositives + s.falsePositives));
const recall = (s: Tally) => (s.truePositives + s.falseNegatives === 0 ? 1 : s.truePositives / (s.truePositives + s.falseNegatives));

t.test('corpus: codes and action links are found with precision and recall of at least 0.9', async (t) => {
  t.ok(CORPUS.length >= 25, `${CORPUS.length} messages`);
  const codes: Tally = { truePositives: 0, falsePositives: 0, falseNegatives: 0 };
  const links: Tally = { truePositives: 0, falsePositives: 0, falseNegatives: 0 };
  for (const c of CORPUS) {
    const found = extractActions(c.source);
    const values = found.codes.map((code) => code.value);
    const wrongCodes = values.filter((v) => !c.codes.includes(v));
    const missedCodes = c.codes.filter((v) => !values.includes(v));
    codes.truePositives += values.length - wrongCodes.length;
    codes.falsePositives += wrongCodes.length;
    codes.falseNegatives += missedCodes.length;

    const actions = found.links.filter((l) => ACTION_KINDS.has(l.kind));
    const wrongLinks = actions.filter((l) => !c.links.some((e) => e.url === l.url && e.kind === l.kind));
    const missedLinks = c.links.filter((e) => ACTION_KINDS.has(e.kind) && !found.links.some((l) => l.url === e.url && l.kind === e.kind));
    links.truePositives += actions.length - wrongLinks.length;
    links.falsePositives += wrongLinks.length;
    links.falseNegatives += missedLinks.length;

    if (wrongCodes.length + missedCodes.length + wrongLinks.length + missedLinks.length > 0) {
      t.comment(`${c.name}: codes wrong ${JSON.stringify(wrongCodes)} missed ${JSON.stringify(missedCodes)}; links wrong ${JSON.stringify(wrongLinks)} missed ${JSON.stringify(missedLinks)}`);
    }
  }
  const codeLine = `codes: precision ${precision(codes).toFixed(2)} recall ${recall(codes).toFixed(2)} (n=${codes.truePositives + codes.falseNegatives} expected, ${codes.truePositives + codes.falsePositives} found, ${CORPUS.length} messages)`;
  const linkLine = `action links: precision ${precision(links).toFixed(2)} recall ${recall(links).toFixed(2)} (n=${links.truePositives + links.falseNegatives} expected, ${links.truePositives + links.falsePositives} found)`;
  t.comment(codeLine);
  t.comment(linkLine);
  t.ok(precision(codes) >= 0.9, codeLine);
  t.ok(recall(codes) >= 0.9, codeLine);
  t.ok(precision(links) >= 0.9, linkLine);
  t.ok(recall(links) >= 0.9, linkLine);
});

t.test('sign-in mails and their neighbours: each link exactly its kind, the negatives other (issue 35 §7)', async (t) => {
  t.ok(SIGN_IN_CASES.length >= 12, `${SIGN_IN_CASES.length} cases`);
  for (const c of SIGN_IN_CASES) {
    const found = extractActions(c.source).links;
    const actions = found.filter((l) => ACTION_KINDS.has(l.kind)).map(({ url, kind }) => ({ url, kind }));
    t.same(actions, c.links, `${c.name}: the action links, in order`);
    for (const url of c.others ?? []) t.equal(found.find((l) => l.url === url)?.kind, 'other', `${c.name}: ${url} is other`);
  }
});

t.test('corpus: every code comes with the words around it', async (t) => {
  for (const c of CORPUS) {
    for (const code of extractActions(c.source).codes) {
      t.ok(code.context.includes(code.value) && code.context.length <= 120 && code.context === code.context.trim(), `${c.name}: ${JSON.stringify(code)}`);
    }
  }
});

t.test('codes: digits as printed, split by one space or dash, letter prefixes, or upper-case letters with two digits', async (t) => {
  t.same(codesOf({ text: 'Your verification code is 482913.' }), ['482913']);
  t.same(codesOf({ text: 'Your verification code is 482 913.' }), ['482 913']);
  t.same(codesOf({ text: 'Your verification code is 482-913.' }), ['482-913']);
  t.same(codesOf({ text: 'G-483920 is your verification code.' }), ['G-483920']);
  t.same(codesOf({ text: 'Your one-time code: A7K9Q2' }), ['A7K9Q2']);
  t.same(codesOf({ text: 'Your code is 1234' }), ['1234'], 'four digits');
  t.same(codesOf({ text: 'Your code is 12345678' }), ['12345678'], 'eight digits');
  t.same(codesOf({ text: 'Your code is 123456789' }), [], 'nine digits are not a code');
  t.same(codesOf({ text: 'Your code is a7k9q2' }), [], 'lower-case letters are not a code');
  t.same(codesOf({ text: 'Your code is ABCDE1' }), [], 'one digit is not enough');
  t.same(codesOf({ subject: '123456 is your Example code', text: 'Enter the code from the subject.' }), ['123456'], 'a code in the subject');
  t.same(codesOf({ subject: 'Your code', text: 'Your code is 482913', html: '<p>Your code is <b>482&nbsp;913</b></p>' }), ['482913'], 'one code seen twice is returned once');
  t.same(codesOf({ text: 'Ihr Bestätigungscode lautet: 739204' }), ['739204'], 'German');
  t.same(codesOf({ text: 'Tu código de verificación es 551873' }), ['551873'], 'Spanish');
  t.same(codesOf({ text: '您的验证码是 304958，5分钟内有效。' }), ['304958'], 'Chinese');
});

t.test('codes: a number needs code words near it; order, invoice, phone, address and amount words count against it', async (t) => {
  t.same(codesOf({ text: 'Your order 482913 has shipped.' }), []);
  t.same(codesOf({ text: 'Invoice 482913 is attached.' }), []);
  t.same(codesOf({ text: 'Here are the numbers: 482913 and 551873.' }), [], 'no code words');
  t.same(codesOf({ text: 'Zip code 94107' }), [], '"code" in "zip code"');
  t.same(codesOf({ text: 'Use promo code SAVE20 for 20% off' }), [], 'a promo code');
  t.same(codesOf({ text: 'Reference code: 48213' }), []);
  t.same(codesOf({ subject: 'Your verification code', text: 'Example Inc, San Francisco, CA 94107' }), [], 'the subject alone does not make an address number a code');
  t.same(codesOf({ text: 'Your verification code:\n\n482913\n' }), ['482913'], 'code words on the line before a code alone on its line');
});

t.test('codes: years, times, dates, amounts, phone numbers, longer numbers, URLs and email addresses are not codes', async (t) => {
  const text = [
    'Your verification code is below. © 2024 Example. Since 1996-2025.',
    'Code valid until 12:30 on 2025-03-05 and 05/03/2025.',
    'Code fee: $1234 or 1234.56 or 1,234 or 45%.',
    'Code questions? Call (555) 123-4567 or +1 555 0100.',
    'Code 123456789012 is too long; 4829-1374-2231 has three groups.',
    'Verify at https://example.com/verify?code=482913 or mail code-551873@example.com.',
  ].join('\n');
  t.same(codesOf({ text }), []);
  t.same(codesOf({ text: 'Your code is 2024' }), ['2024'], 'a year-shaped code with a code word next to it is a code');
});

t.test('codes: at most MAX_CODES, best first', async (t) => {
  const text = Array.from({ length: 20 }, (_, i) => `Your verification code is ${100000 + i * 7}.`).join('\n');
  t.equal(codesOf({ text }).length, MAX_CODES);
  t.same(codesOf({ text: 'Your order 4829 is ready. Your one-time verification code is 551873.\nCode: 7731' })[0], '551873');
});

t.test('links: anchors, quoted or not, with their text decoded, collapsed and at most 200 characters', async (t) => {
  const html = `<p><A HREF='https://a.example/1'>Sign&nbsp;up &amp; <b>save</b>&#33; &#x1F600;</A>
    <a class="x" href=https://b.example/2?x=1&amp;y=2 title="a>b">  B
    two </a><a href="https://c.example/3"><img src="x.png" alt=""></a>
    <a href="https://d.example/4">${'long '.repeat(100)}</a></p>`;
  const links = linksOf({ html });
  t.same(links.slice(0, 3), [
    { url: 'https://a.example/1', text: 'Sign up & save! 😀', kind: 'other' },
    { url: 'https://b.example/2?x=1&y=2', text: 'B two', kind: 'other' },
    { url: 'https://c.example/3', text: null, kind: 'other' },
  ]);
  t.ok(links[3].text!.length <= 200 && links[3].text!.startsWith('long long'), 'anchor text is cut at 200 characters');
});

t.test('links: only absolute http(s) URLs of at most 2,048 characters, and mailto only from List-Unsubscribe', async (t) => {
  const html = `<a href="javascript:alert(1)">Verify</a><a href="data:text/html,x">Verify</a><a href="/verify?t=1">Verify</a>
    <a href="//cdn.example/x">Verify</a><a href="mailto:a@example.com">Mail us</a><a href="https://x.example/${'a'.repeat(2100)}">Long</a>
    <a href="  https://ok.example/verify?t=Zk3u9QmWc2Lp4Xx8  ">Verify</a>`;
  t.same(linksOf({ html }), [{ url: 'https://ok.example/verify?t=Zk3u9QmWc2Lp4Xx8', text: 'Verify', kind: 'verification' }]);
  t.same(linksOf({ listUnsubscribe: '<mailto:leave@list.example?subject=unsubscribe>, <https://list.example/u/8c1f2a9d>, <javascript:x>' }), [
    { url: 'mailto:leave@list.example?subject=unsubscribe', text: null, kind: 'unsubscribe' },
    { url: 'https://list.example/u/8c1f2a9d', text: null, kind: 'unsubscribe' },
  ]);
});

t.test('links: bare URLs in the text stop at whitespace, < > " and lose trailing punctuation', async (t) => {
  const text = 'See https://a.example/x. Or (https://b.example/y), "https://c.example/z"; <https://d.example/w>! https://en.wiki.example/Foo_(bar) xhttps://no.example';
  t.same(
    linksOf({ text }).map((l) => l.url),
    ['https://a.example/x', 'https://b.example/y', 'https://c.example/z', 'https://d.example/w', 'https://en.wiki.example/Foo_(bar)'],
  );
});

t.test('links: one entry per URL, keeping the first anchor text and a kind from any sighting', async (t) => {
  const html = '<a href="https://x.example/c/AbCdEf1234567890">Click here</a><a href="https://x.example/c/AbCdEf1234567890">Confirm your email</a>';
  t.same(linksOf({ html }), [{ url: 'https://x.example/c/AbCdEf1234567890', text: 'Click here', kind: 'verification' }]);
});

t.test('links: the kind comes from the anchor text, else a tokened URL path, else the words around a "click here"', async (t) => {
  const kinds = (html: string, subject: string | null = null) => linksOf({ html, subject }).map((l) => l.kind);
  t.same(kinds('<a href="https://x.example/a">Unsubscribe</a>'), ['unsubscribe']);
  t.same(kinds('<a href="https://x.example/a">Manage email preferences</a>'), ['unsubscribe']);
  t.same(kinds('<a href="https://x.example/a">Reset your password</a>'), ['password_reset']);
  t.same(kinds('<a href="https://x.example/a">Verify email</a>'), ['verification']);
  t.same(kinds('<a href="https://x.example/a">Sign in with magic link</a>'), ['magic_link']);
  t.same(kinds('<a href="https://x.example/a">View your order confirmation</a>'), ['other'], 'confirming an order is not verification');
  t.same(kinds('<a href="https://x.example/account/verify?t=c29ac3f17d2e4b1a">Get started</a>'), ['verification'], 'a tokened URL path');
  t.same(kinds('<a href="https://help.x.example/articles/verify-your-email">Help</a>'), ['other'], 'a help article is not a verification link');
  t.same(kinds('<a href="https://x.example/auth/callback?token=eyJhbGciOi9JIUzI1">Continue</a>'), ['magic_link'], 'an auth path with a token');
  t.same(kinds('<p>To confirm your address, <a href="https://t.example/c/AbCdEf1234567890">click here</a>.</p>'), ['verification']);
  t.same(kinds('<p>Click the button below to reset your password.</p><table><tr><td><a href="https://t.example/c/AbCdEf1234567890"><img alt=""></a></td></tr></table>'), ['password_reset'], 'an image button: the line before');
  t.same(kinds('<a href="https://t.example/c/AbCdEf1234567890">Log in</a>', 'Your sign-in link'), ['magic_link'], '"Log in" with a token in a sign-in mail');
  t.same(kinds('<a href="https://bank.example/login">Log in</a>', 'Your sign-in link'), ['other'], '"Log in" to a page without a token');
  t.same(kinds('<a href="https://t.example/c/AbCdEf1234567890">Log in</a>', 'Your statement is ready'), ['other'], '"Log in" in a mail that is not about signing in');
});

t.test('links: actions first, then other links, then unsubscribe; an unsubscribe link outlives MAX_LINKS', async (t) => {
  const others = Array.from({ length: 30 }, (_, i) => `<a href="https://x.example/article/${i}">Article ${i}</a>`).join(' ');
  const html = `<a href="https://x.example/u?t=a1">Unsubscribe</a> ${others} <a href="https://x.example/r?t=Rk9lQ2t1Z0ZxN3Zp">Reset password</a> <a href="https://x.example/v?t=c29ac3f17d2e4b1a">Verify email</a>`;
  const links = linksOf({ html });
  t.equal(links.length, MAX_LINKS);
  t.same(links.slice(0, 2).map((l) => l.kind), ['verification', 'password_reset']);
  t.same(links.at(-1), { url: 'https://x.example/u?t=a1', text: 'Unsubscribe', kind: 'unsubscribe' });
  t.same(links.slice(2, -1).map((l) => l.kind), Array(MAX_LINKS - 3).fill('other'));
});

// ---------------------------------------------------------------------------------------------
// Hostile input

const KiB = 1024;

/** Bodies built to make a careless scanner slow or a careless bound fail, at a given size. */
const HOSTILE: { name: string; build: (size: number) => Partial<ActionSource> }[] = [
  { name: 'an unclosed "<a href=" over and over', build: (size) => ({ html: '<a href='.repeat(size / 8) }) },
  { name: 'one long run of digits', build: (size) => ({ text: '1'.repeat(size), html: `<p>${'7'.repeat(size)}</p>` }) },
  { name: 'a run of "<"', build: (size) => ({ html: '<'.repeat(size), text: '<'.repeat(size) }) },
  { name: 'a huge attribute', build: (size) => ({ html: `<a title="${'x'.repeat(size)}" href="https://x.example/${'a'.repeat(size)}">Verify</a><a href="https://ok.example/v?t=c29ac3f17d2e4b1a">Verify</a>` }) },
  { name: 'alternating "1 1 1 1"', build: (size) => ({ text: `Your code: ${'1 '.repeat(size / 2)}`, html: `<p>Your code: ${'1 '.repeat(size / 2)}</p>` }) },
  { name: 'code-shaped numbers with code words', build: (size) => ({ text: 'Your verification code is 482913 '.repeat(size / 33), subject: 'Your code' }) },
  { name: 'letter-digit tokens', build: (size) => ({ text: 'code A1B2C3 '.repeat(size / 12) }) },
  { name: 'unterminated quotes', build: (size) => ({ html: `<a href="https://x.example/v?t=1">x</a><a href="${'x'.repeat(size)}`, text: `"${'https://x.example/"'.repeat(size / 20)}` }) },
  { name: 'unclosed comments, scripts and entities', build: (size) => ({ html: `${'<!--'.repeat(size / 8)}${'<script>'.repeat(size / 16)}${'&#x1F6'.repeat(size / 12)}` }) },
  { name: 'NUL bytes and lone surrogates', build: (size) => ({ text: '\0\ud800code 482913\udc00 https://x.example/\ud800 '.repeat(size / 40), html: '<a href="https://x.example/\ud800">\0\udc00Verify</a>'.repeat(size / 50), subject: '\ud800\0', listUnsubscribe: '<https://x.example/\udc00>' }) },
  { name: 'thousands of links', build: (size) => ({ html: Array.from({ length: size / 80 }, (_, i) => `<a href="https://x.example/verify?t=AbCdEf${i}123456789">Verify</a>`).join('\n'), text: Array.from({ length: size / 60 }, (_, i) => `Confirm: https://y.example/c/${i}Zk3u9QmWc2Lp4\n`).join('') }) },
  { name: 'scheme separators without schemes', build: (size) => ({ text: 'http://'.repeat(size / 7), listUnsubscribe: '<'.repeat(4096) }) },
  { name: 'trailing punctuation after URLs', build: (size) => ({ text: `https://x.example/(a${')'.repeat(size)} https://y.example/${'.'.repeat(size)}` }) },
  { name: 'anchor texts of symbols', build: (size) => ({ html: `<a href="https://x.example/a">x${'-'.repeat(190)}x</a>`.repeat(size / 230) }) },
  { name: 'a long line of code words', build: (size) => ({ text: 'verification code '.repeat(size / 18) + '482913' }) },
];

function assertBounded(t: Test, result: ExtractedActions, name: string): void {
  t.ok(result.codes.length <= MAX_CODES && result.links.length <= MAX_LINKS, `${name}: at most MAX_CODES codes and MAX_LINKS links`);
  t.ok(result.codes.every((c) => c.context.length <= 120 && c.value.length <= 16), `${name}: codes are short`);
  t.ok(result.links.every((l) => l.url.length <= 2048 && (l.text === null || l.text.length <= 200)), `${name}: links are short`);
  t.ok(result.links.every((l) => l.url.isWellFormed() && (l.text === null || l.text.isWellFormed())), `${name}: well-formed strings`);
}

t.test('hidden HTML: codes and links a reader cannot see are not extracted, by the manipulation check\'s definition of hidden', async (t) => {
  const visible = '<p>Your verification code is 482913.</p><p><a href="https://real.example/verify?t=c29ac3f17d2e4b1a9f">Verify your email</a></p>';
  const hiders = [
    'style="display:none"',
    'style="visibility:hidden"',
    'hidden',
    'style="font-size:0"',
    'style="opacity:0"',
    'style="max-height:0;overflow:hidden"',
    'style="position:absolute;left:-9999px"',
    'style="color:#ffffff;background-color:#ffffff"',
    'style="DISPLAY : none !important"',
    'style="display:/**/none"',
  ];
  for (const hider of hiders) {
    const decoy = `<div ${hider}><p>Your verification code is 551873.</p><a href="https://attacker.example/verify?t=a1b2c3d4e5f6a7b8c9">Verify your email</a></div>`;
    for (const html of [decoy + visible, visible + decoy]) {
      const found = extractActions({ ...EMPTY, subject: 'Your code', html });
      t.same(found.codes.map((c) => c.value), ['482913'], `${hider}: only the visible code`);
      t.same(found.links.map((l) => l.url), ['https://real.example/verify?t=c29ac3f17d2e4b1a9f'], `${hider}: only the visible link`);
    }
  }
  // Hidden by an ancestor, however deep; shown again after the hidden element ends.
  const nested = '<table><tr><td style="display:none"><div><span><b>Your code: 551873</b></span></div></td><td>Your code: 482913</td></tr></table>';
  t.same(codesOf({ html: nested }), ['482913']);
  // An anchor that shows nothing: hidden itself, or holding only hidden text.
  t.same(linksOf({ html: '<a style="display:none" href="https://attacker.example/verify?t=a1b2c3d4e5f6a7b8c9">Verify</a>' }), []);
  t.same(linksOf({ html: '<a href="https://attacker.example/verify?t=a1b2c3d4e5f6a7b8c9"><span style="font-size:0">Verify</span></a>' }), []);
  t.same(linksOf({ text: 'Verify [https://attacker.example/verify?t=a1b2c3d4e5f6a7b8c9]', html: '<a href="https://attacker.example/verify?t=a1b2c3d4e5f6a7b8c9"><span style="font-size:0">Verify</span></a>' }), [], 'nor from the text derived from it');
  t.same(linksOf({ html: '<a href="https://attacker.example/verify?t=a1b2c3d4e5f6a7b8c9"><img src="x.png" style="display:none" alt="Verify"></a>' }), []);
  // What stays: an image button, white text on a coloured button, a hidden preheader before a visible code.
  t.same(linksOf({ html: '<a href="https://real.example/verify?t=c29ac3f17d2e4b1a9f"><img src="button.png"></a>' }).map((l) => l.kind), ['verification']);
  t.same(linksOf({ html: '<td bgcolor="#1a73e8"><a style="color:#ffffff" href="https://real.example/x">Verify your email</a></td>' }).map((l) => l.kind), ['verification']);
  t.same(linksOf({ html: '<a style="color:#ffffff" href="https://real.example/x">Verify your email</a>' }).map((l) => l.kind), ['verification'], 'white text on a background not known is seen');
  t.same(codesOf({ html: '<div style="display:none">Your code is inside&zwnj;&nbsp;&zwnj;</div><p>Your verification code is 482913</p>' }), ['482913']);
  // A text part keeps its own codes, but not what the HTML hides: mailparser derives the text of an
  // HTML-only message from its HTML, hidden text included.
  t.same(codesOf({ text: 'Your verification code is 482913.', html: '<div style="display:none">Your verification code is 551873.</div>' }), ['482913']);
  const derived = {
    subject: 'Your code',
    text: 'Your verification code is 551 873. Verify your email [https://attacker.example/verify?t=a1b2c3d4e5f6a7b8c9]\nYour verification code is 482913. https://real.example/verify?t=c29ac3f17d2e4b1a9f',
    html: '<div style="display:none">Your verification code is 551873. <a href="https://attacker.example/verify?t=a1b2c3d4e5f6a7b8c9">Verify your email</a></div><p>Your verification code is 482913. <a href="https://real.example/verify?t=c29ac3f17d2e4b1a9f">Verify</a></p>',
  };
  t.same(codesOf(derived), ['482913'], 'a code the HTML hides is not taken from the text either');
  t.same(linksOf(derived).map((l) => l.url), ['https://real.example/verify?t=c29ac3f17d2e4b1a9f'], 'nor a link');
  t.same(codesOf({ ...derived, html: `${derived.html}<p>Or use 551873.</p>` }).sort(), ['482913', '551 873'], 'shown as well as hidden: kept');
});

t.test('links into this machine or a private network are never verification, magic-link, reset or unsubscribe links', async (t) => {
  const inward = [
    'http://127.0.0.1:8025/v0/owner/verify?token=c29ac3f17d2e4b1a9f',
    'http://localhost:8025/verify?token=c29ac3f17d2e4b1a9f',
    'http://LOCALHOST./verify?token=c29ac3f17d2e4b1a9f',
    'http://svc.localhost/verify?token=c29ac3f17d2e4b1a9f',
    'http://[::1]:8025/verify?token=c29ac3f17d2e4b1a9f',
    'http://[::ffff:127.0.0.1]/verify?token=c29ac3f17d2e4b1a9f',
    'http://2130706433/verify?token=c29ac3f17d2e4b1a9f',
    'http://0x7f.1/verify?token=c29ac3f17d2e4b1a9f',
    'http://127.1/verify?token=c29ac3f17d2e4b1a9f',
    'http://0.0.0.0:8025/verify?token=c29ac3f17d2e4b1a9f',
    'http://0/verify?token=c29ac3f17d2e4b1a9f',
    'http://10.1.2.3/verify?token=c29ac3f17d2e4b1a9f',
    'http://172.20.0.1/verify?token=c29ac3f17d2e4b1a9f',
    'http://192.168.1.1/reset-password?token=c29ac3f17d2e4b1a9f',
    'http://169.254.169.254/latest/meta-data/verify?token=c29ac3f17d2e4b1a9f',
    'http://[fe80::1]/verify?token=c29ac3f17d2e4b1a9f',
    'http://[fd00::1]/verify?token=c29ac3f17d2e4b1a9f',
    'http://router/verify?token=c29ac3f17d2e4b1a9f',
    'http://printer.local/verify?token=c29ac3f17d2e4b1a9f',
    'https://user:pass@127.0.0.1/magic-link?token=c29ac3f17d2e4b1a9f',
  ];
  for (const url of inward) {
    const html = `<p><a href="${url}">Verify your email</a></p><p><a href="${url}&x=1">Reset your password</a></p><p><a href="${url}&y=1">Unsubscribe</a></p>`;
    const found = linksOf({ subject: 'Verify your email', html, text: `Verify your email: ${url}&z=1` });
    t.same(found.map((l) => l.kind), ['other', 'other', 'other', 'other'], url);
    t.same(linksOf({ listUnsubscribe: `<${url}>` }).map((l) => l.kind), ['other'], `${url} in List-Unsubscribe`);
  }
  // Public hosts, including ones whose names merely mention loopback, keep their kind.
  for (const url of ['https://example.com/verify?token=c29ac3f17d2e4b1a9f', 'https://127.0.0.1.example.com/verify?token=c29ac3f17d2e4b1a9f', 'https://localhost.example.com/verify?token=c29ac3f17d2e4b1a9f', 'http://8.8.8.8/verify?token=c29ac3f17d2e4b1a9f']) {
    t.same(linksOf({ html: `<a href="${url}">Verify your email</a>` }).map((l) => l.kind), ['verification'], url);
  }
  t.same(linksOf({ listUnsubscribe: '<mailto:unsub@localhost>' }).map((l) => l.kind), ['unsubscribe'], 'a mailto unsubscribe is mail, not a request to this machine');
});

t.test('hostile input: bounded output, and time at most linear in the size', async (t) => {
  assertLinear(t, HOSTILE.map(({ name, build }) => ({ name, build: (size: number) => ({ ...EMPTY, ...build(size) }) })), extractActions, (result, label) => assertBounded(t, result, label));
});

t.test('hostile input: only MAX_SCANNED_CHARS of each body is read', async (t) => {
  const padding = 'x'.repeat(MAX_SCANNED_CHARS);
  t.same(codesOf({ text: `${padding}\nYour verification code is 482913` }), [], 'a code past the bound is not seen');
  t.same(linksOf({ html: `${padding}<a href="https://x.example/v">Verify</a>` }), [], 'a link past the bound is not seen');
  const megabyte = { ...EMPTY, text: '1'.repeat(1024 * KiB), html: '<'.repeat(1024 * KiB), subject: '9'.repeat(1024 * KiB), listUnsubscribe: '<https://x.example/u>'.repeat(50_000) };
  const start = cpuMs();
  assertBounded(t, extractActions(megabyte), '1 MB of each input');
  t.ok(cpuMs() - start < 2_000, 'a megabyte of each input is cut before scanning');
});

t.test('hostile input: never throws, whatever the input', async (t) => {
  const odd = [
    '<a href="https://x.example/\0">', '<a href', '<a href=', '<a href="', "<a href='https://x.example'", '<a\0href=x>', '</', '<!', '<!--', '&#xFFFFFFFF;',
    '&#0;', '&#55296;', '<script', '<style>', '<a href="https://x.example">', '\ud800', '\udfff<a>', '<a href=https://x.example/v?t=AbCdEf1234567890>',
  ];
  for (const s of odd) {
    t.doesNotThrow(() => extractActions({ subject: s, text: s, html: s, listUnsubscribe: s }), JSON.stringify(s));
  }
  // Callers are typed, but a stored row may still hold something else.
  t.same(extractActions({ subject: 1, text: {}, html: [], listUnsubscribe: undefined } as unknown as ActionSource), { codes: [], links: [] });
  t.same(extractActions(null as unknown as ActionSource), { codes: [], links: [] });
});
