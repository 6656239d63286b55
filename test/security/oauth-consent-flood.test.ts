/**
 * Attack: anything that can send the owner's browser (or the owner's cookie) to /oauth/authorize
 * floods it, in parallel, to fill the table of sign-ins waiting for consent. The cap holds under
 * the race (at most 20 per app, the oldest ends), and the owner's real sign-in of another app
 * still gets a consent screen that can be answered (docs/oauth.md, src/oauth/limits.ts).
 */
import t from 'tap';
import { api, setupOwner, startSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { authorizePath, ensureWebApp, pkce, REDIRECT, register, visit } from '../helpers/oauth.js';

t.test('a parallel flood of authorize requests stays within the cap and keeps no one out', async (t) => {
  ensureWebApp();
  const svc = await startSvc();
  const db = openHomeDb(svc.home);
  t.teardown(async () => {
    db.close();
    await svc.stop();
  });
  const session = await setupOwner(svc);
  const attacker = (await register(svc.url)).body.client_id;
  const owners = (await register(svc.url, { client_name: 'the owner\u2019s app' })).body.client_id;
  const authorize = (clientId: string) =>
    visit(
      svc.url,
      authorizePath({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: `${svc.url}/mcp` }),
      session.cookie,
    );
  const pending = (clientId: string) => (db.prepare('SELECT count(*) AS n FROM oauth_requests WHERE client_id = ?').get(clientId) as { n: number }).n;

  // Three waves of 20 at once: every one is answered, none refused, and never more than 20 are kept.
  for (let wave = 0; wave < 3; wave++) {
    const answers = await Promise.all(Array.from({ length: 20 }, () => authorize(attacker)));
    t.same([...new Set(answers.map((a) => a.status))], [302], `wave ${wave + 1}: every request goes to a consent screen`);
    t.ok(pending(attacker) <= 20, `wave ${wave + 1}: ${pending(attacker)} waiting, at most 20`);
  }
  t.equal(pending(attacker), 20);

  const mine = await authorize(owners);
  t.equal(mine.status, 302, 'the owner\u2019s own sign-in is not kept out');
  const requestId = new URL(mine.location!, svc.url).searchParams.get('request')!;
  const view = await api(svc.url, 'GET', `/v0/owner/oauth/requests/${requestId}`, { headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf } });
  t.equal(view.status, 200, 'and its consent screen can be answered');
});
