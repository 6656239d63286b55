/**
 * MCP tool arguments match their REST schemas (issue 18): for every tool, each property of each
 * REST schema it stands for (path, body or query) is an argument named in camelCase, with the
 * same required-ness, types and limits, as agents see it in tools/list (the JSON Schema the SDK
 * makes with zod's own converter). Every other argument is one of the few a tool declares for
 * itself. Pure: no service, no database.
 */
import t from 'tap';
import { z } from 'zod';
import * as zm from 'zod/v4-mini';
import { TOOLS } from '../../src/mcp/tools.js';
import { camelCase, restBody, type JsonSchema } from '../../src/mcp/arguments.js';
import { SendBody } from '../../src/mail/compose-schemas.js';
import { UpdateDraftBody } from '../../src/mail/drafts/schemas.js';

/** Arguments no REST schema holds: the idempotency header, the list path segments, the attachment tool's either-or ids. */
const OWN_ARGUMENTS: Record<string, string[]> = {
  send_message: ['idempotencyKey'],
  reply_to_message: ['idempotencyKey'],
  reply_all_message: ['idempotencyKey'],
  forward_message: ['idempotencyKey'],
  send_draft: ['idempotencyKey'],
  list_list_entries: ['direction', 'listType'],
  get_list_entry: ['direction', 'listType', 'entry'],
  get_attachment: ['inboxId', 'threadId', 'messageId', 'attachmentId'],
};

/** Every limit keyword our typebox schemas use (a new one must be added here and in arguments.ts). */
const LIMIT_KEYWORDS = ['minLength', 'maxLength', 'pattern', 'format', 'minimum', 'maximum', 'minItems', 'maxItems', 'maxProperties', 'minProperties', 'uniqueItems', 'exclusiveMinimum', 'exclusiveMaximum'];

/** zod's integers carry the safe-integer range when no limit is given; that is no limit of ours. */
const SAFE = new Set([Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]);

function limits(s: JsonSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of LIMIT_KEYWORDS) if (s[k] !== undefined && !(typeof s[k] === 'number' && SAFE.has(s[k]))) out[k] = s[k];
  return out;
}

/**
 * One shape for both sides: unions flattened (and `null` dropped unless the tool keeps it),
 * string-literal unions as enums, records as their value type, object keys in camelCase.
 */
function canonical(s: JsonSchema, nullable: boolean): unknown {
  if (s.anyOf) {
    const flat = (list: JsonSchema[]): JsonSchema[] => list.flatMap((a) => (a.anyOf && Object.keys(limits(a)).length === 0 ? flat(a.anyOf) : [a]));
    const alternatives = flat(s.anyOf).filter((a) => nullable || a.type !== 'null');
    if (alternatives.every((a) => typeof a.const === 'string')) return { enum: alternatives.map((a) => a.const).sort(), ...limits(s) };
    if (alternatives.length === 1) return { ...(canonical(alternatives[0], nullable) as object), ...limits(s) };
    return { anyOf: alternatives.map((a) => canonical(a, nullable)).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))), ...limits(s) };
  }
  if (Array.isArray(s.enum)) return { enum: [...(s.enum as string[])].sort(), ...limits(s) };
  if (s.const !== undefined) return { const: s.const };
  if (s.type === 'array') return { type: 'array', items: canonical(s.items!, nullable), ...limits(s) };
  if (s.type === 'object') {
    const values = [...Object.values(s.patternProperties ?? {}), ...(typeof s.additionalProperties === 'object' ? [s.additionalProperties as JsonSchema] : [])];
    if (values.length === 1) return { record: canonical(values[0], nullable), ...limits(s) };
    const properties = Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [camelCase(k), canonical(v, nullable)]));
    return { type: 'object', properties, required: (s.required ?? []).map(camelCase).sort(), ...limits(s) };
  }
  return { type: s.type, ...limits(s) };
}

for (const tool of TOOLS) {
  t.test(`${tool.name}: arguments are its REST schemas' properties`, async (t) => {
    const listed = zm.toJSONSchema(z.strictObject(tool.input), { target: 'draft-7', io: 'input' }) as JsonSchema;
    const properties = listed.properties ?? {};
    const required = new Set(listed.required ?? []);
    t.equal(listed.additionalProperties, false, 'unknown arguments are refused');
    const fromRest = new Set<string>();
    for (const source of tool.sources) {
      const rest = source.schema as unknown as JsonSchema;
      const omitted = new Set(source.options?.omit ?? []);
      const restRequired = new Set(rest.required ?? []);
      for (const [name, property] of Object.entries(rest.properties ?? {})) {
        if (omitted.has(name)) continue;
        const argument = camelCase(name);
        fromRest.add(argument);
        t.ok(properties[argument], `${source.part} property ${name} is the argument ${argument}`);
        if (!properties[argument]) continue;
        t.equal(required.has(argument), restRequired.has(name), `${argument} is required exactly when ${name} is`);
        t.same(canonical(properties[argument], true), canonical(property, source.options?.nullable ?? false), `${argument} has the types and limits of ${name}`);
        t.type(properties[argument].description, 'string', `${argument} is described`);
      }
    }
    const own = Object.keys(properties).filter((a) => !fromRest.has(a));
    t.same(own.sort(), [...(OWN_ARGUMENTS[tool.name] ?? [])].sort(), 'every other argument is one the tool declares for itself');
  });
}

t.test('arguments map back to the REST body, nested objects included', async (t) => {
  const args = { inboxId: 'a@example.test', to: ['b@example.test'], replyTo: 'c@example.test', attachments: [{ contentType: 'text/plain', content: 'aGk=', stray: 1 }], idempotencyKey: 'k' };
  t.same(restBody(SendBody, args), { to: ['b@example.test'], reply_to: 'c@example.test', attachments: [{ content_type: 'text/plain', content: 'aGk=' }] });
  t.same(restBody(UpdateDraftBody, { sendAt: null, addLabels: 'x' }), { send_at: null, add_labels: 'x' }, 'null (clear) is kept');
});
