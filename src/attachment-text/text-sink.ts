/**
 * Collects extracted text up to a byte cap, normalising as it goes: line ends become `\n`, control
 * characters other than tab and newline are dropped, runs of blank lines become one. Writers check
 * `full` and stop reading once the cap is reached; what was kept is `truncated`.
 */

/** Characters between control-character sweeps: each write is cleaned once, in one pass. */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufeff]/g;

export class TextSink {
  readonly #parts: string[] = [];
  #bytes = 0;
  #truncated = false;
  #pendingNewlines = 0;
  #atStart = true;

  constructor(private readonly maxBytes: number) {}

  /** Whether the cap is reached: nothing more will be kept. */
  get full(): boolean {
    return this.#truncated;
  }

  /** Appends text; newlines are kept as line breaks, at most one blank line in a row. */
  write(raw: string): void {
    if (this.#truncated || raw.length === 0) return;
    const cleaned = raw.replace(/\r\n?/g, '\n').replace(CONTROL, '');
    let start = 0;
    for (;;) {
      const nl = cleaned.indexOf('\n', start);
      const piece = cleaned.slice(start, nl === -1 ? cleaned.length : nl);
      if (piece.length > 0) this.#emit(piece);
      if (nl === -1) return;
      this.newline();
      start = nl + 1;
      if (this.#truncated) return;
    }
  }

  /** Ends a line; a third newline in a row is dropped, as are newlines at the start. */
  newline(): void {
    if (!this.#atStart && this.#pendingNewlines < 2) this.#pendingNewlines++;
  }

  #emit(piece: string): void {
    const prefix = this.#pendingNewlines > 0 ? '\n'.repeat(this.#pendingNewlines) : '';
    const chunk = prefix + piece;
    const bytes = Buffer.byteLength(chunk);
    if (this.#bytes + bytes > this.maxBytes) {
      this.#parts.push(cutToBytes(chunk, this.maxBytes - this.#bytes));
      this.#bytes = this.maxBytes;
      this.#truncated = true;
      return;
    }
    this.#parts.push(chunk);
    this.#bytes += bytes;
    this.#pendingNewlines = 0;
    this.#atStart = false;
  }

  /** Marks the text cut by a limit of the reader (pages, input bytes) rather than the byte cap. */
  cut(): void {
    this.#truncated = true;
  }

  text(): string {
    return this.#parts.join('').trimEnd();
  }

  get truncated(): boolean {
    return this.#truncated;
  }
}

/** The longest prefix of `s` of at most `maxBytes` UTF-8 bytes, never splitting a character. */
export function cutToBytes(s: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  const buf = Buffer.from(s.slice(0, maxBytes));
  if (buf.byteLength <= maxBytes) return s.slice(0, maxBytes);
  let end = maxBytes;
  // Back up to the start of a UTF-8 sequence (a byte not of the form 10xxxxxx).
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}
