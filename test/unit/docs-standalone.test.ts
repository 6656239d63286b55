/**
 * The README, CHANGELOG and docs/*.md stand alone (issue 33 §7): a reader has only the repository,
 * so they cite no section of the design documents it does not contain ("spec §4.13",
 * "ARCHITECTURE §5") and every link either leaves for the web (http, https, mailto) or names a
 * file of the repository that exists — with a heading of that name when it carries an anchor.
 * Section signs are allowed only after an RFC or an issue number ("RFC 5321 §5.1").
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function userDocs(): string[] {
  const top = ['README.md', 'CHANGELOG.md'].filter((f) => fs.existsSync(path.join(root, f)));
  const docs = fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => path.join('docs', f));
  return [...top, ...docs];
}

/** Fenced code blocks hold examples, not links: blank them, keeping line numbers. */
function withoutFences(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ' '));
}

/** Inline code spans are not links either. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1/g, (span) => span.replace(/[^\n]/g, ' '));
}

/** GitHub's heading anchors (github-slugger): lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of withoutFences(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const rendered = m[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '');
    const base = rendered.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of markdown.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1]);
  return anchors;
}

/** Targets of inline links and images, and of reference definitions, with their line numbers. */
function linkTargets(markdown: string): { target: string; line: number }[] {
  const text = withoutCodeSpans(withoutFences(markdown));
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  const out: { target: string; line: number }[] = [];
  for (const m of text.matchAll(/!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) {
    out.push({ target: m[1], line: lineOf(m.index) });
  }
  for (const m of text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)) {
    out.push({ target: m[1], line: lineOf(m.index) });
  }
  return out;
}

/** Section signs a reader can follow: those of an RFC or an issue ("issue 20 §2–§3", "RFC 6749 §4.1.2.1"). */
const CITABLE_SECTIONS = /\b(?:RFC \d+|issue \d+) §[\d.]+(?:(?:–|-|, | and )§?[\d.]+)*/g;

/** What keeps `file` (a repository path) from standing alone; `read` gives another file's text. */
export function problemsIn(file: string, text: string, exists: (p: string) => boolean, read: (p: string) => string): string[] {
  const problems: string[] = [];
  text.split('\n').forEach((lineText, i) => {
    const where = `${file}:${i + 1}`;
    if (/spec §/i.test(lineText)) problems.push(`${where}: cites "spec §": ${lineText.trim()}`);
    else if (/ARCHITECTURE/.test(lineText)) problems.push(`${where}: cites ARCHITECTURE: ${lineText.trim()}`);
    else if (/interface\.md/.test(lineText)) problems.push(`${where}: names the spec file: ${lineText.trim()}`);
    else if (lineText.replace(CITABLE_SECTIONS, '').includes('§')) problems.push(`${where}: a "§" that is not an RFC's or an issue's: ${lineText.trim()}`);
  });
  for (const { target, line } of linkTargets(text)) {
    const where = `${file}:${line}`;
    if (/^(https?|mailto):/i.test(target)) continue;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) { problems.push(`${where}: link with scheme: ${target}`); continue; }
    if (target.startsWith('/') || target.startsWith('\\')) { problems.push(`${where}: absolute link: ${target}`); continue; }
    const hash = target.indexOf('#');
    const filePart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
    const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
    const resolved = filePart === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), filePart));
    if (resolved === '..' || resolved.startsWith('../')) { problems.push(`${where}: link leaves the repository: ${target}`); continue; }
    if (filePart !== '' && !exists(resolved)) { problems.push(`${where}: link to a missing file: ${target}`); continue; }
    const targetText = () => (filePart === '' ? text : read(resolved));
    if (anchor !== null && resolved.endsWith('.md') && !headingAnchors(targetText()).has(anchor)) {
      problems.push(`${where}: no heading for the anchor: ${target}`);
    }
  }
  return problems;
}

const onDisk = (p: string) => fs.existsSync(path.join(root, p));
const readOnDisk = (p: string) => fs.readFileSync(path.join(root, p), 'utf8');

t.test('the checker catches what it is meant to catch', async (t) => {
  const files: Record<string, string> = {
    'docs/a.md': '# A page\n\n## Who sees what (owner)\n\n## Token — `POST /oauth/token`\n\n## Notes\n\n## Notes\n',
    'README.md': '# svc\n',
  };
  const exists = (p: string) => p in files || p === 'docs' || p === 'bench/REPORT.md';
  const read = (p: string) => files[p];
  const check = (text: string) => problemsIn('docs/b.md', text, exists, read);

  t.same(check('Fine: [a](a.md), [b](a.md#who-sees-what-owner), [c](a.md#token--post-oauthtoken), [d](a.md#notes-1), [e](https://example.com/x), [f](../bench/REPORT.md), [g](../README.md), RFC 5321 §5.1, issue 20 §2–§3, issue 20 §2, §3.'), []);
  t.same(check('```\n[x](/etc/passwd) spec-like § in code\n```\n'.replace('§', '')), [], 'fenced code is not scanned for links');
  t.same(check('`[x](/abs)`'), [], 'a code span is not a link');

  const one = (text: string, pattern: RegExp) => {
    const problems = check(text);
    t.equal(problems.length, 1, `${JSON.stringify(text)} → ${JSON.stringify(problems)}`);
    t.match(problems[0] ?? '', pattern);
  };
  one('Owner only (spec §4.12).', /spec §/);
  one('See Spec §2.5.', /spec §/);
  one('ARCHITECTURE §5 names them.', /ARCHITECTURE/);
  one('The contract is `spec/interface.md`.', /spec file/);
  one('Limits (§8) apply.', /§/);
  one('[x](../../outside.md)', /leaves the repository/);
  one('[x](/work/shared/design/notes.md)', /absolute/);
  one('[x](file:///work/x.md)', /scheme/);
  one('[x](missing.md)', /missing file/);
  one('[x](a.md#no-such-heading)', /anchor/);
  one('[x](#local)', /anchor/);
  t.same(check('## Local\n\n[x](#local)'), [], 'an anchor in the same file');
  one('[multi\nline](missing.md)', /missing file/);
  one('[ref]: /abs/path.md', /absolute/);
});

t.test('README, CHANGELOG and docs stand alone', async (t) => {
  const files = userDocs();
  t.ok(files.includes('README.md') && files.length > 10, 'the documents are found');
  const problems = files.flatMap((f) => problemsIn(f, readOnDisk(f), onDisk, readOnDisk));
  t.same(problems, [], problems.join('\n'));
});
