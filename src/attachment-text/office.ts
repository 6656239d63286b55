/**
 * The text of Office Open XML files. DOCX: the runs of `word/document.xml` (`w:t`), a line per
 * paragraph, tabs and breaks as written; deleted text and field codes are not text. XLSX: each
 * worksheet in workbook order under its name, a line per row, cells tab-separated (shared strings,
 * inline strings, numbers and booleans as stored; formulas' cached values). Synchronous and linear
 * in the inflated XML, which zip.ts bounds.
 */
import { readZipEntries } from './zip.js';
import { readXml } from './xml.js';
import { MAX_CELL_GAP, MAX_SHEETS } from './limits.js';
import { ExtractionStop } from './stop.js';
import type { TextSink } from './text-sink.js';

const DOCUMENT = 'word/document.xml';

export function docxText(file: Uint8Array, sink: TextSink): void {
  const parts = readZipEntries(file, (name) => name === DOCUMENT);
  const xml = parts.get(DOCUMENT);
  if (!xml) throw new ExtractionStop('failed');
  let inText = false;
  readXml(xml, {
    open(name) {
      if (name === 't') inText = true;
      else if (name === 'tab') sink.write('\t');
      else if (name === 'br' || name === 'cr') sink.newline();
    },
    close(name) {
      if (name === 't') inText = false;
      else if (name === 'p') sink.newline();
      else if (name === 'tc') sink.write('\t');
    },
    text(text) {
      if (inText) sink.write(text);
    },
    stopped: () => sink.full,
  });
}

const WORKBOOK = 'xl/workbook.xml';
const WORKBOOK_RELS = 'xl/_rels/workbook.xml.rels';
const SHARED_STRINGS = 'xl/sharedStrings.xml';
const SHEET = /^xl\/worksheets\/sheet\d{1,6}\.xml$/;

export function xlsxText(file: Uint8Array, sink: TextSink): void {
  let sheetsSeen = 0;
  const parts = readZipEntries(file, (name) => name === WORKBOOK || name === WORKBOOK_RELS || name === SHARED_STRINGS || (SHEET.test(name) && ++sheetsSeen <= MAX_SHEETS));
  const workbook = parts.get(WORKBOOK);
  if (!workbook) throw new ExtractionStop('failed');
  const shared = sharedStrings(parts.get(SHARED_STRINGS));
  for (const sheet of sheetOrder(workbook, parts.get(WORKBOOK_RELS), parts)) {
    if (sink.full) return;
    sink.write(`${sheet.name}`);
    sink.newline();
    sheetRows(sheet.xml, shared, sink);
    sink.newline();
    sink.newline();
  }
}

/** The strings of `xl/sharedStrings.xml`, in order: each `si`'s `t` runs, without phonetic guides (`rPh`). */
function sharedStrings(xml: Uint8Array | undefined): string[] {
  const strings: string[] = [];
  if (!xml) return strings;
  let current: string[] | null = null;
  let inText = false;
  let inPhonetic = 0;
  readXml(xml, {
    open(name) {
      if (name === 'si') current = [];
      else if (name === 't') inText = true;
      else if (name === 'rPh') inPhonetic++;
    },
    close(name) {
      if (name === 'si' && current) {
        strings.push(current.join(''));
        current = null;
      } else if (name === 't') inText = false;
      else if (name === 'rPh') inPhonetic--;
    },
    text(text) {
      if (inText && inPhonetic === 0 && current) current.push(text);
    },
    stopped: () => false,
  });
  return strings;
}

interface Sheet {
  name: string;
  xml: Uint8Array;
}

/** Worksheets in the workbook's order, named; a sheet the workbook does not list is not read. */
function sheetOrder(workbook: Uint8Array, rels: Uint8Array | undefined, parts: Map<string, Uint8Array>): Sheet[] {
  const targets = new Map<string, string>();
  if (rels) {
    readXml(rels, {
      open(name, a) {
        if (name === 'Relationship' && a.Id && a.Target) targets.set(a.Id, a.Target.startsWith('/') ? a.Target.slice(1) : `xl/${a.Target}`);
      },
      close() {},
      text() {},
      stopped: () => false,
    });
  }
  const sheets: Sheet[] = [];
  let index = 0;
  readXml(workbook, {
    open(name, a) {
      if (name !== 'sheet' || sheets.length >= MAX_SHEETS) return;
      index++;
      const rid = a['r:id'] ?? Object.entries(a).find(([k]) => k.endsWith(':id'))?.[1];
      const path = (rid && targets.get(rid)) ?? `xl/worksheets/sheet${index}.xml`;
      const xml = parts.get(path);
      if (xml) sheets.push({ name: a.name ?? `Sheet${index}`, xml });
    },
    close() {},
    text() {},
    stopped: () => false,
  });
  return sheets;
}

/** `A1` → column 0; letters only, at most three (XFD is the last column). */
function columnOf(ref: string | undefined): number | null {
  if (!ref) return null;
  let col = 0;
  let i = 0;
  for (; i < ref.length && i < 3; i++) {
    const c = ref.charCodeAt(i);
    if (c < 0x41 || c > 0x5a) break;
    col = col * 26 + (c - 0x40);
  }
  return i === 0 ? null : col - 1;
}

function sheetRows(xml: Uint8Array, shared: string[], sink: TextSink): void {
  let nextColumn = 0;
  let cellType = '';
  let inValue = false;
  let inInline = false;
  let value: string[] = [];
  readXml(xml, {
    open(name, a) {
      if (name === 'row') nextColumn = 0;
      else if (name === 'c') {
        cellType = a.t ?? '';
        value = [];
        const col = columnOf(a.r) ?? nextColumn;
        // Tabs for skipped cells, so columns line up; a huge gap is written as one tab.
        const gap = Math.min(Math.max(col - nextColumn, 0), MAX_CELL_GAP);
        if (nextColumn > 0 || gap > 0) sink.write('\t'.repeat(nextColumn > 0 ? gap + 1 : gap));
        nextColumn = Math.max(col, nextColumn) + 1;
      } else if (name === 'v') inValue = true;
      else if (name === 'is') inInline = true;
      else if (name === 't' && inInline) inValue = true;
    },
    close(name) {
      if (name === 'v' || name === 't') inValue = false;
      else if (name === 'is') inInline = false;
      else if (name === 'c') sink.write(cellText(cellType, value.join(''), shared));
      else if (name === 'row') sink.newline();
    },
    text(text) {
      if (inValue) value.push(text);
    },
    stopped: () => sink.full,
  });
}

function cellText(type: string, raw: string, shared: string[]): string {
  const text = type === 's' ? (shared[Number(raw)] ?? '') : type === 'b' ? (raw === '1' ? 'TRUE' : raw === '0' ? 'FALSE' : raw) : raw;
  // A cell is one field of its row: its own line breaks and tabs become spaces.
  return text.replace(/[\r\n\t]+/g, ' ');
}
