/**
 * Every limit of reading an attachment's text (docs/attachments.md), named in one place. Each has
 * a one-line reason. An attachment is a stranger's file: these bound the time, memory and output
 * of reading it, whatever its headers claim. This module imports nothing.
 */

const KiB = 1024;
const MiB = 1024 * KiB;

/** Text kept per attachment (UTF-8 bytes): a long report's worth; past it the text is cut and `truncated`. */
export const MAX_ATTACHMENT_TEXT_BYTES = 256 * KiB;

/** Text kept per message over all its attachments: what search and an agent's context can use. */
export const MAX_MESSAGE_ATTACHMENT_TEXT_BYTES = 1 * MiB;

/** Wall time one attachment may take in the extraction worker; past it the worker is ended (`timeout`). */
export const ATTACHMENT_TEXT_TIMEOUT_MS = 5_000;

/**
 * Time the receive path spends reading one message's attachments. Attachments not begun within it
 * are left for the first read (docs/attachments.md), so mail waits at most this plus one attachment's timeout.
 */
export const MESSAGE_TEXT_BUDGET_MS = 15_000;

/** Bytes of a file read at all; any message svc accepts is smaller, so this only stops a mistake. */
export const MAX_ATTACHMENT_INPUT_BYTES = 32 * MiB;

/** Heap of an extraction worker (MiB): a hostile PDF that needs more ends that worker alone (`too_large`). */
export const EXTRACTION_HEAP_MB = 256;

/** Extraction workers at once: one keeps a burst of hostile files from taking more than one core. */
export const EXTRACTION_THREADS = 1;

/** Entries of a zip (DOCX, XLSX) looked at; real documents have dozens, an attack 100 000. */
export const MAX_ZIP_ENTRIES = 10_000;

/** Inflated bytes of one wanted zip entry (a document's XML); a zip bomb stops here, never trusting the header sizes. */
export const MAX_ZIP_ENTRY_BYTES = 32 * MiB;

/** Inflated bytes of all the wanted entries of one zip together. */
export const MAX_ZIP_INFLATED_BYTES = 64 * MiB;

/** Compressed bytes handed to the inflater at a time: bounds one step's output to about 1 000 times this. */
export const ZIP_PUSH_BYTES = 16 * KiB;

/** Element nesting of document XML; Word nests a few dozen deep, a hostile file 100 000. */
export const MAX_XML_DEPTH = 256;

/** Elements of one XML part: far beyond a real document's, bounding the parse's work. */
export const MAX_XML_ELEMENTS = 4_000_000;

/** Empty cells written for a gap in a spreadsheet row (`A1` then `XFD1`): the rest of the gap is one tab. */
export const MAX_CELL_GAP = 64;

/** Worksheets of one workbook read. */
export const MAX_SHEETS = 256;

/** Pages of a PDF read; the output cap usually ends reading first. */
export const MAX_PDF_PAGES = 2_000;

/** Bytes of a plain-text or HTML file decoded: four bytes per kept character at most, then cut. */
export const MAX_TEXT_INPUT_BYTES = 4 * MAX_ATTACHMENT_TEXT_BYTES;

/** Bytes of an HTML file rendered to text (linear, src/mail/html-text.ts); markup is most of a page. */
export const MAX_HTML_INPUT_BYTES = 4 * MiB;

/** The pool task a loop thread names to have an attachment read (src/supervisor/pool.ts). */
export const EXTRACT_ATTACHMENT_TEXT = 'extractAttachmentText';
