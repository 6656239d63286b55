/**
 * Real documents built byte by byte for the attachment-text tests: PDFs hand-written (one text
 * object per page, a correct cross-reference table), DOCX and XLSX zipped with fflate with the
 * parts Word and Excel write ([Content_Types].xml, relationships, the document or workbook).
 */
import { strToU8, zipSync, type Zippable } from 'fflate';

/** Escapes a PDF literal string. */
const pdfString = (s: string) => `(${s.replace(/[\\()]/g, (c) => `\\${c}`)})`;

/**
 * A PDF of one page per entry of `pages`, each showing its lines in Helvetica. `extra` adds
 * trailer entries (an /Encrypt reference) and objects; `kids` overrides the page tree's kids.
 */
export function pdf(pages: string[][], opts: { trailer?: string; objects?: string[]; pagesKids?: string; pagesCount?: number } = {}): Buffer {
  const objects: string[] = [];
  const pageIds: number[] = [];
  // 1: catalog, 2: pages, 3: font, then per page: page + content
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[3] = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  let next = 4;
  for (const lines of pages) {
    const pageId = next++;
    const contentId = next++;
    pageIds.push(pageId);
    const stream = ['BT', '/F1 12 Tf', '72 720 Td', '14 TL', ...lines.map((l, i) => `${i === 0 ? '' : 'T* '}${pdfString(l)} Tj`), 'ET'].join('\n');
    objects[pageId] = `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${contentId} 0 R >>`;
    objects[contentId] = `<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`;
  }
  for (const extra of opts.objects ?? []) objects[next++] = extra;
  objects[2] = `<< /Type /Pages /Kids ${opts.pagesKids ?? `[${pageIds.map((id) => `${id} 0 R`).join(' ')}]`} /Count ${opts.pagesCount ?? pageIds.length} >>`;
  let body = '%PDF-1.4\n%\u00e2\u00e3\u00cf\u00d3\n';
  const offsets: number[] = [];
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = Buffer.byteLength(body, 'latin1');
    body += `${id} 0 obj\n${objects[id]}\nendobj\n`;
  }
  const xref = Buffer.byteLength(body, 'latin1');
  body += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let id = 1; id < objects.length; id++) body += `${String(offsets[id]).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length} /Root 1 0 R ${opts.trailer ?? ''} >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

/** The id the first object of `opts.objects` gets in a PDF of `pageCount` pages. */
export const pdfExtraObjectId = (pageCount: number) => 4 + 2 * pageCount;

const xmlEscape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

const RELS_NS = 'http://schemas.openxmlformats.org/package/2006/relationships';
const OFFICE_DOC = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument';

/** The XML of a DOCX body whose paragraphs are `paragraphs` (a tab in a paragraph becomes `w:tab`). */
export function documentXml(paragraphs: string[]): string {
  const runs = (p: string) =>
    p
      .split('\t')
      .map((part) => `<w:r><w:t xml:space="preserve">${xmlEscape(part)}</w:t></w:r>`)
      .join('<w:r><w:tab/></w:r>');
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${paragraphs.map((p) => `<w:p>${runs(p)}</w:p>`).join('')}<w:p><w:r><w:delText>deleted words</w:delText></w:r></w:p></w:body></w:document>`;
}

/** A DOCX whose `word/document.xml` is `documentXmlText` (raw bytes allowed: a bomb, a hostile part). */
export function docx(document: string | Uint8Array, opts: { level?: number; extraEntries?: Zippable } = {}): Uint8Array {
  return zipSync(
    {
      '[Content_Types].xml': strToU8(
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
      ),
      '_rels/.rels': strToU8(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="${RELS_NS}"><Relationship Id="rId1" Type="${OFFICE_DOC}" Target="word/document.xml"/></Relationships>`),
      ...(opts.extraEntries ?? {}),
      'word/document.xml': [typeof document === 'string' ? strToU8(document) : document, { level: (opts.level ?? 6) as 6 }],
    },
    { level: 6 },
  );
}

/** An XLSX with one worksheet per entry: rows of cells; strings go to the shared strings, numbers stay numbers. */
export function xlsx(sheets: { name: string; rows: (string | number)[][] }[]): Uint8Array {
  const shared: string[] = [];
  const col = (i: number) => String.fromCharCode(65 + i);
  const files: Zippable = {};
  sheets.forEach((sheet, s) => {
    const rows = sheet.rows
      .map((row, r) => {
        const cells = row
          .map((v, c) => {
            const ref = `${col(c)}${r + 1}`;
            if (typeof v === 'number') return `<c r="${ref}"><v>${v}</v></c>`;
            shared.push(v);
            return `<c r="${ref}" t="s"><v>${shared.length - 1}</v></c>`;
          })
          .join('');
        return `<row r="${r + 1}">${cells}</row>`;
      })
      .join('');
    files[`xl/worksheets/sheet${s + 1}.xml`] = strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${rows}</sheetData></worksheet>`,
    );
  });
  return zipSync({
    '[Content_Types].xml': strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>${sheets.map((_, s) => `<Override PartName="/xl/worksheets/sheet${s + 1}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`).join('')}<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`,
    ),
    '_rels/.rels': strToU8(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="${RELS_NS}"><Relationship Id="rId1" Type="${OFFICE_DOC}" Target="xl/workbook.xml"/></Relationships>`),
    'xl/workbook.xml': strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>${sheets.map((sh, s) => `<sheet name="${xmlEscape(sh.name)}" sheetId="${s + 1}" r:id="rId${s + 1}"/>`).join('')}</sheets></workbook>`,
    ),
    'xl/_rels/workbook.xml.rels': strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="${RELS_NS}">${sheets.map((_, s) => `<Relationship Id="rId${s + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet${s + 1}.xml"/>`).join('')}</Relationships>`,
    ),
    ...files,
    'xl/sharedStrings.xml': strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="${shared.length}" uniqueCount="${shared.length}">${shared.map((v) => `<si><t>${xmlEscape(v)}</t></si>`).join('')}</sst>`,
    ),
  });
}
