/**
 * HTTP/1.x requests written byte for byte on a fresh loopback connection, for the attacks on the
 * HTTP trust boundary (test/security/). The request target (absolute-form, `..`, `%2f`,
 * backslashes, `;`), the Host header (any value, or none with HTTP/1.0) and every other header go
 * out exactly as given: fetch and node:http would normalise the path, fill in Host or refuse the
 * odd ones. One connection per request (`Connection: close`), read to its end.
 */
import net from 'node:net';

export interface WireRequest {
  port: number;
  method: string;
  /** Sent as is: `/v0/x`, `/%76%30/x`, `http://127.0.0.1:1/v0/x`, … */
  target: string;
  /** The Host header; `undefined` → `127.0.0.1:<port>`, `null` → no Host header at all. */
  host?: string | null;
  headers?: Record<string, string>;
  body?: string;
  version?: '1.0' | '1.1';
}

export interface WireAnswer {
  status: number;
  /** Lower-cased names; repeated headers joined with `, ` (Set-Cookie with `\n`). */
  headers: Record<string, string>;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  body: unknown;
}

/** A request the service does not answer within this is a hang, reported as a failure. */
const ANSWER_TIMEOUT_MS = 20_000;
/** Answers are small error bodies, JSON and the web app shell; more than this is a runaway. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function wireRequest(req: WireRequest): Promise<WireAnswer> {
  const lines = [`${req.method} ${req.target} HTTP/${req.version ?? '1.1'}`];
  if (req.host !== null) lines.push(`Host: ${req.host ?? `127.0.0.1:${req.port}`}`);
  for (const [name, value] of Object.entries(req.headers ?? {})) lines.push(`${name}: ${value}`);
  // A body is framed by Content-Length; an unsafe request without one says it has none.
  if (req.body !== undefined || UNSAFE.has(req.method)) lines.push(`Content-Length: ${Buffer.byteLength(req.body ?? '')}`);
  lines.push('Connection: close');
  const head = lines.join('\r\n') + '\r\n\r\n';
  return new Promise((resolve, reject) => {
    const socket = net.connect(req.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let size = 0;
    socket.setTimeout(ANSWER_TIMEOUT_MS, () => socket.destroy(new Error(`no answer to ${req.method} ${req.target} within ${ANSWER_TIMEOUT_MS} ms`)));
    // Not half-closed: Node's server drops a request whose client has ended before the answer.
    socket.on('connect', () => socket.write(head + (req.body ?? '')));
    socket.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) return socket.destroy(new Error(`answer to ${req.method} ${req.target} is over ${MAX_ANSWER_BYTES} bytes`));
      chunks.push(chunk);
    });
    socket.on('error', reject);
    socket.on('close', () => {
      try {
        resolve(parseAnswer(Buffer.concat(chunks), req.method));
      } catch (err) {
        reject(new Error(`${req.method} ${req.target}: ${(err as Error).message}`));
      }
    });
  });
}

/** Status line, headers and body (chunked or length- or close-delimited) of one HTTP/1.x answer. */
export function parseAnswer(raw: Buffer, method = 'GET'): WireAnswer {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no complete answer head in ${raw.length} bytes: ${JSON.stringify(raw.subarray(0, 200).toString('latin1'))}`);
  const [statusLine, ...headerLines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  if (!Number.isInteger(status)) throw new Error(`not an HTTP status line: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = name in headers ? `${headers[name]}${name === 'set-cookie' ? '\n' : ', '}${value}` : value;
  }
  let payload = raw.subarray(end + 4);
  if (method === 'HEAD' || status === 204 || status === 304) payload = Buffer.alloc(0);
  else if (/\bchunked\b/i.test(headers['transfer-encoding'] ?? '')) payload = dechunk(payload);
  else if (headers['content-length'] !== undefined) payload = payload.subarray(0, Number(headers['content-length']));
  const text = payload.toString('utf8');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status, headers, text, body };
}

function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** Runs `work` over `items` with at most `limit` at a time; results in the order of `items`. */
export async function eachLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const runners = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]);
    }
  });
  await Promise.all(runners);
  return results;
}
