/** The Piscina pool for CPU work (MIME parsing, sealing, signing, text extraction). */
import os from 'node:os';
import { workerFile } from '../core/worker-file.js';
import { Piscina } from 'piscina';
import type { TaskName } from '../../workers/pool/tasks.js';
import type { ParsedMail } from '../../workers/pool/parse.js';
import { EXTRACT_ATTACHMENT_TEXT, type AttachmentFile, type AttachmentText } from '../attachment-text/schemas.js';
import { ATTACHMENT_TEXT_TIMEOUT_MS, EXTRACTION_HEAP_MB, EXTRACTION_THREADS } from '../attachment-text/limits.js';

const TASK_FILE = workerFile('../../workers/pool/tasks.js', import.meta.url);
/** Loading pdf.js into a new extraction worker; far more than it takes (well under a second). */
const EXTRACTION_WARM_UP_MS = 60_000;
/** The warm-up request of workers/pool/attachment-text.ts (not imported: that module loads the readers). */
const WARM_UP = 'warm-up';
const EXTRACTION_FILE = workerFile('../../workers/pool/attachment-text.js', import.meta.url);

export type PoolTaskName = TaskName | typeof EXTRACT_ATTACHMENT_TEXT;

export class CpuPool {
  readonly #pool = new Piscina({
    filename: TASK_FILE,
    minThreads: 0,
    maxThreads: Math.max(2, os.availableParallelism()),
    idleTimeout: 30_000,
  });

  /**
   * Attachment text (docs/attachments.md): a lane of its own whose workers have a heap limit
   * (running out ends that worker, `too_large`) and are ended when a file takes longer than
   * ATTACHMENT_TEXT_TIMEOUT_MS (`timeout`). Files wait here, not in Piscina's queue, so each
   * one's time starts when it starts.
   */
  readonly #extraction = new Piscina({
    filename: EXTRACTION_FILE,
    minThreads: 0,
    maxThreads: EXTRACTION_THREADS,
    idleTimeout: 30_000,
    resourceLimits: { maxOldGenerationSizeMb: EXTRACTION_HEAP_MB, maxYoungGenerationSizeMb: 16 },
  });
  #extracting = 0;
  readonly #waiting: (() => void)[] = [];

  parseMime(raw: Uint8Array): Promise<ParsedMail> {
    return this.run('parseMime', raw) as Promise<ParsedMail>;
  }

  run(task: PoolTaskName, input: unknown): Promise<unknown> {
    if (task === EXTRACT_ATTACHMENT_TEXT) return this.extractText(input as AttachmentFile);
    return this.#pool.run({ task, input });
  }

  /** Reads one attachment's text in the extraction lane; never rejects (a failure is a status). */
  async extractText(file: AttachmentFile): Promise<AttachmentText> {
    if (this.#extracting >= EXTRACTION_THREADS) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#extracting++;
    try {
      // A new worker loads pdf.js first, outside the file's time (which is the file's own work).
      if (this.#extraction.threads.length === 0) await this.#extraction.run(WARM_UP, { signal: AbortSignal.timeout(EXTRACTION_WARM_UP_MS) });
      return (await this.#extraction.run(file, { signal: AbortSignal.timeout(ATTACHMENT_TEXT_TIMEOUT_MS) })) as AttachmentText;
    } catch (err) {
      return { status: failureStatus(err), text: null, truncated: false };
    } finally {
      this.#extracting--;
      this.#waiting.shift()?.();
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.#pool.destroy(), this.#extraction.destroy()]);
  }
}

/** Why an extraction worker gave no answer: ended on timeout, out of heap, or anything else. */
function failureStatus(err: unknown): AttachmentText['status'] {
  const e = err as { name?: string; code?: string; cause?: { name?: string } };
  if (e?.name === 'AbortError' || e?.cause?.name === 'TimeoutError') return 'timeout';
  if (e?.code === 'ERR_WORKER_OUT_OF_MEMORY') return 'too_large';
  return 'failed';
}
