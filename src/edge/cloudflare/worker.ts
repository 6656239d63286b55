/**
 * The serverless edge: a Cloudflare Email Worker that speaks the edge's side of the home protocol
 * (docs/edge.md, "The Cloudflare edge"). Cloudflare Email Routing hands each message to `email()`;
 * the Worker checks the recipient against the routing the home pushed, enforces the size limit,
 * seals the message to the home's X25519 key in the same formats as src/edge/sealed.ts (v1 compact
 * JWE, v2 binary for large mail) and stores it in R2 before it returns. `fetch()` is the edge API
 * the home pulls from, with the edge token as bearer.
 *
 * Written for the Workers runtime: WebCrypto only, no node: imports, no imports at all (one file,
 * so `svc edge cloudflare dev` and `wrangler deploy` load it as is). The constants that must agree
 * with src/edge/ are repeated here; test/unit/cloudflare-worker.test.ts checks that they do.
 * Nothing here logs: there is no console call, so no plaintext, address or token reaches a log.
 */

// ---- The few runtime types the Worker uses (no @cloudflare/workers-types dependency) ----

interface R2Object {
  key: string;
  size: number;
  customMetadata?: Record<string, string>;
}
interface R2ObjectBody extends R2Object {
  arrayBuffer(): Promise<ArrayBuffer>;
  text(): Promise<string>;
  body: ReadableStream<Bytes>;
}
interface R2Objects {
  objects: R2Object[];
  truncated: boolean;
  cursor?: string;
}
interface R2Bucket {
  head(key: string): Promise<R2Object | null>;
  get(key: string): Promise<R2ObjectBody | null>;
  put(key: string, value: ArrayBuffer | Bytes | string, options?: { customMetadata?: Record<string, string>; httpMetadata?: { contentType?: string } }): Promise<R2Object | null>;
  delete(keys: string | string[]): Promise<void>;
  list(options?: { prefix?: string; startAfter?: string; limit?: number; cursor?: string }): Promise<R2Objects>;
}
/** What Email Routing hands to `email()` (ForwardableEmailMessage). */
interface IncomingEmail {
  readonly from: string;
  readonly to: string;
  readonly raw: ReadableStream<Bytes>;
  readonly rawSize: number;
  /** Synchronous in production; across miniflare's RPC bridge it answers a promise, so callers await it. */
  setReject(reason: string): void | Promise<void>;
}
interface Env {
  /** The sealed buffer and the routing (R2). */
  BUFFER: R2Bucket;
  /** The edge API token (a Worker secret): `edge_` + 43 base64url characters. */
  EDGE_TOKEN: string;
  /** Size limit in bytes (a string var); default 25 MiB, Email Routing's own limit. */
  MAX_MESSAGE_BYTES?: string;
  /** The MX host name reported to the home for its domain plan. Default route1.mx.cloudflare.net. */
  EDGE_HOSTNAME?: string;
  /** This Worker's script name (set by `svc edge cloudflare init`): the home routes Email Routing rules to it. */
  WORKER_NAME?: string;
}

// ---- Constants shared with src/edge/ (checked by test/unit/cloudflare-worker.test.ts) ----

const SEAL_ALG = 'ECDH-ES+A256KW';
const SEAL_ENC = 'A256GCM';
const SEAL_CONTENT_TYPE = 'svc-inbound+json';
const SEAL_V2_CONTENT_TYPE = 'svc-inbound-head+json';
const SEALED_V2_MAGIC = 'svc-sealed-2\n';
const BINARY_SEAL_MIN_BYTES = 256 * 1024;
const OBJECT_KEY_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$';
const DEFAULT_MAX_MESSAGE_BYTES = 25 * 1024 * 1024;
const LIST_DEFAULT_LIMIT = 100;
const LIST_MAX_LIMIT = 1_000;
const BATCH_MAX_KEYS = 1_000;
const BATCH_FETCH_MAX_BYTES = 16 * 1024 * 1024;
const WAIT_MAX_MS = 30_000;
const API_BODY_LIMIT = 16 * 1024 * 1024;
const MAX_ROUTED_DOMAINS = 10_000;
const MAX_ROUTED_ADDRESSES = 100_000;
/** The envelope marker of an object sealed by an edge that never saw the SMTP connection. */
const VIA_CLOUDFLARE = 'cloudflare-email-routing';
/** A Worker script name, as the home reads it from `managed_mx.worker` (src/edge/identity.ts). */
const WORKER_NAME_PATTERN = '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$';
const SELFTEST_LOCAL_PART = 'svc-selftest';
const DEFAULT_HOSTNAME = 'route1.mx.cloudflare.net';
/** How often a pending `/wait` looks at R2 again: each look is one list operation (billed). */
const WAIT_POLL_MS = 2_000;

const OBJECT_KEY = new RegExp(OBJECT_KEY_PATTERN);
const OBJECTS = 'objects/';
const QUEUE = 'queue/';
const ROUTING_FILE = 'routing.json';
const JOSE_MEDIA_TYPE = 'application/jose';
const SEALED_V2_MEDIA_TYPE = 'application/octet-stream';

// ---- Bytes, base64 ----

/** Bytes backed by a plain ArrayBuffer (what WebCrypto and R2 take). */
type Bytes = Uint8Array<ArrayBuffer>;

const encoder = new TextEncoder();
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Base64 (padded) or base64url (unpadded) text of bytes, built in pieces so a large message is no problem for the call stack. */
function base64(bytes: Bytes, url: boolean): string {
  const alphabet = url ? B64URL : B64;
  const parts: string[] = [];
  const CHUNK = 3 * 8192;
  for (let at = 0; at < bytes.length; at += CHUNK) {
    const end = Math.min(at + CHUNK, bytes.length);
    let s = '';
    let i = at;
    for (; i + 2 < end; i += 3) {
      const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
      s += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63] + alphabet[n & 63];
    }
    if (i < end) {
      const n = (bytes[i] << 16) | ((i + 1 < end ? bytes[i + 1] : 0) << 8);
      s += alphabet[n >> 18] + alphabet[(n >> 12) & 63];
      if (i + 1 < end) s += alphabet[(n >> 6) & 63];
      else if (!url) s += '=';
      if (!url) s += '=';
    }
    parts.push(s);
  }
  return parts.join('');
}

function concat(parts: Bytes[]): Bytes {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function uint32(n: number): Bytes {
  return new Uint8Array([(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
}

/** WebCrypto's key type, named without the DOM or Node type libraries (this file type-checks under both). */
type WebCryptoKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;
type DeriveParams = Parameters<typeof crypto.subtle.deriveBits>[0];

const randomBytes = (n: number) => crypto.getRandomValues(new Uint8Array(n));
const sha256 = async (bytes: Bytes) => new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));

// ---- Sealing (the formats of src/edge/sealed.ts, with WebCrypto) ----

interface PublicJwk {
  kty: 'OKP';
  crv: 'X25519';
  x: string;
}

/** The RFC 7638 thumbprint of the home key: the `kid` of every object sealed to it. */
async function publicKeyId(jwk: PublicJwk): Promise<string> {
  return base64(await sha256(encoder.encode(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x }))), true);
}

/** Concat KDF (RFC 7518 §4.6.2) for one 256-bit key, no PartyUInfo/PartyVInfo: one SHA-256 round. */
async function concatKdf(sharedSecret: Bytes): Promise<Bytes> {
  const alg = encoder.encode(SEAL_ALG);
  return sha256(concat([uint32(1), sharedSecret, uint32(alg.length), alg, uint32(0), uint32(0), uint32(256)]));
}

/**
 * ECDH-ES+A256KW with a fresh ephemeral X25519 key and a fresh content key: the compact JWE's
 * first three parts (`lead`, ending in a dot) and the content key and IV for its A256GCM content.
 */
async function startJwe(home: PublicJwk, keyId: string, contentType: string): Promise<{ lead: string; cek: WebCryptoKey; iv: Bytes; header: string }> {
  const recipient = await crypto.subtle.importKey('jwk', { kty: 'OKP', crv: 'X25519', x: home.x }, { name: 'X25519' }, false, []);
  const ephemeral = (await crypto.subtle.generateKey({ name: 'X25519' }, true, ['deriveBits'])) as { privateKey: WebCryptoKey; publicKey: WebCryptoKey };
  const shared = new Uint8Array(await crypto.subtle.deriveBits({ name: 'X25519', public: recipient } as DeriveParams, ephemeral.privateKey, 256));
  const kek = await crypto.subtle.importKey('raw', await concatKdf(shared), { name: 'AES-KW' }, false, ['wrapKey']);
  const cek = await crypto.subtle.importKey('raw', randomBytes(32), { name: 'AES-GCM' }, true, ['encrypt']);
  const encryptedKey = new Uint8Array(await crypto.subtle.wrapKey('raw', cek, kek, { name: 'AES-KW' }));
  const { x } = (await crypto.subtle.exportKey('jwk', ephemeral.publicKey)) as { x: string };
  const header = base64(encoder.encode(JSON.stringify({ alg: SEAL_ALG, enc: SEAL_ENC, cty: contentType, kid: keyId, epk: { x, crv: 'X25519', kty: 'OKP' } })), true);
  const iv = randomBytes(12);
  return { lead: `${header}.${base64(encryptedKey, true)}.${base64(iv, true)}.`, cek, iv, header };
}

/** One compact JWE of `plaintext` (AES-GCM's output is the ciphertext followed by the 16-byte tag). */
async function compactJwe(home: PublicJwk, keyId: string, contentType: string, plaintext: Bytes): Promise<string> {
  const { lead, cek, iv, header } = await startJwe(home, keyId, contentType);
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: encoder.encode(header), tagLength: 128 }, cek, plaintext));
  return `${lead}${base64(sealed.subarray(0, sealed.length - 16), true)}.${base64(sealed.subarray(sealed.length - 16), true)}`;
}

interface SealedMeta {
  envelope: { mail_from: string; rcpt_to: string[]; client_ip: string; helo: string; received_at: string; via: string };
  auth: unknown;
  spam: null;
}

/**
 * Seals one message: v1 (a compact JWE of `{version: 1, envelope, auth, spam, raw}`) up to
 * BINARY_SEAL_MIN_BYTES, else v2 (magic, header length, header JWE, AES-256-GCM body, tag).
 */
async function sealMessage(meta: SealedMeta, raw: Bytes, home: PublicJwk, keyId: string): Promise<{ bytes: Bytes; binary: boolean }> {
  if (raw.length <= BINARY_SEAL_MIN_BYTES) {
    const json = JSON.stringify({ version: 1, envelope: meta.envelope, auth: meta.auth, spam: meta.spam, raw: base64(raw, false) });
    return { bytes: encoder.encode(await compactJwe(home, keyId, SEAL_CONTENT_TYPE, encoder.encode(json))), binary: false };
  }
  const bodyKeyBytes = randomBytes(32);
  const bodyIv = randomBytes(12);
  const head = { version: 2, envelope: meta.envelope, auth: meta.auth, spam: meta.spam, body: { key: base64(bodyKeyBytes, true), iv: base64(bodyIv, true), size: raw.length } };
  const headJwe = encoder.encode(await compactJwe(home, keyId, SEAL_V2_CONTENT_TYPE, encoder.encode(JSON.stringify(head))));
  const bodyKey = await crypto.subtle.importKey('raw', bodyKeyBytes, { name: 'AES-GCM' }, false, ['encrypt']);
  const body = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv: bodyIv, additionalData: headJwe, tagLength: 128 }, bodyKey, raw));
  return { bytes: concat([encoder.encode(SEALED_V2_MAGIC), uint32(headJwe.length), headJwe, body]), binary: true };
}

// ---- Object keys (UUIDv7, text order = arrival order within one isolate; see src/edge/object-key.ts) ----

let lastMs = 0;
let sequence = 0;

function nextObjectKey(): string {
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    sequence = 0;
  } else if (sequence < 0xfff) {
    sequence++;
  } else {
    lastMs++;
    sequence = 0;
  }
  const b = randomBytes(16);
  for (let i = 0; i < 6; i++) b[i] = Math.floor(lastMs / 2 ** (8 * (5 - i))) & 0xff;
  b[6] = 0x70 | (sequence >> 8);
  b[7] = sequence & 0xff;
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// ---- Routing ----

interface Routing {
  recipient_public_key: PublicJwk;
  key_id: string;
  domains: string[];
  addresses: string[];
  updated_at: string;
}

const DOMAIN = /^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;
const ADDRESS = /^[^\s@<>"]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;
const JWK_X = /^[A-Za-z0-9_-]{43}$/;

async function readRouting(env: Env): Promise<Routing | null> {
  const stored = await env.BUFFER.get(ROUTING_FILE);
  if (!stored) return null;
  const { version: _version, ...routing } = JSON.parse(await stored.text()) as Routing & { version: number };
  return routing;
}

/** Whether mail to `address` is stored for the home: a routed address, or `svc-selftest@` a routed domain. */
function routes(routing: Routing, address: string): boolean {
  const at = address.lastIndexOf('@');
  if (at <= 0) return false;
  if (routing.addresses.includes(address)) return true;
  return address.slice(0, at) === SELFTEST_LOCAL_PART && routing.domains.includes(address.slice(at + 1));
}

/** The body of `PUT /routing`, checked as src/edge/routing.ts RoutingUpdate does; an error names what is wrong. */
function readRoutingUpdate(body: unknown): { recipient_public_key: PublicJwk; domains: string[]; addresses: string[] } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError('validation_error', 'The body must be a JSON object.');
  const b = body as Record<string, unknown>;
  const extra = Object.keys(b).find((k) => !['recipient_public_key', 'domains', 'addresses'].includes(k));
  if (extra !== undefined) throw new ApiError('validation_error', `Invalid body: unknown field ${JSON.stringify(extra.slice(0, 40))}.`);
  const key = b.recipient_public_key as Record<string, unknown> | undefined;
  if (typeof key === 'object' && key !== null && 'd' in key) throw new ApiError('validation_error', 'recipient_public_key must be the public half only; the private key never leaves the home.');
  const keyFields = typeof key === 'object' && key !== null ? Object.keys(key) : [];
  const keyOk =
    typeof key === 'object' && key !== null && key.kty === 'OKP' && key.crv === 'X25519' && typeof key.x === 'string' && JWK_X.test(key.x) &&
    keyFields.every((k) => ['kty', 'crv', 'x', 'kid', 'alg', 'use'].includes(k)) &&
    (key.alg === undefined || key.alg === SEAL_ALG) && (key.use === undefined || key.use === 'enc') &&
    (key.kid === undefined || (typeof key.kid === 'string' && key.kid.length <= 256));
  if (!keyOk) throw new ApiError('validation_error', 'recipient_public_key must be an X25519 public JWK {kty: "OKP", crv: "X25519", x}.');
  const list = (name: 'domains' | 'addresses', max: number, shape: RegExp, maxLength: number): string[] => {
    const v = b[name];
    if (!Array.isArray(v) || v.length > max || !v.every((s) => typeof s === 'string' && s.length <= maxLength && shape.test(s))) {
      throw new ApiError('validation_error', `${name} must be an array of at most ${max} ${name === 'domains' ? 'domain names' : 'addresses'}.`);
    }
    return [...new Set((v as string[]).map((s) => s.toLowerCase()))].sort();
  };
  return {
    recipient_public_key: { kty: 'OKP', crv: 'X25519', x: key!.x as string },
    domains: list('domains', MAX_ROUTED_DOMAINS, DOMAIN, 253),
    addresses: list('addresses', MAX_ROUTED_ADDRESSES, ADDRESS, 320),
  };
}

// ---- The API ----

const ERRORS = {
  validation_error: 400,
  unauthorized: 401,
  not_found: 404,
  payload_too_large: 413,
  unsupported_media_type: 415,
  internal_error: 500,
  not_supported: 501,
  service_unavailable: 503,
} as const;

class ApiError extends Error {
  constructor(
    readonly code: keyof typeof ERRORS,
    message: string,
  ) {
    super(message);
  }
}

const BASE_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...BASE_HEADERS, 'content-type': 'application/json; charset=utf-8' } });
}

function errorResponse(err: ApiError): Response {
  const res = json(ERRORS[err.code], { error: err.code, message: err.message });
  if (err.code === 'unauthorized') res.headers.set('www-authenticate', 'Bearer realm="svc-edge"');
  return res;
}

/** Compares SHA-256 digests byte by byte, all of them, so neither the token nor its length leaks through timing. */
async function tokenMatches(presented: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([sha256(encoder.encode(presented)), sha256(encoder.encode(expected))]);
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

function readKey(value: string): string {
  if (!OBJECT_KEY.test(value)) throw new ApiError('validation_error', 'Invalid params: the key does not match the object key pattern.');
  return value;
}

/** `after` and `limit` (and `timeout_ms` for /wait); anything else in the query is 400. */
function readQuery(url: URL, allowed: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of url.searchParams) {
    if (!allowed.includes(name)) throw new ApiError('validation_error', `Invalid querystring: unknown parameter ${JSON.stringify(name.slice(0, 40))}.`);
    out[name] = value;
  }
  if (out.after !== undefined && out.after !== '') readKey(out.after);
  return out;
}

function integer(value: string | undefined, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) throw new ApiError('validation_error', `Invalid querystring: ${name} must be an integer from ${min} to ${max}.`);
  return n;
}

async function readJson(request: Request): Promise<unknown> {
  const type = (request.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') throw new ApiError('unsupported_media_type', 'The request body must be JSON (Content-Type: application/json).');
  const length = Number(request.headers.get('content-length') ?? '0');
  if (length > API_BODY_LIMIT) throw new ApiError('payload_too_large', `The request body is larger than ${API_BODY_LIMIT} bytes.`);
  const text = await request.text();
  if (text.length > API_BODY_LIMIT) throw new ApiError('payload_too_large', `The request body is larger than ${API_BODY_LIMIT} bytes.`);
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError('validation_error', 'The request body is not valid JSON.');
  }
}

function readKeyBatch(body: unknown): string[] {
  const b = body as { keys?: unknown } | null;
  const keys = b?.keys;
  if (typeof b !== 'object' || b === null || Object.keys(b).length !== 1 || !Array.isArray(keys) || keys.length < 1 || keys.length > BATCH_MAX_KEYS) {
    throw new ApiError('validation_error', `Invalid body: {"keys": [...]} with 1 to ${BATCH_MAX_KEYS} keys and nothing else.`);
  }
  if (!keys.every((k) => typeof k === 'string' && OBJECT_KEY.test(k))) throw new ApiError('validation_error', 'Invalid body: every key must match the object key pattern.');
  if (new Set(keys).size !== keys.length) throw new ApiError('validation_error', 'Invalid body: keys must be distinct.');
  return keys as string[];
}

/** A page of keys under `prefix` strictly after `after`, oldest first. */
async function listPage(env: Env, prefix: string, after: string, limit: number): Promise<{ items: R2Object[]; hasMore: boolean }> {
  const items: R2Object[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await env.BUFFER.list({ prefix, limit: limit - items.length, ...(cursor ? { cursor } : after ? { startAfter: prefix + after } : {}) });
    items.push(...page.objects);
    if (!page.truncated) return { items, hasMore: false };
    if (items.length >= limit) return { items, hasMore: true };
    cursor = page.cursor;
  }
}

/** The newest object key after `after` (the buffer holds only what the home has not taken, so this is short). */
async function newestKey(env: Env, after: string): Promise<string | null> {
  let latest: string | null = null;
  let cursor: string | undefined;
  for (;;) {
    const page = await env.BUFFER.list({ prefix: OBJECTS, limit: LIST_MAX_LIMIT, ...(cursor ? { cursor } : after ? { startAfter: OBJECTS + after } : {}) });
    if (page.objects.length > 0) latest = page.objects[page.objects.length - 1].key.slice(OBJECTS.length);
    if (!page.truncated) return latest;
    cursor = page.cursor;
  }
}

/** Removes an object, then its queue entry (the order of src/edge/buffer.ts); answers whether the object was there. */
async function deleteObject(env: Env, key: string): Promise<boolean> {
  const present = (await env.BUFFER.head(OBJECTS + key)) !== null;
  await env.BUFFER.delete(OBJECTS + key);
  await env.BUFFER.delete(QUEUE + key);
  return present;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * What the home's domain plan needs of this edge: Email Routing's MX (Cloudflare publishes it and
 * its SPF record itself, so the home plans them as Cloudflare's; src/edge/identity.ts).
 */
function identity(env: Env) {
  const worker = env.WORKER_NAME && new RegExp(WORKER_NAME_PATTERN).test(env.WORKER_NAME) ? { worker: env.WORKER_NAME } : {};
  return { hostname: env.EDGE_HOSTNAME || DEFAULT_HOSTNAME, public_addresses: [], smart_host: null, managed_mx: { by: 'cloudflare_email_routing', ...worker } };
}

const NOT_SENDING = new ApiError(
  'not_supported',
  'This edge (a Cloudflare Email Worker) receives mail only; it cannot send. Send through an SMTP smart host: svc transport set --smtp-host HOST --smtp-port 587 ...',
);

async function route(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get('authorization') ?? '');
  if (!env.EDGE_TOKEN || !match || !(await tokenMatches(match[1], env.EDGE_TOKEN))) {
    throw new ApiError('unauthorized', 'A valid edge API token is required (Authorization: Bearer <token>).');
  }
  const method = request.method;
  const path = url.pathname;
  const parts = path.split('/').slice(1);

  if (path === '/objects' && method === 'GET') {
    const q = readQuery(url, ['after', 'limit']);
    const page = await listPage(env, OBJECTS, q.after ?? '', integer(q.limit, 'limit', 1, LIST_MAX_LIMIT, LIST_DEFAULT_LIMIT));
    const objects = page.items.map((o) => ({ key: o.key.slice(OBJECTS.length), size: o.size }));
    return json(200, { objects, count: objects.length, has_more: page.hasMore });
  }
  if (parts[0] === 'objects' && parts.length === 2 && parts[1] !== 'fetch' && parts[1] !== 'delete') {
    if (method === 'GET') {
      const object = await env.BUFFER.get(OBJECTS + readKey(parts[1]));
      if (!object) throw new ApiError('not_found', 'There is no object with this key (it may have been deleted).');
      const binary = object.customMetadata?.format === 'v2';
      return new Response(object.body, { headers: { ...BASE_HEADERS, 'content-type': binary ? SEALED_V2_MEDIA_TYPE : JOSE_MEDIA_TYPE, 'content-length': String(object.size) } });
    }
    if (method === 'DELETE') {
      await deleteObject(env, readKey(parts[1]));
      return new Response(null, { status: 204, headers: BASE_HEADERS });
    }
  }
  if (path === '/objects/fetch' && method === 'POST') {
    const keys = readKeyBatch(await readJson(request));
    const objects: { key: string; jwe: string }[] = [];
    const missing: string[] = [];
    const deferred: string[] = [];
    const separate: string[] = [];
    let bytes = 0;
    for (const key of keys) {
      if (deferred.length > 0) {
        deferred.push(key);
        continue;
      }
      const head = await env.BUFFER.head(OBJECTS + key);
      if (!head) missing.push(key);
      else if (head.customMetadata?.format === 'v2') separate.push(key);
      else if (objects.length > 0 && bytes + head.size > BATCH_FETCH_MAX_BYTES) deferred.push(key);
      else {
        const object = await env.BUFFER.get(OBJECTS + key);
        if (!object) {
          missing.push(key);
          continue;
        }
        objects.push({ key, jwe: await object.text() });
        bytes += object.size;
      }
    }
    return json(200, { objects, missing, deferred, separate });
  }
  if (path === '/objects/delete' && method === 'POST') {
    const keys = readKeyBatch(await readJson(request));
    const deleted: string[] = [];
    const absent: string[] = [];
    for (const key of keys) (await deleteObject(env, key) ? deleted : absent).push(key);
    return json(200, { deleted, absent });
  }
  if (path === '/queue' && method === 'GET') {
    const q = readQuery(url, ['after', 'limit']);
    const page = await listPage(env, QUEUE, q.after ?? '', integer(q.limit, 'limit', 1, LIST_MAX_LIMIT, LIST_DEFAULT_LIMIT));
    const entries = await Promise.all(page.items.map(async (o) => JSON.parse((await (await env.BUFFER.get(o.key))?.text()) ?? 'null') as unknown));
    const present = entries.filter((e) => e !== null);
    return json(200, { entries: present, count: present.length, has_more: page.hasMore });
  }
  if (parts[0] === 'queue' && parts.length === 2) {
    const key = readKey(parts[1]);
    if (method === 'GET') {
      const entry = await env.BUFFER.get(QUEUE + key);
      if (!entry) throw new ApiError('not_found', 'There is no queue entry with this key.');
      return json(200, JSON.parse(await entry.text()));
    }
    if (method === 'DELETE') {
      await env.BUFFER.delete(QUEUE + key);
      return new Response(null, { status: 204, headers: BASE_HEADERS });
    }
  }
  if (path === '/routing' && method === 'GET') {
    const routing = await readRouting(env);
    if (!routing) throw new ApiError('not_found', 'No routing has been pushed to this edge yet.');
    return json(200, { ...routing, edge: identity(env) });
  }
  if (path === '/routing' && method === 'PUT') {
    const update = readRoutingUpdate(await readJson(request));
    const keyId = await publicKeyId(update.recipient_public_key);
    const previous = await readRouting(env);
    const canonical = (r: { recipient_public_key: PublicJwk; domains: string[]; addresses: string[] }, id: string) => JSON.stringify([id, r.recipient_public_key.x, r.domains, r.addresses]);
    // The home pushes every 10 s; an unchanged table is not rewritten (or re-dated).
    if (previous && canonical(previous, previous.key_id) === canonical(update, keyId)) return json(200, { ...previous, edge: identity(env) });
    const routing: Routing = { recipient_public_key: update.recipient_public_key, key_id: keyId, domains: update.domains, addresses: update.addresses, updated_at: new Date().toISOString() };
    try {
      await env.BUFFER.put(ROUTING_FILE, JSON.stringify({ version: 1, ...routing }));
    } catch {
      throw new ApiError('service_unavailable', 'The routing could not be stored on the edge.');
    }
    return json(200, { ...routing, edge: identity(env) });
  }
  if (path === '/wait' && method === 'GET') {
    const q = readQuery(url, ['after', 'timeout_ms']);
    const after = q.after ?? '';
    const deadline = Date.now() + integer(q.timeout_ms, 'timeout_ms', 0, WAIT_MAX_MS, WAIT_MAX_MS);
    for (;;) {
      const page = await env.BUFFER.list({ prefix: OBJECTS, limit: 1, ...(after ? { startAfter: OBJECTS + after } : {}) });
      if (page.objects.length > 0) return json(200, { available: true, latest: await newestKey(env, after) });
      const left = deadline - Date.now();
      if (left <= 0) return json(200, { available: false, latest: await newestKey(env, '') });
      await sleep(Math.min(WAIT_POLL_MS, left));
    }
  }
  if ((path === '/outbound' && method === 'POST') || (parts[0] === 'outbound' && parts.length === 2 && method === 'GET') || (path === '/events' && method === 'GET') || (path === '/reports/dropped' && method === 'GET')) {
    throw NOT_SENDING;
  }
  throw new ApiError('not_found', `There is no route ${method} ${path.slice(0, 200)}.`);
}

// ---- Receiving ----

function maxMessageBytes(env: Env): number {
  const n = Number(env.MAX_MESSAGE_BYTES);
  return Number.isSafeInteger(n) && n >= 1024 ? n : DEFAULT_MAX_MESSAGE_BYTES;
}

/** The message's bytes, counted as they arrive (whatever `rawSize` said); null past `limit`. */
async function readRaw(stream: ReadableStream<Bytes>, limit: number): Promise<Bytes | null> {
  const chunks: Bytes[] = [];
  let total = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limit) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  return concat(chunks);
}

/**
 * Nothing was checked at this edge: it never sees the connection (no client IP or HELO), so the
 * home evaluates the message itself (envelope `via`, docs/edge.md). An older home reads this as
 * "could not check", as it reads an edge whose mailauth failed.
 */
const UNCHECKED = {
  spf: { result: 'temperror', domain: null },
  dkim: { result: 'temperror', signatures: [] },
  dmarc: { result: 'temperror', policy: null, domain: null },
  arc: { result: 'temperror' },
};

async function receive(message: IncomingEmail, env: Env): Promise<void> {
  const limit = maxMessageBytes(env);
  if (message.rawSize > limit) {
    await message.setReject(`552 5.3.4 Message size exceeds the limit of ${limit} bytes`);
    return;
  }
  const routing = await readRouting(env);
  // Without routing nothing can be sealed; throwing makes Email Routing answer a temporary failure.
  if (!routing) throw new Error('no routing yet');
  const recipient = message.to.toLowerCase();
  if (!routes(routing, recipient)) {
    await message.setReject('550 5.1.1 Mailbox unavailable: the recipient is not hosted here');
    return;
  }
  const raw = await readRaw(message.raw, limit);
  if (raw === null) {
    await message.setReject(`552 5.3.4 Message size exceeds the limit of ${limit} bytes`);
    return;
  }
  const receivedAt = new Date().toISOString();
  const meta: SealedMeta = {
    envelope: { mail_from: message.from, rcpt_to: [recipient], client_ip: '', helo: '', received_at: receivedAt, via: VIA_CLOUDFLARE },
    auth: UNCHECKED,
    spam: null,
  };
  const sealed = await sealMessage(meta, raw, routing.recipient_public_key, routing.key_id);
  const key = nextObjectKey();
  const entry = { key, size: sealed.bytes.length, received_at: receivedAt, recipients: [recipient], key_id: routing.key_id };
  // The object first: an object without a queue entry is kept (and listed), an entry without its object is not.
  await env.BUFFER.put(OBJECTS + key, sealed.bytes, {
    customMetadata: { format: sealed.binary ? 'v2' : 'v1' },
    httpMetadata: { contentType: sealed.binary ? SEALED_V2_MEDIA_TYPE : JOSE_MEDIA_TYPE },
  });
  try {
    await env.BUFFER.put(QUEUE + key, JSON.stringify(entry), { httpMetadata: { contentType: 'application/json' } });
  } catch (err) {
    // Not stored: the sender is told to try again, so the object must not stay behind as a duplicate.
    await env.BUFFER.delete(OBJECTS + key).catch(() => undefined);
    throw err;
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    try {
      return await route(request, env);
    } catch (err) {
      return errorResponse(err instanceof ApiError ? err : new ApiError('internal_error', 'An internal error occurred.'));
    }
  },
  async email(message: IncomingEmail, env: Env): Promise<void> {
    await receive(message, env);
  },
};
