/**
 * The text svc renders for HTML-only mail (src/mail/html-text.ts), which replaced mailparser's
 * html-to-text step after 2 MB of nested `<div>` took 52 s there (issue 32). What a reader of
 * `text` needs from ordinary mail, and linear time on the shapes that made the old step quadratic.
 */
import t from 'tap';
import { htmlText } from '../../src/mail/html-text.js';
import { assertLinear } from '../helpers/linear.js';
import { exceedsAddressHeaderLimits, MAX_ADDRESS_HEADER_BYTES, MAX_OPEN_ADDRESS_GROUPS } from '../../src/mail/address-groups.js';

t.test('ordinary mail reads as text: paragraphs, line breaks, lists, quotes, links, entities', async (t) => {
  t.equal(
    htmlText('<html><head><title>Digest</title><style>p{color:red}</style></head><body><h1>Gardening tips</h1><p>Plant <b>tomatoes</b> after the last fr&amp;ost.</p><p>Water deeply,\n   not daily.</p></body></html>'),
    'Gardening tips\n\nPlant tomatoes after the last fr&ost.\n\nWater deeply, not daily.',
  );
  t.equal(htmlText('<div>Hi Bob,</div><div>Line<br>break</div>'), 'Hi Bob,\nLine\nbreak');
  t.equal(htmlText('<ul><li>one</li><li>two</li></ul><ol><li>a</li><li>b</li></ol>'), '* one\n* two\n\n1. a\n2. b');
  t.equal(htmlText('<p>My answer.</p><blockquote>old<br>older</blockquote>'), 'My answer.\n\n> old\n> older', 'quoted lines are marked, so reply extraction drops them');
  t.equal(htmlText('See <a href="https://x.example/a?b=1&amp;c=2">the doc</a> or <a href="https://y.example">https://y.example</a>.'), 'See the doc [https://x.example/a?b=1&c=2] or https://y.example.');
  t.equal(htmlText('<a href="javascript:alert(1)">click</a> <a href="data:text/html,x">here</a>'), 'click here', 'only web and mail addresses are shown as targets');
  t.equal(htmlText('<pre>  code\n    indented</pre>'), 'code\n    indented', 'pre keeps its layout (the whole text is trimmed)');
  t.equal(htmlText('<table><tr><td>A</td><td>B</td></tr><tr><td>C</td><td>D</td></tr></table>'), 'A B\nC D');
  t.equal(htmlText('a < b &lt; c <!-- hidden --> d <script>var x = "<p>";</script>e &#x41;&#66; &unknown;'), 'a < b < c d e AB &unknown;');
  t.equal(htmlText('<img src="x.png" alt="Logo"> Welcome'), 'Logo Welcome');
});

t.test('hostile HTML: never throws, and a tag or comment left open swallows the rest as in a browser', async (t) => {
  t.equal(htmlText('<p>Hello.</p><div title="never closed>text'), 'Hello.');
  t.equal(htmlText('<p>Hello.</p><!-- never closed <p>text'), 'Hello.');
  t.equal(htmlText('<p>Hello.</p><style>p{}'), 'Hello.', 'an unclosed style hides the rest');
  t.equal(htmlText(`${'<blockquote>'.repeat(100)}deep`), `${'> '.repeat(8)}deep`, 'quote marks are bounded');
  t.equal(htmlText(`${'<ol>'.repeat(100)}<li>x`), '* x', 'lists deeper than tracked still render, their items bulleted');
});

const KIB = 1024;
const hostile = [
  { name: 'nested div', build: (n: number) => '<div>'.repeat(n / 5) },
  { name: 'nested div with text', build: (n: number) => '<div>x'.repeat(n / 6) },
  { name: 'nested table', build: (n: number) => '<table><tr><td>x'.repeat(n / 16) },
  { name: 'nested ul', build: (n: number) => '<ul><li>x'.repeat(n / 9) },
  { name: 'nested blockquote and br', build: (n: number) => '<blockquote>x<br>'.repeat(n / 17) },
  { name: 'links inside links', build: (n: number) => '<a href="https://x.example/">'.repeat(n / 28) },
  { name: 'unclosed tags', build: (n: number) => '<a '.repeat(n / 3) },
  { name: 'attribute flood', build: (n: number) => `<div ${'a=1 '.repeat(n / 4)}>x</div>` },
  { name: 'unclosed styles', build: (n: number) => '<style></x'.repeat(n / 10) },
  { name: 'entities', build: (n: number) => '&amp;&#x41;&bogus;'.repeat(n / 18) },
  { name: 'pre lines', build: (n: number) => `<pre>${'x\r\n'.repeat(n / 3)}</pre>` },
];

t.test('HTML to text is linear on hostile HTML', async (t) => {
  assertLinear(t, hostile, htmlText, (text, label) => t.ok(typeof text === 'string', `${label}: a string`));
});

t.test('address headers that would cost the parser far more than their size are refused before it reads them', async (t) => {
  const mime = (headers: string) => Buffer.from(`${headers}\r\nSubject: s\r\n\r\nbody: a:b:c:d:e:f:g:h:i:j\r\n`);
  t.notOk(exceedsAddressHeaderLimits(mime('From: a@b.example\r\nTo: undisclosed-recipients:;')), 'one group');
  t.notOk(exceedsAddressHeaderLimits(mime('To: "Team: a" <a@b.example>, "Team: b" <b@b.example>')), 'a few colons in names');
  t.notOk(exceedsAddressHeaderLimits(mime(`To: ${'g: a@b.example;'.repeat(100)}`)), 'many closed groups');
  t.notOk(exceedsAddressHeaderLimits(mime(`X-Note: ${':'.repeat(1000)}`)), 'other headers are not address headers');
  t.ok(exceedsAddressHeaderLimits(mime(`To: ${'g: '.repeat(MAX_OPEN_ADDRESS_GROUPS + 1)}a@b.example`)), 'nested groups');
  t.ok(exceedsAddressHeaderLimits(mime(`Cc: a@b.example,\r\n ${':'.repeat(MAX_OPEN_ADDRESS_GROUPS + 1)}`)), 'on a continuation line');
  const part = `--b\r\nContent-Type: text/plain\r\nReply-To: ${':'.repeat(MAX_OPEN_ADDRESS_GROUPS + 1)}\r\n\r\nx\r\n`;
  t.ok(exceedsAddressHeaderLimits(Buffer.from(`From: a@b.example\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n${part}--b--\r\n`)), 'in a part\'s headers');
  t.ok(exceedsAddressHeaderLimits(mime(`To: ${'a@b.example, '.repeat(MAX_ADDRESS_HEADER_BYTES / 13 + 1)}`)), 'more than the bound in total');
  assertLinear(
    t,
    [
      { name: 'header lines without a colon', build: (n: number) => Buffer.from(`X: y\r\n${'a'.repeat(40)}\r\n`.repeat(n / 48)) },
      { name: 'parts with address headers', build: (n: number) => Buffer.from(`--b\r\nTo: a@b.example, c@d.example\r\n\r\nx\r\n`.repeat(n / 42)) },
    ],
    exceedsAddressHeaderLimits,
    (refused, label) => t.equal(refused, false, `${label}: passes`),
  );
});
