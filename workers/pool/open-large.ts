/**
 * Worker entry that opens and parses ONE large sealed object, then exits (issue 16, finding 9).
 * The sealed bytes arrive transferred, not copied; the raw message and attachment bytes go back
 * transferred too. Opening holds the sealed bytes, the JSON plaintext and the message (no string
 * of any of them, src/edge/sealed.ts `openSealed`); mailparser's copies come after the first two
 * are let go. All of it lives in this thread's own
 * heap, which is bounded by the worker's resource limits and handed back whole when it exits.
 */
import { parentPort } from 'node:worker_threads';
import type { JWK } from 'jose';
import { openSealed } from '../../src/edge/sealed.js';
import { parseOpened, type OpenedInbound } from './tasks.js';

export interface OpenLargeRequest {
  sealed: Uint8Array;
  privateJwk: JWK;
}

export type OpenLargeReply = { ok: true; opened: OpenedInbound } | { ok: false; reason: string };

/** The ArrayBuffers that belong to these views alone, each once: those can be moved instead of copied. */
function transferables(views: Uint8Array[]): ArrayBuffer[] {
  const seen = new Set<ArrayBufferLike>();
  const out: ArrayBuffer[] = [];
  for (const v of views) {
    const whole = v.byteOffset === 0 && v.byteLength === v.buffer.byteLength;
    if (whole && !seen.has(v.buffer) && v.buffer instanceof ArrayBuffer) out.push(v.buffer);
    seen.add(v.buffer);
  }
  return out;
}

parentPort!.once('message', async (request: OpenLargeRequest) => {
  let reply: OpenLargeReply;
  let transfer: ArrayBuffer[] = [];
  try {
    // Opened from the bytes as they came (no string of the object). Nothing keeps the sealed bytes
    // once opened, so they can be freed while the parser runs.
    let sealed: Uint8Array | null = request.sealed;
    (request as { sealed: Uint8Array | null }).sealed = null;
    let message: Awaited<ReturnType<typeof openSealed>> | null;
    try {
      message = await openSealed(sealed, request.privateJwk);
    } catch {
      throw new Error('open_failed');
    }
    sealed = null;
    const opened = await parseOpened(message);
    message = null;
    reply = { ok: true, opened };
    transfer = transferables([opened.raw, ...opened.parsed.attachments.map((a) => a.content)]);
  } catch (err) {
    const reason = err instanceof Error && (err.message === 'open_failed' || err.message === 'parse_failed') ? err.message : 'parse_failed';
    reply = { ok: false, reason };
  }
  parentPort!.postMessage(reply, transfer);
});
