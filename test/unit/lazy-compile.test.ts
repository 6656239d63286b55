/**
 * Schemas compiled on first use (src/core/lazy-compile.ts, issue 19 start-up): nothing compiles
 * before it is needed, a schema compiles once whether first reached by a call or by the
 * warm-up, the warm-up compiles everything left, and a request validator made lazy still
 * reports Ajv's errors the way fastify reads them. Every schema of the real app compiles: the
 * service itself compiles a route's schemas only when the route is first called, so this test is
 * where a schema that does not compile is caught.
 */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase } from '../../src/db/open.js';
import { buildApp } from '../../src/http/app.js';
import { Bus } from '../../src/supervisor/bus.js';
import { CpuPool } from '../../src/supervisor/pool.js';
import { Readers } from '../../src/supervisor/readers.js';
import { OwnerAccount } from '../../src/owner/owner-account.js';
import { RemoteAccess } from '../../src/remote/remote-access.js';
import { lazy, warmSchemas } from '../../src/core/lazy-compile.js';
import { requestValidatorCompiler } from '../../src/core/validation.js';
import { MessageWaits } from '../../src/events/waits.js';

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

t.test('every schema of the real app compiles', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-lazy-'));
  const key = randomBytes(32);
  const db = openDatabase(path.join(dir, 'svc.db'), key, { migrate: true });
  const pool = new CpuPool();
  const reads = new Readers(path.join(dir, 'svc.db'), key);
  const bus = new Bus();
  const remote = new RemoteAccess(db, bus, () => Promise.reject(new Error('no tunnel listener in this test')));
  const app = await buildApp({ db, bus, pool, reads, waits: new MessageWaits(reads, bus), owner: new OwnerAccount(db), origin: () => 'http://127.0.0.1:1', listener: 'local', remote });
  t.teardown(async () => {
    await app.close();
    await pool.close();
    await reads.close();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await app.ready();
  const compiled = await warmSchemas();
  t.ok(compiled > 100, `${compiled} validators and serializers compiled`);
  t.equal(await warmSchemas(), 0, 'nothing is left to compile');
});
