/**
 * OAuth pieces in-process (spec §5.3, §4.7): redirect URI rules, PKCE S256, the rate window, and
 * download URLs issued by an OAuth token, which keep its audience and end with the token.
 */
import t, { type Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { checkRedirectUri, matchesRegistered, redirectHost, withResponseParams } from '../../src/oauth/redirect-uris.js';
import { OAuthError } from '../../src/oauth/errors.js';
import { pkceMatches, createGrant, exchangeCode, accessTokenPrincipal, currentGrantPrincipal, revokeGrant } from '../../src/oauth/grants.js';
import { ClientRateWindows, RateWindow } from '../../src/oauth/rate-window.js';
import { registerClient } from '../../src/oauth/clients.js';
import { issueDownloadUrl, readDownloadToken, type DownloadTarget } from '../../src/auth/downloads.js';
import { verifyDownload } from '../../src/routes/downloads.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';
import { pkce, REDIRECT } from '../helpers/oauth.js';

t.test('redirect URIs: https, http on loopback, or a reverse-DNS private-use scheme', async (t) => {
  const allowed = ['https://app.example/cb', 'https://app.example:8443/cb?x=1', 'http://127.0.0.1/cb', 'http://127.0.0.1:9/cb', 'http://[::1]:80/cb', 'http://localhost/cb', 'com.example.app:/cb', 'com.example.app:cb', 'net.app-x.y+z:/a'];
  for (const uri of allowed) t.doesNotThrow(() => checkRedirectUri(uri), uri);
  const refused = ['', 'http://app.example/cb', 'http://127.0.0.2/cb', 'http://localhost.example/cb', 'myapp:/cb', 'javascript:alert(1)', 'data:text/html,x', 'file:///x', 'https://a.example/cb#x', 'https://u@a.example/cb', 'cb', `https://a.example/${'x'.repeat(2048)}`, 'com.example.app:'];
  for (const uri of refused) {
    let error: unknown = null;
    try {
      checkRedirectUri(uri);
    } catch (err) {
      error = err;
    }
    t.ok(error instanceof OAuthError && error.error === 'invalid_redirect_uri', JSON.stringify(uri.slice(0, 40)));
  }
});

t.test('redirect URIs: exact match, except a loopback port', async (t) => {
  const registered = ['http://127.0.0.1:1234/cb', 'https://app.example/cb', 'com.example.app:/cb', 'http://[::1]/cb'];
  for (const uri of ['http://127.0.0.1:1234/cb', 'http://127.0.0.1:5555/cb', 'http://127.0.0.1/cb', 'https://app.example/cb', 'com.example.app:/cb', 'http://[::1]:7000/cb']) t.ok(matchesRegistered(registered, uri), uri);
  for (const uri of ['http://127.0.0.1:1234/other', 'http://localhost:1234/cb', 'https://app.example:444/cb', 'https://app.example/cb?x', 'com.example.app:/other', 'http://127.0.0.1:1234/cb#f']) t.notOk(matchesRegistered(registered, uri), uri);
  t.equal(redirectHost('https://app.example:8443/cb'), 'app.example:8443');
  t.equal(redirectHost('com.example.app:/cb'), 'com.example.app', 'a private-use scheme shows its scheme');
  t.equal(withResponseParams('https://app.example/cb?keep=1', { code: 'a b', state: undefined }), 'https://app.example/cb?keep=1&code=a+b', 'the existing query stays');
  t.equal(withResponseParams('com.example.app:/cb', { code: 'c' }), 'com.example.app:/cb?code=c');
});

t.test('PKCE S256: BASE64URL(SHA-256(verifier)), and only well-formed verifiers', async (t) => {
  const { verifier, challenge } = pkce();
  t.ok(pkceMatches(verifier, challenge));
  t.notOk(pkceMatches(pkce().verifier, challenge), 'another verifier');
  t.notOk(pkceMatches(verifier, verifier), 'the plain method is not accepted');
  t.notOk(pkceMatches('abc', 'ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0'), 'a verifier under 43 characters, even when its hash matches');
});

t.test('the rate window allows its limit per window, then refuses until the next', async (t) => {
  const window = new RateWindow(3, 60_000);
  t.same([window.take(0), window.take(1), window.take(2), window.take(3), window.take(59_999)], [true, true, true, false, false]);
  t.equal(window.take(60_000), true, 'a new window');
});

t.test('client rate windows: each proven client and the unproven rest are counted apart', async (t) => {
  const windows = new ClientRateWindows(2, 3, 60_000);
  t.same([windows.take(null, 0), windows.take(null, 1), windows.take(null, 2)], [true, true, false], 'the unproven share one window');
  t.same([windows.take('a', 3), windows.take('a', 4), windows.take('a', 5)], [true, true, false], 'a client has its own');
  t.equal(windows.take('b', 6), true, 'another client is not refused');
  for (const id of ['c', 'd', 'e']) windows.take(id, 60_010);
  t.equal(windows.take('a', 60_011), true, 'ended windows dropped past the bound start again');
});

const ORIGIN = 'http://127.0.0.1:8025';
const INBOX = 'agent@example.org';
const MESSAGE_ID = '<m1@example.net>';

function fixture(t: Test) {
  const db: Db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, INBOX);
  const now = new Date().toISOString();
  db.prepare('INSERT INTO threads (thread_id, inbox_id, subject, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run('thr-1', INBOX, 'hi', now, now);
  const rowid = Number(
    db
      .prepare("INSERT INTO messages (inbox_id, thread_id, message_id, to_addresses, size, timestamp, direction, created_at, updated_at) VALUES (?, 'thr-1', ?, ?, 1, ?, 'inbound', ?, ?)")
      .run(INBOX, MESSAGE_ID, JSON.stringify([INBOX]), now, now, now).lastInsertRowid,
  );
  db.prepare("INSERT INTO message_labels (message_rowid, label) VALUES (?, 'received')").run(rowid);
  db.prepare("INSERT INTO attachments (message_rowid, attachment_id, filename, content_type, size, content) VALUES (?, 'att1', 'a.txt', 'text/plain', 2, ?)").run(rowid, Buffer.from('hi'));
  const client = registerClient(db, { client_name: 'c', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] });

  /** A grant for `audience` with message_read on INBOX, and its first access token's principal. */
  const grant = (audience: '/mcp' | '/v0') => {
    const { verifier, challenge } = pkce();
    const resource = ORIGIN + audience;
    const { grantId, code } = db.transaction(() =>
      createGrant(db, { clientId: client.client_id, resource, origin: ORIGIN, audience, inboxIds: [INBOX], permissions: '["message_read"]', sendPolicy: 'read_only', redirectUri: REDIRECT, codeChallenge: challenge }),
    )();
    const outcome = exchangeCode(db, { code, codeVerifier: verifier, clientId: client.client_id, redirectUri: REDIRECT, resource }, () => true);
    if (!outcome.ok) throw outcome.error;
    const principal = accessTokenPrincipal(db, outcome.body.access_token, { origin: ORIGIN, audience, listener: 'local' });
    if (!principal) throw new Error('fresh token did not resolve');
    return { grantId, principal };
  };
  const attachment: DownloadTarget = { kind: 'attachment', inboxId: INBOX, messageId: MESSAGE_ID, attachmentId: 'att1' };
  const claimsFor = (p: ReturnType<typeof grant>['principal']) => readDownloadToken(issueDownloadUrl(p, ORIGIN, attachment).download_url.split('/v0/downloads/')[1])!;
  return { db, grant, claimsFor };
}

t.test('a download URL issued by an OAuth token records the token and its audience', async (t) => {
  const { db, grant, claimsFor } = fixture(t);
  const { grantId, principal } = grant('/mcp');
  const claims = claimsFor(principal);
  t.same(claims.issuer, { kind: 'oauth', id: grantId, tokenId: principal.tokenId });
  t.equal(claims.audience, '/mcp', 'an /mcp token keeps its audience');
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 200, 'no bearer needed');
  t.equal(claimsFor(grant('/v0').principal).audience, '/v0');
});

t.test('an OAuth download URL ends when its access token expires or its grant is revoked', async (t) => {
  const { db, grant, claimsFor } = fixture(t);
  const expiring = grant('/mcp');
  const claims = claimsFor(expiring.principal);
  db.prepare('UPDATE oauth_tokens SET expires_at = ? WHERE token_id = ?').run(new Date(Date.now() - 1000).toISOString(), expiring.principal.tokenId);
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 401, 'token expired');
  t.equal(currentGrantPrincipal(db, expiring.grantId, undefined)?.id, expiring.grantId, 'the grant itself is still active (webhooks keep working)');

  const revoked = grant('/v0');
  const revokedClaims = claimsFor(revoked.principal);
  t.equal(verifyDownload(revokedClaims, Date.now(), db, ORIGIN).status, 200);
  t.type(revokeGrant(db, revoked.grantId), 'number');
  t.equal(verifyDownload(revokedClaims, Date.now(), db, ORIGIN).status, 401, 'grant revoked');
  t.equal(currentGrantPrincipal(db, revoked.grantId, undefined), null);

  const moved = grant('/v0');
  const movedClaims = claimsFor(moved.principal);
  t.equal(verifyDownload({ ...movedClaims, audience: '/mcp' }, Date.now(), db, ORIGIN).status, 401, 'rechecked against the audience it was issued for');
});

t.test('an access token resolves only on its own origin and audience', async (t) => {
  const { db, grant } = fixture(t);
  const { principal } = grant('/mcp');
  const token = db.prepare('SELECT token_hash FROM oauth_tokens WHERE token_id = ?').get(principal.tokenId) as { token_hash: string };
  t.ok(token.token_hash, 'stored');
  t.same(principal.inboxScope, new Set([INBOX]));
  t.same(principal.permissions, new Set(['message_read']));
  t.equal(principal.sendPolicy, 'read_only');
  t.equal(principal.audience, '/mcp');
});
