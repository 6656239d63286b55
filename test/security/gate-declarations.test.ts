/**
 * The gate's construction rules (issue 16, src/auth/gate.ts), with the gate registered as svc
 * registers it (the `httpGate` plugin): a route that declares no access refuses to register, so
 * svc cannot start with it; a protected handler is wrapped so that it cannot run without a
 * principal even if a hook were skipped; every route in svc's own table declares its access.
 */
import t, { type Test } from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Fastify, { type RouteOptions } from 'fastify';
import { httpGate } from '../../src/auth/gate.js';
import { openDatabase } from '../../src/db/open.js';
import { OwnerAccount } from '../../src/owner/owner-account.js';
import { routeTable } from '../helpers/fuzz.js';

function gateContext(t: Test) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-gate-'));
  const db = openDatabase(path.join(dir, 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { db, owner: new OwnerAccount(db), listener: 'local' as const, origin: () => 'http://127.0.0.1:1' };
}

t.test('a route without a declared access refuses to register', async (t) => {
  const app = Fastify();
  await app.register(httpGate, gateContext(t));
  t.throws(() => app.get('/v0/forgotten', async () => ({ secret: true })), /declares no access/);
});

t.test('a route with an unknown access value refuses to register', async (t) => {
  const app = Fastify();
  await app.register(httpGate, gateContext(t));
  t.throws(() => app.get('/v0/typo', { config: { auth: 'ownr' as never } }, async () => ({ secret: true })), /declares no access/);
});

t.test('a protected handler never runs without a principal', async (t) => {
  const app = Fastify();
  await app.register(httpGate, gateContext(t));
  let captured: RouteOptions | undefined;
  app.addHook('onRoute', (route) => {
    if (route.method === 'GET') captured = route;
  });
  let ran = false;
  app.get('/v0/protected', { config: { auth: 'agent' } }, async () => {
    ran = true;
    return {};
  });
  await app.ready();
  t.ok(captured, 'the route was registered');
  // Call the registered handler directly, as if every hook had been skipped.
  t.throws(() => captured!.handler.call(app as never, { principal: null } as never, {} as never), { code: 'unauthorized' });
  t.equal(ran, false, 'the handler body did not run');
  await app.close();
});

t.test("every route in svc's own table declares its access", async (t) => {
  // buildApp would have thrown for an undeclared route; the table is what the router matches.
  const routes = await routeTable();
  t.ok(routes.length > 100, `${routes.length} routes registered`);
});
