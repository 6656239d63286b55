/**
 * Reply extraction on bodies built to defeat it (issue 16, finding 3): the patterns that made the
 * old regexes quadratic, at growing sizes up to several times EXTRACT_MAX_CHARS. The results
 * must stay correct; that the work stays linear is shown by the sizes finishing at all (the old
 * code needed minutes for the larger ones) and by test/security/inbound-hostile-bodies.test.ts.
 */
import t, { type Test } from 'tap';
import { deriveText, EXTRACT_MAX_CHARS, extractHtml, extractText, previewOf, PREVIEW_LENGTH } from '../../src/mail/extract.js';

const SIZES = [16 * 1024, 256 * 1024, 2 * 1024 * 1024];

/** Compares without tap's diff, which is itself quadratic on megabyte strings. */
function same(t: Test, actual: string | null, expected: string, message: string): void {
  t.ok(actual === expected, message, { actualLength: actual?.length ?? null, expectedLength: expected.length, actualStart: actual?.slice(0, 60) ?? null });
}

t.test('text: runs of whitespace, unfinished attributions and quote chains give the right new part', async (t) => {
  for (const size of SIZES) {
    const spaces = `Hello there.${' '.repeat(size)}x`;
    const expected = spaces.length > EXTRACT_MAX_CHARS ? 'Hello there.' : spaces;
    same(t, extractText(spaces), expected, `${size}: a long inner run of spaces is kept, or cut at the limit and trimmed`);

    const trailing = `Reply.${' \t\n'.repeat(size / 3)}`;
    same(t, extractText(trailing), 'Reply.', `${size}: trailing whitespace is trimmed`);

    const attribution = `Yes.\n${`On ${'schrieb wrote '.repeat(size / 15)}\n`.repeat(2)}`;
    same(t, extractText(attribution), attribution.slice(0, EXTRACT_MAX_CHARS).trimEnd(), `${size}: an over-long line that looks like an attribution is body text`);

    const quotes = `My answer.\n${'> '.repeat(size / 2)}q\n${'> > > old\n'.repeat(size / 10)}`;
    same(t, extractText(quotes), 'My answer.', `${size}: quote chains are dropped`);

    const real = `Sure.\n\nOn Mon, 3 Mar 2025 at 10:00, A <a@b.c> wrote:\n${'> old line\n'.repeat(size / 11)}`;
    same(t, extractText(real), 'Sure.', `${size}: a real attribution before a long history still cuts`);

    const onlyQuoted = `${'> q\n'.repeat(size / 4)}`;
    same(t, extractText(onlyQuoted), onlyQuoted.slice(0, EXTRACT_MAX_CHARS).trim(), `${size}: an all-quoted body keeps its (bounded) text`);
  }
});

t.test('html: unterminated tags, quotes and comments, and deep nesting are scanned once', async (t) => {
  for (const size of SIZES) {
    const lt = `<p>New</p>${'<a '.repeat(size / 3)}`;
    same(t, extractHtml(lt), lt.length > EXTRACT_MAX_CHARS ? '<p>New</p>' : lt.trimEnd(), `${size}: a tag left open swallows the rest, as in a browser`);

    const quote = `<p>New</p><div class="gmail_quote">old</div>${'<a x="'.repeat(size / 7)}`;
    same(t, extractHtml(quote), quote.length > EXTRACT_MAX_CHARS ? '<p>New</p>' : quote.replace('<div class="gmail_quote">old</div>', ''), `${size}: an unclosed attribute quote`);

    const comments = `<p>New</p>${'<!--'.repeat(size / 4)}`;
    same(t, extractHtml(comments), comments.length > EXTRACT_MAX_CHARS ? '<p>New</p>' : comments, `${size}: unclosed comments`);

    const deep = `<p>New</p>${'<div>'.repeat(size / 10)}${'</b>'.repeat(size / 8)}`;
    t.ok(extractHtml(deep)!.startsWith('<p>New</p><div><div>'), `${size}: thousands of open elements and stray closes`);

    // As deep as the open-element limit allows, with a long quoted text inside.
    const nested = `<p>New</p><blockquote type="cite">${'<blockquote type="cite">'.repeat(900)}${'old '.repeat(size / 8)}${'</blockquote>'.repeat(900)}</blockquote><p>After</p>`;
    same(t, extractHtml(nested), nested.length > EXTRACT_MAX_CHARS ? '<p>New</p>' : '<p>New</p><p>After</p>', `${size}: a deep quote container is removed whole`);

    const outlook = `<div><p>Approved.</p><div id="divRplyFwdMsg">${'<p>old</p>'.repeat(size / 10)}</div></div>`;
    same(t, extractHtml(outlook), '<div><p>Approved.</p></div>', `${size}: an Outlook header cuts the rest and open elements are closed`);
  }
});

t.test('the documented extraction rules still hold', async (t) => {
  t.equal(extractText('Sounds good.\n\n-----Original Message-----\nFrom: x\n\nold'), 'Sounds good.');
  t.equal(extractText('Yes.\n\nAm 09.03.2025 um 20:00 schrieb Agent <a@b.c>:\n> Frage'), 'Yes.');
  t.equal(extractText('Oui.\n\nLe 9 mars 2025, Agent <a@b.c> a écrit :\n> Question'), 'Oui.');
  t.equal(extractText('Ok.\n\nOn Mon, 3 Mar 2025 at 10:00, Someone Long\n<someone@example.org> wrote:  \n> q'), 'Ok.', 'a wrapped attribution with trailing spaces');
  t.equal(extractText('\n\n  \nHi\n> q'), 'Hi', 'leading blank lines are dropped');
  t.equal(extractText('Thanks\n\n________________\nFrom: A\nSent: Monday\n\nold'), 'Thanks');
  t.equal(extractHtml('<p title="a>b">x</p><!-- <div class="gmail_quote"> -->'), '<p title="a>b">x</p><!-- <div class="gmail_quote"> -->');
  t.equal(extractHtml('<p>Hi</p><DIV CLASS=yahoo_quoted><div>old</div></DIV><p>Bye</p>'), '<p>Hi</p><p>Bye</p>', 'unquoted attribute values and upper case');
  t.equal(extractHtml('<style>p{}</style><blockquote type="cite">q</blockquote>'), '<style>p{}</style><blockquote type="cite">q</blockquote>', 'style text is not visible text');
  t.equal(extractHtml('<p>&nbsp;</p><blockquote type="cite">q</blockquote>'), '<p>&nbsp;</p><blockquote type="cite">q</blockquote>', '&nbsp; alone is not visible text');
});

t.test('preview and the derived fields are bounded whatever the body', async (t) => {
  const body = `${' \n'.repeat(600)}${'word '.repeat(200_000)}`;
  const preview = previewOf(body)!;
  t.ok([...preview].length <= PREVIEW_LENGTH + 1 && preview.endsWith('…'), 'preview is at most PREVIEW_LENGTH characters and an ellipsis');
  t.ok(preview.startsWith('word word'));
  const derived = deriveText({ text: body, html: `<p>${'x'.repeat(EXTRACT_MAX_CHARS * 2)}</p>`, headers: [['subject', `Subject: ${'s'.repeat(100_000)}`]] });
  t.ok(derived.extractedText!.length <= EXTRACT_MAX_CHARS, 'extracted text is at most EXTRACT_MAX_CHARS');
  t.ok(derived.extractedHtml!.length === EXTRACT_MAX_CHARS + '</p>'.length && derived.extractedHtml!.endsWith('x</p>'), 'extracted html is the first EXTRACT_MAX_CHARS, its open element closed');
  t.equal((JSON.parse(derived.headersJson) as Record<string, string>).Subject.length, 100_000);
});
