/**
 * OAuth limits (spec §8, §7.2, §5.3): token and revoke 120 per minute each, registration 20 per
 * hour, at most 1,000 registrations kept, at most 20 sign-ins per app waiting for consent (the oldest
 * ends), 16 KiB
 * token bodies, and `not_supported` without the
 * web app (SVC_TEST_NO_WEB_APP=1, docs/testing.md).
 */
import t from 'tap';
import { api, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { authorizePath, ensureWebApp, form, pkce, REDIRECT, register, visit } from '../helpers/oauth.js';
import { uuidv7 } from '../../src/db/ids.js';
import type { Db } from '../../src/db/open.js';

t.test('registration and body limits', async (t) => {
  ensureWebApp();
  const svc: RunningSvc = await startSvc();
  const db: Db = openHomeDb(svc.home);
  t.teardown(async () => {
    db.close();
    await svc.stop();
  });
  const count = () => (db.prepare('SELECT count(*) AS n FROM oauth_clients').get() as { n: number }).n;

  // First: the registration tests below use up this hour's registrations.
  t.test('at most 20 sign-ins of one app wait for consent: the 21st ends the oldest, and other apps are not kept out', async (t) => {
    const session = await setupOwner(svc);
    const client = (await register(svc.url)).body.client_id;
    const other = (await register(svc.url)).body.client_id;
    const pending = (id: string) => (db.prepare('SELECT count(*) AS n FROM oauth_requests WHERE client_id = ?').get(id) as { n: number }).n;
    const authorize = async (clientId: string) => {
      const res = await visit(
        svc.url,
        authorizePath({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: `${svc.url}/mcp` }),
        session.cookie,
      );
      t.equal(res.status, 302);
      return new URL(res.location!, svc.url).searchParams.get('request')!;
    };
    const consentOf = (requestId: string) => api(svc.url, 'GET', `/v0/owner/oauth/requests/${requestId}`, { headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf } });
    const first = await authorize(client);
    for (let i = 1; i < 20; i++) await authorize(client);
    t.equal(pending(client), 20);
    const newest = await authorize(client);
    t.equal(pending(client), 20, 'still 20 waiting');
    t.equal((await consentOf(first)).status, 404, 'the oldest request ended');
    t.equal((await consentOf(newest)).status, 200, 'the newest one can be answered');
    await authorize(other);
    t.equal(pending(other), 1, 'another app gets its consent screen');
    // SQL: no route removes a registration, and the cap tests below count every one kept.
    db.prepare('DELETE FROM oauth_requests WHERE client_id IN (?, ?)').run(client, other);
    db.prepare('DELETE FROM oauth_clients WHERE client_id IN (?, ?)').run(client, other);
  });

  t.test('at 1,000 registrations the oldest one without a grant makes room', async (t) => {
    // SQL: the hourly registration limit keeps the route from making 1,000 in a test.
    const twoHoursAgo = Date.now() - 2 * 3600 * 1000;
    const insert = db.prepare("INSERT INTO oauth_clients (client_id, client_name, redirect_uris, grant_types, response_types, granted, created_at) VALUES (?, 'seeded', ?, '[\"authorization_code\"]', '[\"code\"]', ?, ?)");
    const seeded: string[] = [];
    db.transaction(() => {
      for (let i = 0; i < 1000; i++) {
        const id = uuidv7(twoHoursAgo + i);
        seeded.push(id);
        // The very oldest has a grant: it must never be the one evicted.
        insert.run(id, JSON.stringify([REDIRECT]), i === 0 ? 1 : 0, new Date(twoHoursAgo + i).toISOString());
      }
    })();
    const res = await register(svc.url);
    t.equal(res.status, 201);
    t.equal(count(), 1000, 'still 1,000');
    t.ok(db.prepare('SELECT 1 FROM oauth_clients WHERE client_id = ?').get(seeded[0]), 'a registration with a grant is kept');
    t.notOk(db.prepare('SELECT 1 FROM oauth_clients WHERE client_id = ?').get(seeded[1]), 'the oldest without a grant was dropped');
    t.ok(db.prepare('SELECT 1 FROM oauth_clients WHERE client_id = ?').get(res.body.client_id));
  });

  t.test('when every kept registration has a grant, registering fails', async (t) => {
    // SQL: a grant takes the owner's consent per client; 1,000 consents through the route are not a test.
    db.prepare('UPDATE oauth_clients SET granted = 1').run();
    const res = await register(svc.url);
    t.equal(res.status, 503);
    t.equal(res.body.error, 'temporarily_unavailable');
    t.match(res.body.error_description, /1000 client registrations/);
    t.equal(count(), 1000);
    // SQL: no route removes a registration that has a grant (the purge keeps them); the seeded rows go as they came.
    db.prepare("DELETE FROM oauth_clients WHERE client_name = 'seeded'").run();
  });

  t.test('20 registrations per hour, then 429 with Retry-After: 60', async (t) => {
    const thisHour = (db.prepare('SELECT count(*) AS n FROM oauth_clients WHERE created_at > ?').get(new Date(Date.now() - 3600 * 1000).toISOString()) as { n: number }).n;
    for (let i = thisHour; i < 20; i++) t.equal((await register(svc.url)).status, 201, `registration ${i + 1}`);
    const over = await register(svc.url);
    t.equal(over.status, 429);
    t.equal(over.headers.get('retry-after'), '60');
    t.equal(over.headers.get('access-control-allow-origin'), '*');
    t.type(over.body.error, 'string');
    t.type(over.body.error_description, 'string');
  });

  t.test('a token request body over 16 KiB is refused with 413', async (t) => {
    const big = await form(svc.url, '/oauth/token', { grant_type: 'authorization_code', code: 'x'.repeat(16 * 1024) });
    t.equal(big.status, 413);
    t.same(Object.keys(big.body), ['error', 'error_description']);
    t.equal(big.body.error, 'invalid_request');
    const json = await api(svc.url, 'POST', '/oauth/token', { body: { grant_type: 'refresh_token', refresh_token: 'y'.repeat(17 * 1024) } });
    t.equal(json.status, 413);
    const fits = await form(svc.url, '/oauth/token', { grant_type: 'refresh_token', refresh_token: 'z'.repeat(16 * 1024 - 100) });
    t.equal(fits.status, 400, 'just under the limit is read');
    t.equal(fits.body.error, 'invalid_grant');
  });
});

t.test('without the web app, and the token and revoke rates', async (t) => {
  const svc = await startSvc({ env: { SVC_TEST_NO_WEB_APP: '1' } });
  t.teardown(() => svc.stop());

  t.test('authorize answers not_supported without the web app', async (t) => {
    const client = (await register(svc.url)).body.client_id;
    const res = await visit(
      svc.url,
      authorizePath({ response_type: 'code', client_id: client, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: `${svc.url}/mcp` }),
    );
    t.equal(res.status, 400);
    t.equal(res.location, null);
    t.equal(res.body?.error, 'not_supported');
    t.type(res.body?.error_description, 'string');
  });

  for (const endpoint of ['/oauth/token', '/oauth/revoke']) {
    t.test(`${endpoint}: 120 requests a minute, then 429 with Retry-After: 60`, async (t) => {
      const statuses: number[] = [];
      // Batches of 20 keep the run short without opening 120 sockets at once.
      for (let batch = 0; batch < 6; batch++) {
        const answers = await Promise.all(Array.from({ length: 20 }, () => form(svc.url, endpoint, { grant_type: 'refresh_token', refresh_token: 'svc_refresh_x', token: 'svc_oauth_x' })));
        statuses.push(...answers.map((a) => a.status));
      }
      t.notOk(statuses.includes(429), 'the first 120 are served');
      const over = await form(svc.url, endpoint, { token: 'svc_oauth_x' });
      t.equal(over.status, 429);
      t.equal(over.headers.get('retry-after'), '60');
      t.equal(over.headers.get('access-control-allow-origin'), '*');
      t.equal(over.body.error, 'temporarily_unavailable');
      const preflight = await fetch(svc.url + endpoint, { method: 'OPTIONS' });
      t.equal(preflight.status, 204, 'preflights are not counted');
    });
  }
});
