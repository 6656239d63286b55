/**
 * Schemas compiled on first use (src/core/lazy-compile.ts, issue 19 start-up): nothing compiles
 * before it is needed, a schema compiles once whether first reached by a call or by the
 * warm-up, the warm-up compiles everything left, and a request validator made lazy still
 * reports Ajv's errors the way fastify reads them.
 */
import t from 'tap';
import { lazy, warmSchemas } from '../../src/core/lazy-compile.js';
import { requestValidatorCompiler } from '../../src/core/validation.js';

t.test('compiled once, on first use or by the warm-up', async (t) => {
  const compiled: string[] = [];
  const make = (name: string) => lazy(() => {
    compiled.push(name);
    return () => name;
  });
  const a = make('a');
  const b = make('b');
  const c = make('c');
  t.same(compiled, [], 'nothing is compiled when declared');
  t.equal(b()(), 'b');
  t.equal(b()(), 'b');
  t.same(compiled, ['b'], 'first use compiles, later uses reuse it');
  await warmSchemas();
  t.same(compiled.sort(), ['a', 'b', 'c'], 'the warm-up compiles the rest, b not twice');
  t.equal(a()(), 'a');
  t.equal(c()(), 'c');
  t.equal(compiled.length, 3);
});

t.test('a lazy request validator checks, coerces and reports errors', async (t) => {
  const compile = requestValidatorCompiler();
  const body = compile({ schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false }, httpPart: 'body' });
  t.equal(body({ n: 1 }), true);
  t.equal(body({ n: '1' }), false, 'a body is not coerced');
  t.match(body.errors?.[0], { instancePath: '/n', keyword: 'type' });
  t.equal(body({}), false);
  t.match(body.errors?.[0], { keyword: 'required' });
  const query = compile({ schema: { type: 'object', properties: { limit: { type: 'integer' } } }, httpPart: 'querystring' });
  const q: Record<string, unknown> = { limit: '5' };
  t.equal(query(q), true);
  t.equal(q.limit, 5, 'a query string value is coerced');
  t.equal(query({ limit: 'x' }), false);
  t.match(query.errors?.[0], { instancePath: '/limit' });
});
