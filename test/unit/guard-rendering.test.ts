/**
 * The outbound guard reads what the recipient sees (issue 32 item 3, docs/guarded.md): HTML as
 * rendered (src/mail/shown-text.ts), text without format characters, attachments as a client
 * shows them (src/mail/shown-attachment.ts: charsets, message/rfc822, SVG/XML, RTF). One test
 * per rule, the detectors' findings through inspectContent (what the CPU pool runs), ordinary
 * mail that stays clean, and every new transformation linear on hostile input.
 */
import t from 'tap';
import { markupAsShown, MAX_SEEN_GROWTH, overriddenRuns, rtfAsShown, withoutUnseenChars, decodeReference } from '../../src/mail/shown-text.js';
import { attachmentView, decodeCharset } from '../../src/mail/shown-attachment.js';
import { inspectContent, type GuardContent } from '../../src/mail/guard-content.js';
import { GUARD_DETECTORS, MAX_SCANNED_CHARS } from '../../src/mail/outbound-guard.js';
import { assertLinear } from '../helpers/linear.js';

const GITHUB = 'ghp_aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4';
const CARD = '4111111111111111';
const EMPTY: GuardContent = { subject: null, text: null, html: null, attachments: [], homeSecrets: [], other: [], enabled: [...GUARD_DETECTORS] };
const scan = (c: Partial<GuardContent>) => inspectContent({ ...EMPTY, ...c });
const detectors = (c: Partial<GuardContent>) => scan(c).map((f) => f.detector);
const file = (contentType: string | null, content: string | Uint8Array, filename: string | null = 'f') => ({
  filename,
  contentType,
  content: typeof content === 'string' ? new Uint8Array(Buffer.from(content)) : content,
});
const decimalRefs = (s: string) => [...s].map((c) => `&#${c.charCodeAt(0)};`).join('');
const hexRefs = (s: string) => [...s].map((c) => `&#x${c.charCodeAt(0).toString(16)}`).join('');

t.test('HTML as shown: character references decoded, named, decimal, hex, without ";" and with leading zeros', async (t) => {
  t.equal(markupAsShown(decimalRefs(GITHUB), 'html'), GITHUB);
  t.equal(markupAsShown(hexRefs(GITHUB), 'html'), GITHUB, 'hex without semicolons');
  t.equal(markupAsShown('&#0000000103;hp&lowbar;x', 'html'), 'ghp_x');
  t.equal(markupAsShown('a&ampb &lt;c&gt; &quot;', 'html'), 'a&b <c> "', 'legacy names need no ";" in text');
  t.equal(markupAsShown('4111&shy;1111', 'html'), '41111111', 'a soft hyphen shows as nothing');
  t.equal(markupAsShown('&eacute;t&eacute;', 'html'), '&eacute;t&eacute;', 'a name the guard does not list stays as written');
  t.same(decodeReference('&amp=', 0, true), null, 'in an attribute a legacy name before "=" is text');
  t.same(decodeReference('&#x110000;', 0, false), { text: '\ufffd', end: 10 }, 'out of range is U+FFFD');
  t.same(decodeReference('&#;', 0, false), null);
});

t.test('HTML as shown: tags and comments inside a word leave it whole; blocks and cells keep words apart', async (t) => {
  t.equal(markupAsShown('ghp_aB3<b></b>dE5<span></span>f<wbr>G<!-- x -->7', 'html'), 'ghp_aB3dE5fG7');
  t.equal(markupAsShown('ab<!-- <!-- nested --> -->cd', 'html'), 'ab -->cd', 'a comment ends at its first -->, as browsers read it');
  t.equal(markupAsShown('ab<!-- x --!>cd<!-->ef<!--->gh', 'html'), 'abcdefgh', '--!>, <!--> and <!---> end comments');
  t.equal(markupAsShown('ab<![CDATA[cd]]>ef', 'html'), 'abcdef', 'CDATA read as text');
  t.equal(markupAsShown('ab<!--[if mso]>cd<![endif]-->ef', 'html'), 'abcdef', 'Outlook shows its conditional comments');
  t.equal(markupAsShown('<p>one</p><p>two</p><div>three<br>four</div>', 'html'), 'one\ntwo\nthree\nfour');
  t.equal(markupAsShown('<table><tr><td>4111</td><td>1111</td></tr></table>', 'html'), '4111\t1111', 'cells stay apart');
  t.equal(markupAsShown('a  \n b<pre>x\n  y</pre>', 'html'), 'a b\nx\n  y', 'whitespace collapsed outside <pre>');
  t.equal(markupAsShown('a<script>ghp_1</script>b<style>.x{}</style>c', 'html'), 'abc', 'script and style content is not shown');
  t.equal(markupAsShown('ab<img src="x.png" alt="c&#100;">ef', 'html'), 'abcdef\nx.png', "an image's alt where the image is, its src at the end");
  t.equal(markupAsShown('<a href="https://x.example/?a=1&amp;t=&#50;" title="hi" data-x="no">link</a>', 'html'), 'link\nhttps://x.example/?a=1&t=2\nhi');
  t.equal(markupAsShown('1 < 2 and 3 <4', 'html'), '1 < 2 and 3 <4', 'a < before a space or digit is text');
});

t.test('HTML as shown without what it hides: inline styles and the hidden attribute, same-name elements nesting', async (t) => {
  const html = 'ghp_ab<span style="display:none">XX<span>YY</span>ZZ</span>cd<b hidden>q</b>ef<i style="font-size:0px">w</i>gh<i style="font-size:10px">v</i><img hidden alt="z">';
  t.equal(markupAsShown(html, 'html', 'dropped'), 'ghp_abcdefghv');
  t.equal(markupAsShown(html, 'html'), 'ghp_abXXYYZZcdqefwghvz', 'the other view reads everything');
  t.equal(markupAsShown('a<div style="display&#58;none">b</div>c', 'html', 'dropped'), 'a\nc', 'a hidden block still stands apart; styles are decoded');
  t.equal(markupAsShown('a<span style="opacity:0.5">b</span>c<span style="opacity:0">d', 'html', 'dropped'), 'abc', 'half transparent shows; an unclosed hidden element hides the rest');
});

t.test('right-to-left overrides: the stretch is read as shown, reversed; <bdo dir=rtl> is one', async (t) => {
  t.equal(overriddenRuns(`x \u202e${[...'ghp_abc'].reverse().join('')}\u202c y`), 'ghp_abc');
  t.equal(overriddenRuns('a\u202eba\nc\u202edc'), 'ab\ncd', 'a line end ends a stretch');
  t.equal(overriddenRuns('no override \u2067isolate'), '');
  t.equal(overriddenRuns(markupAsShown('<bdo dir="rtl">cba</bdo>d', 'html')), 'abc');
});

t.test('XML and SVG as shown: text, CDATA and every attribute value, decoded', async (t) => {
  t.equal(markupAsShown('<svg><text x="1">gh<tspan>p_</tspan>ab</text><desc data-k="&#103;h"><![CDATA[c<d]]></desc><script>s</script></svg>', 'xml'), 'ghp_abc<ds\n1\ngh');
});

t.test('RTF as shown: control words dropped without a gap, escapes decoded, fallbacks skipped', async (t) => {
  t.equal(rtfAsShown(String.raw`{\rtf1\ansi gh\'70_a{\b}B\u51?d\par x\tab y\~z\-w\_v\\\{\}}`), 'ghp_aB3d\nx\ty zw-v\\{}');
  t.equal(rtfAsShown(String.raw`{\uc2 \u103\'3f\'3fhp}\u95?x`), 'ghp_x', '\\ucN per group');
  t.equal(rtfAsShown(String.raw`a\u-4064?b`), 'a\uf020b', 'negative \\u is the unit plus 65536');
  t.equal(rtfAsShown(String.raw`a\bin3 xyzb`), 'ab', '\\bin skips its bytes');
});

t.test('text as seen: format characters and other default-ignorables dropped, every space a plain space', async (t) => {
  t.equal(withoutUnseenChars('4111\u00ad1111\u200b1111\u20601111'), CARD);
  t.equal(withoutUnseenChars('g\u200ch\u200dp\ufeff_\u202ea\u2066b\u034fc\u180ed'), 'ghp_abcd');
  t.equal(withoutUnseenChars('a\u00a0b\u2009c\u3000d'), 'a b c d');
  t.equal(withoutUnseenChars('café 東京 مرحبا 😀'), 'café 東京 مرحبا 😀', 'ordinary text is unchanged');
  t.equal(withoutUnseenChars('ｇｈｐ＿𝖺𝖡３'), 'ghp_aB3', 'full-width and mathematical letters read as the ASCII they show (NFKC)');
  let growth = 1;
  for (let c = 0x80; c < 0x110000; c++) {
    if (c >= 0xd800 && c < 0xe000) continue;
    const one = String.fromCodePoint(c);
    growth = Math.max(growth, withoutUnseenChars(one).length / one.length);
  }
  t.ok(growth <= MAX_SEEN_GROWTH, `no character grows more than ${MAX_SEEN_GROWTH} times (${growth})`);
});

t.test('charsets: a byte-order mark wins, then the declared charset, else UTF-8', async (t) => {
  const utf16le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('key ü', 'utf16le')]);
  const utf16be = Buffer.from(Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from('key ü', 'utf16le').swap16()]));
  t.equal(decodeCharset(utf16le, null), 'key ü');
  t.equal(decodeCharset(utf16be, 'iso-8859-1'), 'key ü', 'the mark wins over the declared charset');
  t.equal(decodeCharset(Buffer.from('key ü', 'utf16le'), 'utf-16'), 'key ü', 'UTF-16 without a mark is little-endian');
  t.equal(decodeCharset(Buffer.from('caf\xe9', 'latin1'), 'iso-8859-1'), 'café');
  t.equal(decodeCharset(Buffer.from('ok'), 'x-unknown-charset'), 'ok', 'an unknown charset reads as UTF-8');
});

t.test('attachments as a client shows them: text in its charset, markup and RTF rendered, binary left out', async (t) => {
  t.equal(attachmentView(file('image/png', '\x89PNG\0\0'), MAX_SCANNED_CHARS).text, null, 'a PNG is binary');
  t.equal(attachmentView(file(null, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('hi', 'utf16le')])), MAX_SCANNED_CHARS).text, 'hi', 'an untyped UTF-16 file with its mark is text');
  t.same(attachmentView(file('image/svg+xml', '<svg><text>a<tspan/>b</text></svg>'), MAX_SCANNED_CHARS).shown, ['ab']);
  t.same(attachmentView(file('application/vnd.foo+xml', '<x v="&#49;"/>'), MAX_SCANNED_CHARS).shown, ['\n1']);
  t.same(attachmentView(file('text/rtf', String.raw`{\rtf1 a\'62}`), MAX_SCANNED_CHARS).shown, ['ab']);
  t.same(attachmentView(file('application/octet-stream', '{\\rtf1 x}', 'doc.rtf'), MAX_SCANNED_CHARS).shown, ['x'], 'RTF by name');
  t.same(attachmentView(file('text/html', 'a<i hidden>b</i>c'), MAX_SCANNED_CHARS).shown, ['abc', 'ac'], 'HTML with and without what it hides');
  t.equal(attachmentView(file('message/delivery-status', 'Status: 5.1.1'), MAX_SCANNED_CHARS).text, 'Status: 5.1.1', 'any message/* is text');
});

const mime = (lines: string[]) => lines.join('\r\n');

t.test('message/rfc822: headers with encoded words, parts decoded from base64 and quoted-printable in their charset, nested messages', async (t) => {
  const inner = mime(['Subject: =?iso-8859-1?Q?caf=E9?=', 'Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: base64', '', Buffer.from('<p>in&#110;er</p>').toString('base64')]);
  const raw = mime([
    'From: =?utf-8?B?QWxpY2U=?= <a@x.example>',
    'Subject: =?utf-8?Q?a?= =?utf-8?Q?b?=',
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    'preamble',
    '--b1',
    'Content-Type: text/plain; charset=iso-8859-1',
    'Content-Transfer-Encoding: quoted-printable',
    '',
    'caf=E9 soft=',
    'break',
    '--b1',
    'Content-Type: message/rfc822',
    '',
    inner,
    '--b1',
    'Content-Type: image/png',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('\x89PNG\0secret-not-text').toString('base64'),
    '--b1--',
    'epilogue',
  ]);
  const view = attachmentView(file('message/rfc822', raw), MAX_SCANNED_CHARS);
  t.equal(view.shown.length, 1);
  const shown = view.shown[0];
  t.match(shown, /From: Alice <a@x.example>/);
  t.match(shown, /Subject: ab\n/, 'whitespace between encoded words is dropped');
  t.match(shown, /café softbreak/);
  t.match(shown, /Subject: café/);
  t.match(shown, /\ninner\n/, 'the nested HTML part rendered');
  t.notMatch(shown, /secret-not-text|preamble|epilogue/, 'binary parts, preamble and epilogue are not shown');
  t.equal(view.truncated, false);
  const deep = Array.from({ length: 12 }).reduce<string>((m) => mime(['Content-Type: message/rfc822', '', m]), mime(['', 'x']));
  t.equal(attachmentView(file('message/rfc822', deep), MAX_SCANNED_CHARS).truncated, true, 'nested deeper than the guard reads: truncated (held as unread)');
  const wide = mime(['Content-Type: multipart/mixed; boundary=b', '', ...Array.from({ length: 300 }, () => '--b\r\n\r\nx'), '--b--']);
  t.equal(attachmentView(file('message/rfc822', wide), MAX_SCANNED_CHARS).truncated, true, 'more parts than the guard reads: truncated');
  t.equal(attachmentView(file('message/rfc822', mime(['', 'y'.repeat(2000)])), 1000).truncated, true, 'a view past its bound: truncated');
  t.equal(attachmentView(file('message/rfc822', 'X: y\n'.repeat(5_001)), MAX_SCANNED_CHARS).truncated, true, 'more header lines than the guard reads: truncated');
  t.equal(attachmentView(file('message/rfc822', 'X: y\n'.repeat(4_000)), MAX_SCANNED_CHARS).truncated, false);
});

t.test('the guard finds each bypass of what the recipient sees', async (t) => {
  const cases: [string, Partial<GuardContent>][] = [
    ['token as decimal references in the HTML', { html: `<p>${decimalRefs(GITHUB)}</p>` }],
    ['token as hex references without ";"', { html: hexRefs(GITHUB) }],
    ['token split by empty elements', { html: `${GITHUB.slice(0, 9)}<b></b>${GITHUB.slice(9, 20)}<span></span>${GITHUB.slice(20)}` }],
    ['token split by comments', { html: `${GITHUB.slice(0, 9)}<!-- -->${GITHUB.slice(9, 20)}<!---->${GITHUB.slice(20)}` }],
    ['token split by <wbr>', { html: `${GITHUB.slice(0, 9)}<wbr>${GITHUB.slice(9)}` }],
    ['token in CDATA', { html: `<![CDATA[${GITHUB}]]>` }],
    ['token in an Outlook conditional comment, referenced', { html: `<!--[if mso]>${decimalRefs(GITHUB)}<![endif]-->` }],
    ['token in an alt text, referenced', { html: `<img src="x" alt="${decimalRefs(GITHUB)}">` }],
    ['token with zero-width spaces in the text', { text: [...GITHUB].join('\u200b') }],
    ['token with a BOM and bidi controls in the subject', { subject: `${GITHUB.slice(0, 5)}\ufeff\u202e${GITHUB.slice(5)}` }],
    ['card split by soft hyphens', { text: `card ${CARD.match(/.{4}/g)!.join('\u00ad')}` }],
    ['card split by &shy; in the HTML', { html: `card ${CARD.match(/.{4}/g)!.join('&shy;')}` }],
    ['card with no-break spaces', { text: `card ${CARD.match(/.{4}/g)!.join('\u00a0')}` }],
    ['token with hidden junk inside', { html: `${GITHUB.slice(0, 12)}<span style="display: none">zz</span>${GITHUB.slice(12)}` }],
    ['token reversed under a right-to-left override', { text: `see \u202e${[...GITHUB].reverse().join('')}\u202c ok` }],
    ['token reversed in <bdo dir=rtl>', { html: `<bdo dir=rtl>${[...GITHUB].reverse().join('')}</bdo>` }],
    ['token in full-width letters', { text: [...GITHUB].map((c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0)).join('') }],
    ['HTML attachment with hidden junk inside the token', { attachments: [file('text/html', `${GITHUB.slice(0, 12)}<b hidden>zz</b>${GITHUB.slice(12)}`)] }],
    ['UTF-16LE text attachment', { attachments: [file('text/plain', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`key ${GITHUB}`, 'utf16le')]))] }],
    ['UTF-16BE declared, no mark', { attachments: [file('text/plain; charset=utf-16be', Buffer.from(`key ${GITHUB}`, 'utf16le').swap16())] }],
    ['ISO-8859-1 text attachment', { attachments: [file('text/plain; charset=ISO-8859-1', Buffer.from(`Grüße ${GITHUB}`, 'latin1'))] }],
    ['message/rfc822 with a base64 part', { attachments: [file('message/rfc822', mime(['Content-Transfer-Encoding: base64', '', Buffer.from(GITHUB).toString('base64')]))] }],
    ['message/rfc822 with a quoted-printable part', { attachments: [file('message/rfc822', mime(['Content-Transfer-Encoding: quoted-printable', '', `${GITHUB.slice(0, 20)}=`, `${GITHUB.slice(20, 30)}=${GITHUB.charCodeAt(30).toString(16)}${GITHUB.slice(31)}`]))] }],
    ['message/rfc822 with an encoded-word subject', { attachments: [file('message/rfc822', mime([`Subject: =?utf-8?B?${Buffer.from(GITHUB).toString('base64')}?=`, '', 'hi']))] }],
    ['an .eml as octet-stream', { attachments: [file('application/octet-stream', mime(['Content-Transfer-Encoding: base64', '', Buffer.from(GITHUB).toString('base64')]), 'fw.eml')] }],
    ['SVG with the token split by a tspan', { attachments: [file('image/svg+xml', `<svg><text>${GITHUB.slice(0, 10)}<tspan/>${GITHUB.slice(10)}</text></svg>`)] }],
    ['SVG with the token in an attribute, referenced', { attachments: [file('image/svg+xml', `<svg><a title="${decimalRefs(GITHUB)}"/></svg>`)] }],
    ['RTF with hex escapes', { attachments: [file('application/rtf', `{\\rtf1 ${[...GITHUB].map((c) => `\\'${c.charCodeAt(0).toString(16)}`).join('')}}`)] }],
    ['RTF with \\u escapes and control words', { attachments: [file('text/rtf', `{\\rtf1 ${[...GITHUB].map((c, i) => (i % 2 ? `\\u${c.charCodeAt(0)}?` : `${c}{\\b}`)).join('')}}`)] }],
  ];
  for (const [name, content] of cases) {
    const findings = scan(content);
    t.ok(findings.some((f) => f.detector === 'credentials' || f.detector === 'card_numbers'), `${name}: ${JSON.stringify(findings)}`);
    for (const f of findings) t.notOk(f.detail.includes(GITHUB.slice(-5)) || f.detail.includes(CARD.slice(-5)), `${name}: the detail shows at most the last 4 characters`);
  }
});

t.test('ordinary mail stays clean as shown', async (t) => {
  const clean: [string, Partial<GuardContent>][] = [
    ['a newsletter with a table of figures', { html: '<table><tr><td>4111</td><td>1111</td><td>1111</td><td>1111</td></tr></table><p>Order&nbsp;#4567</p>' }],
    ['paragraphs of digits never join', { html: '<p>4111 1111</p><p>1111 1111</p>' }],
    ['an unsubscribe link with a token parameter', { html: '<a href="https://news.example/u?id=7&amp;token=Zx81kq0PlmA92bd7">unsubscribe</a>' }],
    ['an SVG logo', { attachments: [file('image/svg+xml', '<svg viewBox="0 0 24 24"><path d="M12 2L2 7l10 5 10-5-10-5z" fill="#4111"/></svg>')] }],
    ['an RTF letter', { attachments: [file('application/rtf', '{\\rtf1\\ansi{\\fonttbl\\f0 Arial;}\\f0\\fs24 Dear Sam,\\par Invoice 2024-117 is attached.\\par}')] }],
    ['a forwarded message', { attachments: [file('message/rfc822', mime(['From: Sam <sam@x.example>', 'Message-ID: <CAHx8sK2b@mail.example>', 'Subject: =?utf-8?Q?Gr=C3=BC=C3=9Fe?=', 'Content-Type: text/plain; charset=utf-8', '', 'See you Tuesday at 10:30.']))] }],
    ['Arabic and Persian text with its marks', { text: 'مرحبا\u200c بالعالم \u200fوقت 10:30' }],
    ['an emoji sequence with joiners', { text: 'Team 👩\u200d💻👨\u200d👩\u200d👧 ready' }],
  ];
  for (const [name, content] of clean) t.same(scan(content), [], name);
});

t.test('bounds: an attachment or its view past what the guard reads is held as unchecked', async (t) => {
  const big = mime(['Content-Type: text/plain', '', 'x '.repeat(MAX_SCANNED_CHARS)]);
  t.same(detectors({ attachments: [file('message/rfc822', big)] }), ['unchecked']);
  const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('a'.repeat(MAX_SCANNED_CHARS + 10), 'utf16le')]);
  t.same(detectors({ attachments: [file('text/plain', utf16)] }), ['unchecked'], 'UTF-16 text longer than the guard reads');
});

const KiB = 1024;
const repeat = (unit: string, size: number) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);

t.test('linear: HTML and XML as shown', async (t) => {
  const hostile = [
    { name: 'comment starts', build: (n: number) => repeat('<!--', n) },
    { name: 'comment dashes', build: (n: number) => `<!--${repeat('-', n)}` },
    { name: 'conditional comment starts without >', build: (n: number) => repeat('<!--[if ', n) },
    { name: 'CDATA starts', build: (n: number) => repeat('<![CDATA[', n) },
    { name: 'unclosed scripts', build: (n: number) => repeat('<script></scrip', n) },
    { name: 'numeric references', build: (n: number) => repeat('&#', n) },
    { name: 'long numeric reference', build: (n: number) => `&#${repeat('0', n)}` },
    { name: 'named-reference starts', build: (n: number) => repeat('&ampxx&quo', n) },
    { name: 'attributes without end', build: (n: number) => `<a ${repeat('href=x ', n)}` },
    { name: 'unterminated quotes', build: (n: number) => repeat('<a title="', n) },
    { name: 'bogus comments', build: (n: number) => repeat('<!', n) },
    { name: 'nested blocks', build: (n: number) => repeat('<div>', n) },
    { name: 'whitespace in pre', build: (n: number) => `<pre>${repeat(' \n', n)}` },
    { name: 'unclosed hidden elements', build: (n: number) => repeat('<span hidden>', n) },
    { name: 'hidden elements nesting', build: (n: number) => `<b style="display:none">${repeat('<b><b/', n)}` },
    { name: 'near-miss hidden styles', build: (n: number) => repeat('<i style="font-size:0000000001">', n) },
    { name: 'bdo overrides', build: (n: number) => repeat('<bdo dir=rtl>a', n) },
  ];
  assertLinear(t, hostile, (s) => markupAsShown(s, 'html'), (r, label) => t.ok(r.length <= 256 * KiB + 16, `${label}: bounded output`));
  assertLinear(t, hostile, (s) => markupAsShown(s, 'html', 'dropped'), (r, label) => t.ok(r.length <= 256 * KiB + 16, `${label} (hidden dropped): bounded output`));
  assertLinear(t, hostile, (s) => markupAsShown(s, 'xml'), (r, label) => t.ok(r.length <= 256 * KiB + 16, `${label} (xml): bounded output`));
});

t.test('linear: RTF as shown and text as seen', async (t) => {
  const rtf = [
    { name: '\\u escapes', build: (n: number) => repeat('\\u103?', n) },
    { name: 'group depth', build: (n: number) => repeat('{\\uc9 ', n) },
    { name: 'hex escapes', build: (n: number) => repeat("\\'6", n) },
    { name: 'long control word', build: (n: number) => `\\${repeat('a', n)}` },
    { name: 'long parameter', build: (n: number) => `\\u${repeat('9', n)}` },
    { name: '\\bin', build: (n: number) => repeat('\\bin1 x', n) },
  ];
  assertLinear(t, rtf, rtfAsShown, (r, label) => t.ok(r.length <= 256 * KiB, `${label}: bounded output`));
  const text = [
    { name: 'format characters', build: (n: number) => repeat('a\u200b\u00ad\u00a0', n) },
    { name: 'full-width letters', build: (n: number) => repeat('ｇ１', n) },
    { name: 'combining marks', build: (n: number) => `a${repeat('\u0301\u0323', n)}` },
    { name: 'runs of combining marks just under the cut', build: (n: number) => repeat(`a${'\u0301\u0323'.repeat(4)}`, n) },
  ];
  assertLinear(t, text, withoutUnseenChars, (r, label) => t.ok(r.length <= 256 * KiB, `${label}: bounded output`));
  const overrides = [
    { name: 'override starts', build: (n: number) => repeat('\u202e', n) },
    { name: 'one long override', build: (n: number) => `\u202e${repeat('ab', n)}` },
    { name: 'overrides and pops', build: (n: number) => repeat('\u202ea\u202c', n) },
  ];
  assertLinear(t, overrides, overriddenRuns, (r, label) => t.ok(r.length <= 256 * KiB, `${label}: bounded output`));
});

t.test('linear: message/rfc822 as shown', async (t) => {
  const messages = [
    { name: 'boundary lines', build: (n: number) => `Content-Type: multipart/mixed; boundary=b\r\n\r\n${repeat('--b\r\n', n)}` },
    { name: 'false boundaries', build: (n: number) => `Content-Type: multipart/mixed; boundary=bb\r\n\r\n${repeat('x--b', n)}` },
    { name: 'encoded-word starts', build: (n: number) => `Subject: ${repeat('=?u?B?', n)}\r\n\r\n` },
    { name: 'encoded words', build: (n: number) => `Subject: ${repeat('=?utf-8?Q?a=41?= ', n)}\r\n\r\n` },
    { name: 'quoted-printable', build: (n: number) => `Content-Transfer-Encoding: quoted-printable\r\n\r\n${repeat('=4=\n=', n)}` },
    { name: 'folded header lines', build: (n: number) => `X: a${repeat('\r\n b', n)}\r\n\r\n` },
    { name: 'header lines without colon', build: (n: number) => repeat('abc\n', n) },
    { name: 'nested messages', build: (n: number) => `${'Content-Type: message/rfc822\r\n\r\n'.repeat(6)}${repeat('=?', n)}` },
    { name: 'nested multiparts', build: (n: number) => `${'Content-Type: multipart/mixed; boundary=q\r\n\r\n--q\r\n'.repeat(6)}\r\n${repeat('--q-', n)}` },
  ];
  assertLinear(t, messages, (s) => attachmentView(file('message/rfc822', s), MAX_SCANNED_CHARS), (r, label) => t.ok((r.shown[0]?.length ?? 0) <= MAX_SCANNED_CHARS + 1, `${label}: bounded view`));
});
