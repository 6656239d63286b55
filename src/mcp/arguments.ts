/**
 * MCP tool arguments derived from the REST typebox schemas (issue 18), so REST and MCP cannot
 * drift: a tool's arguments are the REST body's (or query's, or path's) properties in camelCase
 * (`reply_to` → `replyTo`, also inside nested objects such as attachments), with the REST types,
 * required-ness and limits. Invariants:
 * - Zod checks the types only; the limits travel as JSON Schema metadata (tools/list shows them)
 *   and are enforced by the REST schema itself (validate.ts `checked`), so a limit is counted
 *   the same way on both surfaces and refused with the same argument-naming message.
 * - Every argument has a description: a REST property without one (DESCRIPTIONS or the tool's
 *   own) fails at startup, so a new REST field cannot reach agents undocumented.
 * - `null` alternatives are dropped unless the tool asks for them (`nullable`): over MCP null
 *   means "clear" only where the tool says so (update_inbox, update_draft).
 * Only the subset of JSON Schema our typebox bodies use is understood; anything else throws.
 */
import { z } from 'zod';
import type { TSchema } from 'typebox';

/** The JSON Schema keywords our typebox schemas use. */
export interface JsonSchema {
  type?: string;
  const?: string | number | boolean;
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  patternProperties?: Record<string, JsonSchema>;
  [keyword: string]: unknown;
}

/** The limit keywords carried to the tool's JSON Schema (and compared by the drift test). */
export const LIMIT_KEYWORDS = ['minLength', 'maxLength', 'pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties'] as const;

/** `reply_to` → `replyTo`: the REST name as an MCP argument. */
export const camelCase = (name: string): string => name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

/** Argument descriptions shared by every tool, by argument name; a tool may override any. */
const DESCRIPTIONS: Record<string, string> = {
  inboxId: 'ID of the inbox (its email address)',
  threadId: 'ID of the thread',
  messageId: 'ID of the message (its Message-ID, with angle brackets)',
  draftId: 'ID of the draft',
  limit: 'Max number of items to return (1 to 100, default 20)',
  pageToken: 'next_page_token from the previous page',
  ascending: 'Oldest first instead of newest first',
  includeSpam: 'Include mail labelled spam (needs label_spam_read)',
  includeBlocked: 'Include mail labelled blocked (needs label_blocked_read)',
  includeUnauthenticated: 'Include mail labelled unauthenticated (needs label_unauthenticated_read)',
  includeTrash: 'Include mail labelled trash (needs label_trash_read)',
  addLabels: 'Labels to add',
  removeLabels: 'Labels to remove (removal wins); system state labels cannot be changed',
  to: 'Recipients',
  cc: 'CC recipients',
  bcc: 'BCC recipients',
  replyTo: 'Reply-To address (at most one)',
  subject: 'Subject',
  text: 'Plain text body',
  html: 'HTML body',
  attachments: 'Attachments (up to 32)',
  headers: 'Extra headers: X-* and Auto-Submitted only',
  labels: 'Labels to put on the sent message',
  filename: 'Filename',
  contentType: 'MIME type',
  contentDisposition: 'Content disposition',
  contentId: 'Content ID, required for inline attachments',
  content: 'Content, canonical base64',
  url: 'Not supported: attachments by URL are refused',
  clientId: 'Client-supplied key for idempotent creation',
  q: 'Full-text query',
};

export interface ArgumentOptions {
  /** REST properties the tool does not offer. */
  omit?: readonly string[];
  /** Keep `null` alternatives (null clears a field); dropped otherwise. */
  nullable?: boolean;
  /** Descriptions by argument name, over DESCRIPTIONS. */
  describe?: Record<string, string>;
}

interface Context {
  nullable: boolean;
  describe: Record<string, string>;
}

const json = (schema: TSchema): JsonSchema => schema as unknown as JsonSchema;

function limitsOf(s: JsonSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const keyword of LIMIT_KEYWORDS) if (s[keyword] !== undefined) out[keyword] = s[keyword];
  return out;
}

/** A union's alternatives with nested unions (a nullable label list) spread into it. */
const flatten = (alternatives: JsonSchema[]): JsonSchema[] => alternatives.flatMap((a) => (a.anyOf && Object.keys(limitsOf(a)).length === 0 ? flatten(a.anyOf) : [a]));

/** One schema as zod: the type checked, the limits (and the description, if given) as metadata. */
function zodOf(s: JsonSchema, ctx: Context, description?: string): z.ZodType {
  const meta = { ...limitsOf(s), ...(description === undefined ? {} : { description }) };
  const withMeta = (t: z.ZodType) => (Object.keys(meta).length ? t.meta(meta) : t);
  if (s.anyOf) {
    const alternatives = flatten(s.anyOf).filter((a) => ctx.nullable || a.type !== 'null');
    if (alternatives.length > 0 && alternatives.every((a) => typeof a.const === 'string')) {
      return withMeta(z.enum(alternatives.map((a) => a.const as string) as [string, ...string[]]));
    }
    const members = alternatives.map((a) => zodOf(a, ctx));
    if (members.length === 1) return withMeta(members[0]);
    return withMeta(z.union(members as [z.ZodType, z.ZodType, ...z.ZodType[]]));
  }
  if (s.const !== undefined) return withMeta(z.literal(s.const));
  switch (s.type) {
    case 'string':
      return withMeta(z.string());
    case 'integer':
      return withMeta(z.number().int());
    case 'number':
      return withMeta(z.number());
    case 'boolean':
      return withMeta(z.boolean());
    case 'null':
      return withMeta(z.null());
    case 'array':
      if (!s.items) break;
      return withMeta(z.array(zodOf(s.items, ctx)));
    case 'object': {
      const values = Object.values(s.patternProperties ?? {});
      if (values.length === 1) return withMeta(z.record(z.string(), zodOf(values[0], ctx)));
      // Nested objects strip unknown keys (as the hand-written attachment shape did); the REST
      // schema's own additionalProperties rule applies when the body is checked.
      if (s.properties) return withMeta(z.object(shapeOf(s, ctx, [])));
      break;
    }
  }
  throw new Error(`MCP arguments: unsupported schema ${JSON.stringify(s)}`);
}

function shapeOf(s: JsonSchema, ctx: Context, omit: readonly string[]): z.ZodRawShape {
  const required = new Set(s.required ?? []);
  const shape: Record<string, z.ZodType> = {};
  for (const [name, property] of Object.entries(s.properties ?? {})) {
    if (omit.includes(name)) continue;
    const argument = camelCase(name);
    const description = ctx.describe[argument];
    if (description === undefined) throw new Error(`MCP arguments: \`${argument}\` has no description`);
    const t = zodOf(property, ctx, description);
    shape[argument] = required.has(name) ? t : t.optional();
  }
  return shape;
}

/** The tool arguments standing for the properties of a REST body, query or path schema. */
export function argumentsOf(schema: TSchema, options: ArgumentOptions = {}): z.ZodRawShape {
  const s = json(schema);
  for (const name of options.omit ?? []) {
    if (!s.properties?.[name]) throw new Error(`MCP arguments: cannot omit \`${name}\`, the schema has no such property`);
  }
  return shapeOf(s, { nullable: options.nullable ?? false, describe: { ...DESCRIPTIONS, ...options.describe } }, options.omit ?? []);
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function restValue(value: unknown, s: JsonSchema): unknown {
  if (value === null || value === undefined) return value;
  if (s.anyOf) {
    const fit = s.anyOf.find((a) => (Array.isArray(value) ? a.type === 'array' : isPlainObject(value) ? a.type === 'object' : false));
    return fit ? restValue(value, fit) : value;
  }
  if (s.type === 'array' && s.items && Array.isArray(value)) return value.map((v) => restValue(v, s.items!));
  if (s.type === 'object' && s.properties && isPlainObject(value)) return restObject(value, s);
  return value;
}

function restObject(args: Record<string, unknown>, s: JsonSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(s.properties ?? {})) {
    const value = args[camelCase(name)];
    if (value !== undefined) out[name] = restValue(value, property);
  }
  return out;
}

/**
 * The REST body (or query) the arguments stand for: each property of `schema` taken from its
 * camelCase argument, nested objects renamed the same way; other arguments (ids, the
 * idempotency key) are not part of it.
 */
export function restBody(schema: TSchema, args: Record<string, unknown>): Record<string, unknown> {
  return restObject(args, json(schema));
}

type Camel<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;
/** A REST value's type with its object keys in camelCase, as the tool receives it. */
export type CamelKeys<T> = T extends readonly (infer U)[] ? CamelKeys<U>[] : T extends Record<string, unknown> ? { [K in keyof T as K extends string ? Camel<K> : K]: CamelKeys<T[K]> } : T;
