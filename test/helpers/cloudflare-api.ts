/**
 * A local stand-in for Cloudflare's v4 API (the zones list and DNS records), on 127.0.0.1, for the
 * Cloudflare DNS provider's tests. No Cloudflare account is reachable from the tests, so this
 * server holds svc to Cloudflare's published OpenAPI schema instead: every request is checked
 * against test/fixtures/cloudflare/openapi-dns.json (operation, path and query parameters,
 * `Authorization: Bearer`, JSON body) with ajv, and so is every answer it gives. A request or
 * answer that does not validate is recorded in `violations` (a test asserts it stays empty) and
 * the request is answered 400 in Cloudflare's error envelope. Records live in memory, and are
 * mirrored into a loopback DNS zone when one is given, so svc's domain checks see them.
 */
import http from 'node:http';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { Zone } from './dns.js';

const SCHEMA_FILE = new URL('../fixtures/cloudflare/openapi-dns.json', import.meta.url);
/** A request body read at most (svc's bodies are a few kB). */
const MAX_BODY = 64 * 1024;

type Json = Record<string, unknown>;
interface Parameter { in: 'path' | 'query' | 'header'; name: string; required?: boolean; schema: Json }
interface Operation { parameters: Parameter[]; requestBody?: { required?: boolean; content: Record<string, { schema: Json }> }; responses: Record<string, { content?: Record<string, { schema: Json }> }> }
interface OpenApi { paths: Record<string, Record<string, Operation>>; components: { securitySchemes: Record<string, { type: string; scheme?: string }> }; security: Record<string, string[]>[] }

export interface CloudflareRecord {
  id: string;
  zone_id: string;
  zone_name: string;
  name: string;
  type: string;
  content: string;
  priority?: number;
  ttl: number;
  proxied: boolean;
  proxiable: boolean;
  comment?: string;
  tags: string[];
  meta: { auto_added: boolean; source: string };
  created_on: string;
  modified_on: string;
}

/** A zone's Email Routing as the fake keeps it. */
export interface FakeEmailRouting {
  enabled: boolean;
  rules: { id: string; tag: string; name: string; enabled: boolean; priority: number; matchers: Json[]; actions: Json[] }[];
  catchAll: { name: string; enabled: boolean; matchers: Json[]; actions: Json[] };
}

export interface FakeCloudflare {
  /** The API base to configure as `api_base`: `http://127.0.0.1:<port>/client/v4`. */
  apiBase: string;
  /** The one API token it accepts. */
  token: string;
  zones: { id: string; name: string }[];
  /** Every record, in creation order. */
  records: CloudflareRecord[];
  /** Records of one name (case-insensitive) and type, as `priority content` for MX, content otherwise. */
  contents(name: string, type: string): string[];
  /** Adds a record as its owner would in the dashboard (no request). */
  seed(zone: string, r: { name: string; type: string; content: string; priority?: number }): CloudflareRecord;
  /** Email Routing of a zone, by zone name (disabled, no rules, catch-all drop until changed). */
  emailRouting(zone: string): FakeEmailRouting;
  /** `METHOD path` of every request, in order. */
  requests: string[];
  /** Requests and answers that did not validate against the schema; must stay empty. */
  violations: string[];
  close(): Promise<void>;
}

const spec = JSON.parse(fs.readFileSync(SCHEMA_FILE, 'utf8')) as OpenApi;
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
// OpenAPI 3.0 keywords (example, readOnly, x-…) are not JSON Schema: strict off so they are ignored; `nullable` is ajv's own.
const ajv = addFormats(new Ajv({ strict: false, allErrors: true, logger: false }));
const compiled = new Map<Json, ValidateFunction>();
const validator = (schema: Json) => {
  let v = compiled.get(schema);
  if (!v) compiled.set(schema, (v = ajv.compile(schema)));
  return v;
};
const errorsOf = (v: ValidateFunction) => ajv.errorsText(v.errors, { separator: '; ' }).slice(0, 500);

/**
 * The schema an error answer is checked against. At the extracted commit the dns_records
 * operations' 4xx schemas are allOf(the success envelope, the failure envelope) — `success` both
 * `true` and `false`, which nothing satisfies — so for those the failure envelope alone is used
 * (the allOf member that says `success: false`). README.md in the fixtures says the same.
 */
function errorSchema(schema: Json): Json {
  const all = schema.allOf as Json[] | undefined;
  if (!all) return schema;
  const failure = all.find((s) => JSON.stringify((s.properties as Json | undefined)?.success ?? null).includes('[false]'));
  return failure ?? schema;
}

/**
 * A request body's schema as OpenAPI 3.0 means it: a `readOnly` property is answered, never sent,
 * so it is not required in a request (and must not be sent). At the extracted commit the POST
 * body of dns_records is the response's record schema, whose `required` also lists `id` — which
 * no create request carries — so `id` is treated as read-only too (README.md in the fixtures).
 */
function requestSchema(schema: Json): { schema: Json; readOnly: Set<string> } {
  // A name counts as read-only when every record type that declares it says so (CAA's computed `content` is read-only, MX's is not).
  const seen = new Map<string, boolean>();
  const collect = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(collect);
    if (!node || typeof node !== 'object') return;
    const props = (node as Json).properties as Record<string, Json> | undefined;
    if (props) for (const [name, prop] of Object.entries(props)) seen.set(name, (seen.get(name) ?? true) && prop?.readOnly === true);
    Object.values(node).forEach(collect);
  };
  collect(schema);
  const readOnly = new Set<string>(['id', ...[...seen].filter(([, ro]) => ro).map(([name]) => name)]);
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(strip);
    if (!node || typeof node !== 'object') return node;
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === 'required' && Array.isArray(v) ? v.filter((n) => !readOnly.has(n as string)) : strip(v)]));
  };
  return { schema: strip(schema) as Json, readOnly };
}
const requestSchemas = new Map<Json, ReturnType<typeof requestSchema>>();

/** Query and path values arrive as strings: numbers and booleans are converted where the schema says so. */
function coerce(value: string, schema: Json): unknown {
  if ((schema.type === 'number' || schema.type === 'integer') && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  if (schema.type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

const now = () => new Date().toISOString();
const newId = () => randomBytes(16).toString('hex');

export async function startCloudflareApi(o: { zones: string[]; token?: string; dns?: Zone }): Promise<FakeCloudflare> {
  const token = o.token ?? randomBytes(30).toString('base64url');
  const zones = o.zones.map((name) => ({ id: newId(), name }));
  const routing = new Map<string, FakeEmailRouting>(
    zones.map((z) => [z.id, { enabled: false, rules: [], catchAll: { name: '', enabled: false, matchers: [{ type: 'all' }], actions: [{ type: 'drop' }] } }]),
  );
  const records: CloudflareRecord[] = [];
  const requests: string[] = [];
  const violations: string[] = [];

  /** The loopback DNS zone holds exactly the records here (plus nothing else). */
  const mirror = () => {
    if (!o.dns) return;
    for (const k of Object.keys(o.dns)) delete o.dns[k];
    for (const r of records) {
      const at = (o.dns[r.name.toLowerCase()] ??= {});
      if (r.type === 'TXT') (at.TXT ??= []).push(unquote(r.content));
      if (r.type === 'A') (at.A ??= []).push(r.content);
      if (r.type === 'MX') (at.MX ??= []).push({ exchange: r.content, priority: r.priority ?? 10 });
    }
  };

  const makeRecord = (zone: { id: string; name: string }, r: { name: string; type: string; content: string; priority?: number; ttl?: number; proxied?: boolean; comment?: string; tags?: string[] }): CloudflareRecord => {
    const t = now();
    return {
      id: newId(),
      zone_id: zone.id,
      zone_name: zone.name,
      name: r.name.toLowerCase(),
      type: r.type,
      content: r.content,
      ...(r.priority !== undefined ? { priority: r.priority } : {}),
      ttl: r.ttl ?? 1,
      proxied: r.proxied ?? false,
      proxiable: r.type === 'A' || r.type === 'AAAA' || r.type === 'CNAME',
      ...(r.comment !== undefined ? { comment: r.comment } : {}),
      tags: r.tags ?? [],
      meta: { auto_added: false, source: 'primary' },
      created_on: t,
      modified_on: t,
    };
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => handle(req, res, size > MAX_BODY ? null : Buffer.concat(chunks).toString('utf8')));
  });

  function answer(res: http.ServerResponse, op: Operation | null, where: string, status: number, body: Json): void {
    if (op) {
      const response = op.responses[String(status)] ?? op.responses['4xx'] ?? op.responses['4XX'];
      const schema = response?.content?.['application/json']?.schema;
      if (!schema) violations.push(`${where}: the schema has no answer ${status}`);
      else {
        const v = validator(status >= 400 ? errorSchema(schema) : schema);
        if (!v(body)) violations.push(`${where}: the fake's own answer ${status} does not validate: ${errorsOf(v)}`);
      }
    }
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  const failure = (code: number, message: string): Json => ({ success: false, errors: [{ code, message }], messages: [], result: null });

  function handle(req: http.IncomingMessage, res: http.ServerResponse, text: string | null): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = (req.method ?? 'GET').toLowerCase();
    const where = `${req.method} ${url.pathname}${url.search}`;
    requests.push(`${req.method} ${url.pathname}`);
    const invalid = (op: Operation | null, why: string) => {
      violations.push(`${where}: ${why}`);
      answer(res, op, where, 400, failure(1004, `Request does not match Cloudflare's API schema: ${why}`));
    };

    // The operation: the path template under /client/v4 and the method.
    if (!url.pathname.startsWith('/client/v4/')) return invalid(null, 'not under /client/v4');
    const rest = url.pathname.slice('/client/v4'.length);
    let op: Operation | null = null;
    let params: Record<string, string> = {};
    for (const [template, item] of Object.entries(spec.paths)) {
      const names: string[] = [];
      const re = new RegExp(`^${template.replace(/\{([^}]+)\}/g, (_, n: string) => (names.push(n), '([^/]+)'))}$`);
      const m = re.exec(rest);
      if (!m || !item[method]) continue;
      op = item[method];
      params = Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1])]));
    }
    if (!op) return invalid(null, 'no such operation in the schema subset');

    // Security: the document's API-token scheme, HTTP bearer.
    const bearer = Object.entries(spec.components.securitySchemes).find(([, s]) => s.type === 'http' && s.scheme === 'bearer');
    if (!bearer || !spec.security.some((s) => bearer[0] in s)) return invalid(op, 'the schema has no bearer scheme');
    const auth = req.headers.authorization ?? '';
    const m = /^Bearer (\S+)$/.exec(auth);
    if (!m) return invalid(op, 'Authorization is not `Bearer <token>`');

    // Parameters.
    const declared = new Set(op.parameters.filter((p) => p.in === 'query').map((p) => p.name));
    for (const key of url.searchParams.keys()) if (!declared.has(key)) return invalid(op, `query parameter ${key} is not in the schema`);
    const values: Record<string, unknown> = {};
    for (const p of op.parameters) {
      const raw = p.in === 'path' ? params[p.name] : p.in === 'query' ? url.searchParams.get(p.name) ?? undefined : (req.headers[p.name.toLowerCase()] as string | undefined);
      if (raw === undefined) {
        if (p.required) return invalid(op, `${p.in} parameter ${p.name} is required`);
        continue;
      }
      const value = coerce(raw, p.schema);
      const v = validator(p.schema);
      if (!v(value)) return invalid(op, `${p.in} parameter ${p.name}=${raw.slice(0, 80)}: ${errorsOf(v)}`);
      values[p.name] = value;
    }

    // Body.
    let body: Json | null = null;
    if (op.requestBody && (op.requestBody.required || text !== '')) {
      if (text === null) return invalid(op, 'body too large');
      if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) return invalid(op, 'Content-Type is not application/json');
      try {
        body = JSON.parse(text) as Json;
      } catch {
        return invalid(op, 'body is not JSON');
      }
      const declared = op.requestBody.content['application/json']?.schema;
      // Without a schema (the DELETE's required body) any JSON will do.
      if (declared) {
        let forRequest = requestSchemas.get(declared);
        if (!forRequest) requestSchemas.set(declared, (forRequest = requestSchema(declared)));
        const sent = Object.keys(body ?? {}).filter((k) => forRequest.readOnly.has(k));
        if (sent.length) return invalid(op, `body: read-only properties sent: ${sent.join(', ')}`);
        const v = validator(forRequest.schema);
        if (!v(body)) return invalid(op, `body: ${errorsOf(v)}`);
      }
    } else if (text && !op.requestBody) return invalid(op, 'a body where the schema has none');

    // Valid. Now Cloudflare's behaviour.
    if (m[1] !== token) return answer(res, op, where, 403, failure(10000, 'Authentication error'));
    const ok = (result: unknown, info?: Json) => answer(res, op, where, 200, { success: true, errors: [], messages: [], result, ...(info ? { result_info: info } : {}) });
    const page = <T>(all: T[], perPage: number) => {
      const n = Number(values.page ?? 1);
      return { items: all.slice((n - 1) * perPage, n * perPage), info: { page: n, per_page: perPage, count: Math.min(perPage, Math.max(0, all.length - (n - 1) * perPage)), total_count: all.length, total_pages: Math.ceil(all.length / perPage) } };
    };

    if (rest === '/zones') {
      const wanted = typeof values.name === 'string' ? values.name.toLowerCase() : null;
      const { items, info } = page(zones.filter((z) => wanted === null || z.name === wanted), Number(values.per_page ?? 20));
      return ok(items.map(zoneView), info);
    }
    const zone = zones.find((z) => z.id === (params.zone_id ?? params.zone_identifier));
    if (!zone) return answer(res, op, where, 404, failure(7003, 'Could not route to /zones/' + params.zone_id + ', perhaps your object identifier is invalid?'));
    const email = routing.get(zone.id)!;
    if (rest.includes('/email/routing')) {
      const settings = () => ({ id: zone.id, tag: zone.id, name: zone.name, enabled: email.enabled, skip_wizard: true, status: email.enabled ? 'ready' : 'unconfigured', created: '2024-01-01T00:00:00Z', modified: now() });
      if (rest.endsWith('/email/routing') && method === 'get') return ok(settings());
      if (rest.endsWith('/email/routing/enable')) {
        // As Cloudflare documents the call: "Add and lock the necessary MX and SPF records" —
        // route1/2/3 with priorities of its choosing and its SPF record, unless already there.
        if (!email.enabled) {
          const present = (type: string, content: string) => records.some((r) => r.zone_id === zone.id && r.name === zone.name && r.type === type && r.content === content);
          for (const [host, priority] of [['route1.mx.cloudflare.net', 13], ['route2.mx.cloudflare.net', 86], ['route3.mx.cloudflare.net', 24]] as const) {
            if (!present('MX', host)) records.push({ ...makeRecord(zone, { name: zone.name, type: 'MX', content: host, priority }), meta: { auto_added: true, source: 'primary' } });
          }
          if (!records.some((r) => r.zone_id === zone.id && r.name === zone.name && r.type === 'TXT' && r.content.includes('v=spf1'))) {
            records.push({ ...makeRecord(zone, { name: zone.name, type: 'TXT', content: '"v=spf1 include:_spf.mx.cloudflare.net ~all"' }), meta: { auto_added: true, source: 'primary' } });
          }
          mirror();
        }
        email.enabled = true;
        return ok(settings());
      }
      if (rest.endsWith('/rules/catch_all')) {
        if (method === 'put') {
          const b = body as { actions: Json[]; matchers: Json[]; enabled?: boolean; name?: string };
          email.catchAll = { name: b.name ?? '', enabled: b.enabled ?? true, matchers: b.matchers, actions: b.actions };
        }
        return ok({ id: `${zone.id.slice(0, 16)}catchall`, tag: `${zone.id.slice(0, 16)}catchall`, ...email.catchAll });
      }
      if (rest.endsWith('/rules') && method === 'get') {
        const { items, info } = page(email.rules.filter((r) => values.enabled === undefined || r.enabled === values.enabled), Number(values.per_page ?? 20));
        return ok(items, info);
      }
      if (rest.endsWith('/rules') && method === 'post') {
        const b = body as { actions: Json[]; matchers: Json[]; enabled?: boolean; name?: string; priority?: number };
        const id = newId();
        const rule = { id, tag: id, name: b.name ?? '', enabled: b.enabled ?? true, priority: b.priority ?? 0, matchers: b.matchers, actions: b.actions };
        email.rules.push(rule);
        return ok(rule);
      }
    }
    if (rest.endsWith('/dns_records') && method === 'get') {
      const name = typeof values.name === 'string' ? values.name.toLowerCase() : null;
      const all = records.filter((r) => r.zone_id === zone.id && (name === null || r.name === name) && (values.type === undefined || r.type === values.type));
      const { items, info } = page(all, Number(values.per_page ?? 100));
      return ok(items, info);
    }
    if (method === 'post') {
      const b = body as { name: string; type: string; content: string; priority?: number; ttl?: number; proxied?: boolean; comment?: string; tags?: string[] };
      const name = b.name.toLowerCase() === '@' ? zone.name : b.name.toLowerCase();
      if (name !== zone.name && !name.endsWith(`.${zone.name}`)) return answer(res, op, where, 400, failure(9005, `Record name ${name} is not in the zone ${zone.name}.`));
      if (records.some((r) => r.zone_id === zone.id && r.name === name && r.type === b.type && r.content === b.content && r.priority === b.priority)) {
        return answer(res, op, where, 400, failure(81058, 'An identical record already exists.'));
      }
      const created = makeRecord(zone, { ...b, name });
      records.push(created);
      mirror();
      return ok(created);
    }
    if (method === 'delete') {
      const i = records.findIndex((r) => r.zone_id === zone.id && r.id === params.dns_record_id);
      if (i < 0) return answer(res, op, where, 404, failure(81044, 'Record does not exist.'));
      records.splice(i, 1);
      mirror();
      return ok({ id: params.dns_record_id });
    }
    return invalid(op, 'operation not implemented by the fake');
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    apiBase: `http://127.0.0.1:${port}/client/v4`,
    token,
    zones,
    records,
    requests,
    violations,
    emailRouting: (name) => routing.get(zones.find((z) => z.name === name)!.id)!,
    contents: (name, type) => records.filter((r) => r.name === name.toLowerCase() && r.type === type).map((r) => (r.type === 'MX' ? `${r.priority} ${r.content}` : r.content)),
    seed(zoneName, r) {
      const zone = zones.find((z) => z.name === zoneName)!;
      const created = makeRecord(zone, r);
      records.push(created);
      mirror();
      return created;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function zoneView(z: { id: string; name: string }): Json {
  const t = '2024-01-01T00:00:00Z';
  return {
    id: z.id,
    name: z.name,
    status: 'active',
    paused: false,
    type: 'full',
    development_mode: 0,
    owner: { id: '7c5dae5552338874e5053f2534d2767a', name: 'svc tests', type: 'user' },
    account: { id: '01a7362d577a6c3019a474fd6f485823', name: 'svc test account' },
    meta: { step: 2, custom_certificate_quota: 0, page_rule_quota: 3, phishing_detected: false },
    name_servers: ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com'],
    original_name_servers: null,
    original_registrar: null,
    original_dnshost: null,
    created_on: t,
    modified_on: t,
    activated_on: t,
    permissions: ['#zone:read', '#dns_records:edit'],
  };
}

/** TXT content as DNS carries it: quoted strings unquoted and joined; unquoted content as it is. */
function unquote(content: string): string {
  if (!content.trimStart().startsWith('"')) return content;
  let out = '';
  const re = /"((?:[^"\\]|\\.)*)"/g;
  for (let m = re.exec(content); m; m = re.exec(content)) out += m[1].replace(/\\(.)/g, '$1');
  return out;
}
