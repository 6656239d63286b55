/**
 * The one Ajv configuration for every JSON schema svc checks: REST request parts, MCP arguments
 * (checked against the REST schemas) and the edge API. Unknown fields are rejected by the schemas
 * (`additionalProperties: false`), never silently removed; defaults are filled in; formats
 * (`date-time`, `email`, `uri`, …) are enforced. Only values that arrive as text — query strings,
 * path parameters, headers — are coerced to the schema's types; a JSON body must already have them.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { lazy } from './lazy-compile.js';


/** A validator instance with svc's settings; `coerce` for parts that arrive as text. */
export function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({ removeAdditional: false, useDefaults: true, coerceTypes: coerce ? 'array' : false, allErrors: false, strict: false });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  return ajv;
}

/**
 * A fastify validator compiler (`app.setValidatorCompiler`): bodies checked as they are, every
 * other part coerced. One pair of instances per server, so compiled schemas are cached per server.
 * Each validator is compiled on its first use (src/core/lazy-compile.ts);
 * fastify reads `errors` from the function it called, so the wrapper carries them over.
 */
export function requestValidatorCompiler(): (route: { schema: object; httpPart?: string }) => ValidateFunction {
  const bodyAjv = makeAjv(false);
  const textAjv = makeAjv(true);
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? bodyAjv : textAjv;
    const compiled = lazy(() => ajv.compile(schema));
    const validate = ((data: unknown) => {
      const fn = compiled();
      const ok = fn(data);
      validate.errors = fn.errors;
      return ok;
    }) as ValidateFunction;
    return validate;
  };
}

const jsonAjv = makeAjv(false);
const jsonValidators = new WeakMap<object, ValidateFunction>();

/** The validator for a JSON value checked outside a request (MCP arguments): as a body is, compiled once per schema. */
export function jsonValidator(schema: object): ValidateFunction {
  let validate = jsonValidators.get(schema);
  if (!validate) {
    validate = jsonAjv.compile(schema);
    jsonValidators.set(schema, validate);
  }
  return validate;
}

/**
 * `true` only when A and B are the same type. A route pins its response schema to the view it
 * serializes (`const pinned: SameShape<Static<typeof Schema>, ReturnType<typeof view>> = true`):
 * the serializer drops undeclared fields, so a field added to a view but not to its schema must
 * fail to compile rather than silently vanish from the wire.
 */
export type SameShape<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
