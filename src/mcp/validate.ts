/**
 * MCP arguments are mapped to the REST body or query they stand for and checked against the
 * same typebox schema the REST route uses, so limits and error codes are the same on both.
 * The validator is the REST body validator's (src/core/validation.ts: no coercion, formats on).
 */
import type { TSchema } from 'typebox';
import { ApiError } from '../core/errors.js';
import { jsonValidator } from '../core/validation.js';
import { camelCase } from './arguments.js';

/** `/reply_to/0` → `replyTo[0]`: the argument as the MCP caller named it. */
function argumentPath(instancePath: string): string {
  return instancePath
    .split('/')
    .filter(Boolean)
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : `${i ? '.' : ''}${camelCase(part)}`))
    .join('');
}

/** Drops keys whose value is undefined: an omitted argument is an omitted field. */
export function defined<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** The value, checked against the REST schema; `validation_error` naming the argument otherwise. */
export function checked<T>(schema: TSchema, value: Record<string, unknown>): T {
  const validate = jsonValidator(schema);
  const body = defined(value);
  if (validate(body)) return body as T;
  const error = validate.errors?.[0];
  const unknown = error?.keyword === 'additionalProperties' ? (error.params as { additionalProperty?: string }).additionalProperty : undefined;
  const where = argumentPath(error?.instancePath ?? '');
  const message = unknown !== undefined ? `Unknown argument \`${argumentPath('/' + unknown)}\`.` : `Invalid argument${where ? ` \`${where}\`` : 's'}: ${error?.message ?? 'invalid input'}.`;
  throw new ApiError('validation_error', message, { fix: 'Compare the arguments with the tool’s input schema (tools/list).' });
}
