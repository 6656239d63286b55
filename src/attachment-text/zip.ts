/**
 * The entries of a zip (DOCX, XLSX) that a reader wants, inflated under our own limits. The sizes
 * a zip declares are never trusted: inflated bytes are counted as they come out, per entry and in
 * total, and the compressed bytes are handed over in small steps so one step cannot inflate to
 * more than about a thousand times its size (a 1 GB bomb stops at MAX_ZIP_ENTRY_BYTES). Entries
 * are read from their local headers in order (fflate's streaming Unzip); past MAX_ZIP_ENTRIES the
 * file is refused.
 */
import { Unzip, UnzipInflate, type UnzipFile } from 'fflate';
import { MAX_ZIP_ENTRIES, MAX_ZIP_ENTRY_BYTES, MAX_ZIP_INFLATED_BYTES, ZIP_PUSH_BYTES } from './limits.js';
import { ExtractionStop } from './stop.js';

const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04];

export const isZip = (bytes: Uint8Array): boolean => ZIP_MAGIC.every((b, i) => bytes[i] === b);

/** Inflates the entries `wanted` accepts, each at most once; throws ExtractionStop past a limit or on a malformed zip. */
export function readZipEntries(zip: Uint8Array, wanted: (name: string) => boolean): Map<string, Uint8Array> {
  if (!isZip(zip)) throw new ExtractionStop('failed');
  const chunks = new Map<string, Uint8Array[]>();
  const done = new Set<string>();
  let entries = 0;
  let total = 0;
  let stop: ExtractionStop | null = null;
  const unzip = new Unzip((file: UnzipFile) => {
    if (stop) return;
    if (++entries > MAX_ZIP_ENTRIES) {
      stop = new ExtractionStop('too_large');
      return;
    }
    if (!wanted(file.name) || chunks.has(file.name)) return;
    const name = file.name;
    const parts: Uint8Array[] = [];
    chunks.set(name, parts);
    let size = 0;
    file.ondata = (err, data, final) => {
      if (stop) return;
      if (err) {
        stop = new ExtractionStop('failed');
        return;
      }
      size += data.byteLength;
      total += data.byteLength;
      if (size > MAX_ZIP_ENTRY_BYTES || total > MAX_ZIP_INFLATED_BYTES) {
        stop = new ExtractionStop('too_large');
        file.terminate();
        return;
      }
      parts.push(data);
      if (final) done.add(name);
    };
    try {
      file.start();
    } catch {
      stop = new ExtractionStop('failed'); // a compression method svc does not read
    }
  });
  unzip.register(UnzipInflate);
  try {
    for (let at = 0; at < zip.byteLength && !stop; at += ZIP_PUSH_BYTES) {
      const end = Math.min(at + ZIP_PUSH_BYTES, zip.byteLength);
      unzip.push(zip.subarray(at, end), end === zip.byteLength);
    }
  } catch {
    stop ??= new ExtractionStop('failed');
  }
  if (stop) throw stop;
  const out = new Map<string, Uint8Array>();
  for (const [name, parts] of chunks) {
    // An entry cut short by the end of the file: the zip is truncated.
    if (!done.has(name)) throw new ExtractionStop('failed');
    out.set(name, concat(parts));
  }
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
