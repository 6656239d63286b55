/**
 * The text of a PDF with Mozilla's pdf.js (the legacy build, for Node): each page's text items in
 * reading order, a line break where pdf.js sees one, a blank line between pages. No fonts are
 * loaded into the process, no code is compiled from the file (`isEvalSupported: false`), nothing
 * is rendered. A password-protected PDF (an /Encrypt dictionary whose user password is not empty)
 * is `encrypted`; one that does not parse is `failed`. Time and memory are bounded by the worker
 * this runs in (src/supervisor/pool.ts); pages by MAX_PDF_PAGES and the output cap.
 */
import { MAX_PDF_PAGES } from './limits.js';
import { ExtractionStop } from './stop.js';
import type { TextSink } from './text-sink.js';

/** `%PDF-` in the first KiB, where readers look for it. */
export function looksLikePdf(bytes: Uint8Array): boolean {
  return Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, 1024)).includes('%PDF-');
}

/** The legacy build is loaded on the first PDF, only in extraction workers. */
let pdfjs: Promise<typeof import('pdfjs-dist/legacy/build/pdf.mjs')> | null = null;
export const loadPdfjs = () => (pdfjs ??= import('pdfjs-dist/legacy/build/pdf.mjs'));

export async function pdfText(bytes: Uint8Array, sink: TextSink): Promise<void> {
  if (!looksLikePdf(bytes)) throw new ExtractionStop('failed');
  const { getDocument } = await loadPdfjs();
  const task = getDocument({
    // pdf.js takes ownership of the array it is given: give it a copy.
    data: new Uint8Array(bytes),
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    isOffscreenCanvasSupported: false,
    stopAtErrors: false,
    verbosity: 0,
  });
  let doc: Awaited<typeof task.promise>;
  try {
    doc = await task.promise;
  } catch (err) {
    await task.destroy().catch(() => undefined);
    throw new ExtractionStop((err as Error).name === 'PasswordException' ? 'encrypted' : 'failed');
  }
  try {
    const pages = Math.min(doc.numPages, MAX_PDF_PAGES);
    for (let n = 1; n <= pages && !sink.full; n++) {
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      for (const item of content.items) {
        if (!('str' in item)) continue;
        sink.write(item.str);
        if (item.hasEOL) sink.newline();
      }
      page.cleanup();
      sink.newline();
      sink.newline();
    }
    if (doc.numPages > MAX_PDF_PAGES) sink.cut();
  } catch (err) {
    if (err instanceof ExtractionStop) throw err;
    throw new ExtractionStop('failed');
  } finally {
    await doc.destroy().catch(() => undefined);
  }
}
