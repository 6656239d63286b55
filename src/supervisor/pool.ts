/** The Piscina pool for CPU work (MIME parsing, sealing, signing, text extraction). */
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { TaskName } from '../../workers/pool/tasks.js';
import type { ParsedMail } from '../../workers/pool/parse.js';

const TASK_FILE = fileURLToPath(new URL('../../workers/pool/tasks.js', import.meta.url));

export class CpuPool {
  readonly #pool = new Piscina({
    filename: TASK_FILE,
    minThreads: 0,
    maxThreads: Math.max(2, os.availableParallelism()),
    idleTimeout: 30_000,
  });

  parseMime(raw: Uint8Array): Promise<ParsedMail> {
    return this.run('parseMime', raw) as Promise<ParsedMail>;
  }

  run(task: TaskName, input: unknown): Promise<unknown> {
    return this.#pool.run({ task, input });
  }

  async close(): Promise<void> {
    await this.#pool.destroy();
  }
}
