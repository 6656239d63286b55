/**
 * The new part of a reply: `extracted_text` and `extracted_html` are the message body with the
 * quoted history removed, so an agent reads what the sender actually wrote this time.
 *
 * Text: cut at the first reply attribution ("On … wrote:", wrapped over up to three lines, and
 * its common translations), an Outlook "-----Original Message-----" line or an Outlook header
 * block ("From:" followed by "Sent:"/"Date:"), then drop the remaining `>` quoted lines.
 * HTML: drop Gmail, Apple Mail, Thunderbird and Yahoo quote containers, and cut everything from
 * an Outlook reply header to the end. When stripping leaves nothing, the whole body is kept,
 * because a message that is only a quotation still has to show something.
 */

const ATTRIBUTION_END = [
  /\bwrote:\s*$/i,
  /\bschrieb\b.*:\s*$/i,
  /\ba écrit\s*:\s*$/i,
  /\bescribió:\s*$/i,
  /\bscritto:\s*$/i,
  /\bschreef\b.*:\s*$/i,
];
const ATTRIBUTION_START = /^\s*(On|Am|Le|El|Il|Op)\s/;
const ORIGINAL_MESSAGE = /^\s*-{2,}\s*(Original Message|Ursprüngliche Nachricht|Message d'origine|Mensaje original)\s*-{2,}\s*$/i;
const OUTLOOK_RULE = /^\s*_{10,}\s*$/;
const HEADER_FROM = /^\s*\*?(From|Von|De)\*?:\s*\S/;
const HEADER_SENT = /^\s*\*?(Sent|Date|Gesendet|Envoyé|Enviado)\*?:\s*\S/;

function isAttribution(lines: string[], i: number): number {
  if (!ATTRIBUTION_START.test(lines[i])) return 0;
  // Clients wrap long attributions; accept the end marker within three lines.
  let joined = '';
  for (let n = 0; n < 3 && i + n < lines.length; n++) {
    joined += (n ? ' ' : '') + lines[i + n].trim();
    if (ATTRIBUTION_END.some((re) => re.test(joined))) return n + 1;
  }
  return 0;
}

function isOutlookHeader(lines: string[], i: number): boolean {
  if (!HEADER_FROM.test(lines[i])) return false;
  if (i > 0 && lines[i - 1].trim() !== '' && !OUTLOOK_RULE.test(lines[i - 1])) return false;
  for (let n = 1; n <= 3 && i + n < lines.length; n++) if (HEADER_SENT.test(lines[i + n])) return true;
  return false;
}

/** Where the quoted history starts, as a line index; lines.length when there is none. */
function historyStart(lines: string[]): number {
  for (let i = 0; i < lines.length; i++) {
    if (isAttribution(lines, i) > 0) return i;
    if (ORIGINAL_MESSAGE.test(lines[i])) return i;
    if (OUTLOOK_RULE.test(lines[i]) && lines.slice(i + 1, i + 3).some((l) => HEADER_FROM.test(l))) return i;
    if (isOutlookHeader(lines, i)) return i;
  }
  return lines.length;
}

export function extractText(text: string | null): string | null {
  if (text === null) return null;
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const kept = lines.slice(0, historyStart(lines)).filter((l) => !/^\s*>/.test(l));
  const result = kept.join('\n').replace(/\s+$/, '').replace(/^\s*\n/, '');
  return result.trim() === '' ? text.trim() : result;
}

// ---- HTML ----

const TOKEN = /<!--[\s\S]*?(?:-->|$)|<(\/?)([a-zA-Z][\w:-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g;
const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr']);

function attr(attrs: string, name: string): string | null {
  const m = new RegExp(`(?:^|\\s)${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s"'>]+))`, 'i').exec(attrs);
  return m ? (m[1] ?? m[2] ?? m[3] ?? '') : null;
}

function classes(attrs: string): string[] {
  return (attr(attrs, 'class') ?? '').split(/\s+/).filter(Boolean);
}

/** An element whose whole subtree is quoted history. */
function isQuoteContainer(tag: string, attrs: string): boolean {
  const cls = classes(attrs);
  if (cls.includes('gmail_quote') || cls.includes('gmail_quote_container') || cls.includes('yahoo_quoted') || cls.includes('moz-cite-prefix')) return true;
  return tag === 'blockquote' && (attr(attrs, 'type') ?? '').toLowerCase() === 'cite';
}

/** An Outlook reply header: it and everything after it is history. */
function isHistoryMarker(tag: string, attrs: string): boolean {
  const id = (attr(attrs, 'id') ?? '').toLowerCase();
  if (id === 'divrplyfwdmsg' || id === 'appendonsend' || id === 'stopspelling') return true;
  if (classes(attrs).includes('OutlookMessageHeader')) return true;
  const style = (attr(attrs, 'style') ?? '').toLowerCase();
  return tag === 'div' && /border-top:\s*solid\s*#(e1e1e1|b5c4df)/.test(style);
}

function visibleText(html: string): string {
  return html.replace(/<!--[\s\S]*?-->/g, '').replace(/<(style|script)\b[\s\S]*?<\/\1>/gi, '').replace(/<[^>]*>/g, '').replace(/&nbsp;/gi, ' ').trim();
}

export function extractHtml(html: string | null): string | null {
  if (html === null) return null;
  const stack: string[] = [];
  const removed: [number, number][] = [];
  /** Index in `stack` of the quote container being removed, or -1. */
  let removing = -1;
  let removeStart = 0;
  let cut = html.length;
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(html); m; m = TOKEN.exec(html)) {
    const [token, closing, rawName, attrs = ''] = m;
    if (rawName === undefined) continue; // a comment
    const name = rawName.toLowerCase();
    if (closing) {
      const at = stack.lastIndexOf(name);
      if (at < 0) continue;
      stack.length = at;
      if (removing >= 0 && at <= removing) {
        removed.push([removeStart, m.index + token.length]);
        removing = -1;
      }
      continue;
    }
    if (removing < 0 && isHistoryMarker(name, attrs)) {
      cut = m.index;
      break;
    }
    if (VOID.has(name) || token.endsWith('/>')) continue;
    if (removing < 0 && isQuoteContainer(name, attrs)) {
      removing = stack.length;
      removeStart = m.index;
    }
    stack.push(name);
  }
  if (removing >= 0) {
    removed.push([removeStart, cut]);
    stack.length = removing;
  }
  let out = '';
  let pos = 0;
  for (const [start, end] of removed) {
    out += html.slice(pos, start);
    pos = end;
  }
  out += html.slice(pos, cut);
  // A cut leaves elements open; close them so the fragment stays well formed.
  if (cut < html.length) out += stack.reverse().map((name) => `</${name}>`).join('');
  return visibleText(out) === '' ? html : out.trim();
}
