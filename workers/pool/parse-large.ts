/**
 * Worker entry that parses ONE large received message, then exits (issue 16, finding 9). The
 * inbound loop has already opened the sealed object in place (src/edge/sealed.ts `openSealed`),
 * so the message arrives as a range of a buffer that is moved here, not copied, and goes back the
 * same way with the attachment bytes. The parser's transient copies (several times the message)
 * live in this thread's own heap, bounded by the worker's resource limits and handed back whole
 * when it exits. It loads only the parser and the text extraction (workers/pool/parse.ts,
 * src/mail/extract.ts): every module a worker loads is resident memory for its short life.
 */
import { parentPort } from 'node:worker_threads';
import { PARSE_FAILURES, parseMime, type ParseFailure, type ParsedMail } from './parse.js';
import { deriveText, type DerivedText } from '../../src/mail/extract.js';

export interface ParseLargeRequest {
  /** The buffer that holds the message at [offset, offset + length); moved to this thread. */
  buffer: ArrayBuffer;
  offset: number;
  length: number;
  /** Test-only (docs/testing.md, `inbound-parse-stall`): compute forever instead of parsing. */
  stall: boolean;
}

/** `buffer` is the request's buffer, moved back. */
export type ParseLargeReply = { ok: true; parsed: ParsedMail; derived: DerivedText; buffer: ArrayBuffer } | { ok: false; reason: ParseFailure; buffer: ArrayBuffer };

/** The ArrayBuffers that belong to these views alone, each once: those can be moved instead of copied. */
function transferables(views: Uint8Array[], exclude: ArrayBufferLike): ArrayBuffer[] {
  const seen = new Set<ArrayBufferLike>([exclude]);
  const out: ArrayBuffer[] = [];
  for (const v of views) {
    const whole = v.byteOffset === 0 && v.byteLength === v.buffer.byteLength;
    if (whole && !seen.has(v.buffer) && v.buffer instanceof ArrayBuffer) out.push(v.buffer);
    seen.add(v.buffer);
  }
  return out;
}

parentPort!.once('message', async ({ buffer, offset, length, stall }: ParseLargeRequest) => {
  if (stall) for (;;); // ended only by the opener's timeout
  let reply: ParseLargeReply;
  let transfer: ArrayBuffer[] = [buffer];
  try {
    const parsed = await parseMime(new Uint8Array(buffer, offset, length));
    reply = { ok: true, parsed, derived: deriveText(parsed), buffer };
    transfer = [buffer, ...transferables(parsed.attachments.map((a) => a.content), buffer)];
  } catch (err) {
    reply = { ok: false, reason: PARSE_FAILURES.has((err as Error).message) ? ((err as Error).message as ParseFailure) : 'parse_failed', buffer };
  }
  parentPort!.postMessage(reply, transfer);
});
