/**
 * Download URL checks (spec §4.7) on the real token code and the route's `verifyDownload`,
 * in-process: the signing key is per process, so these tokens are minted here.
 */
import t, { type Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { storeRawMime } from '../../src/mail/raw-mime.js';
import { DOWNLOAD_TTL_MS, issueDownloadUrl, readDownloadToken, type DownloadClaims, type DownloadTarget } from '../../src/auth/downloads.js';
import type { Principal } from '../../src/auth/principal.js';
import { contentDisposition, safeFilename, verifyDownload } from '../../src/routes/downloads.js';
import { insertApiKey, insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const ORIGIN = 'http://127.0.0.1:8025';
const INBOX = 'agent@example.org';
const MESSAGE_ID = '<m1@example.net>';
const BYTES = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0xff, 0x0a, 0x0d]);
const RAW = Buffer.from('From: a@example.net\r\nTo: agent@example.org\r\nSubject: hi\r\n\r\nhello\r\n');

/** Seeds one inbound message with an attachment and its raw MIME, the way the mail store keeps them. */
function seedMessage(db: Db, inboxId: string, messageId: string, labels: string[] = ['received']): number {
  const now = new Date().toISOString();
  const threadId = `thr-${randomBytes(6).toString('hex')}`;
  db.prepare('INSERT INTO threads (thread_id, inbox_id, subject, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(threadId, inboxId, 'hi', now, now);
  const rowid = Number(
    db
      .prepare("INSERT INTO messages (inbox_id, thread_id, message_id, to_addresses, size, timestamp, direction, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'inbound', ?, ?)")
      .run(inboxId, threadId, messageId, JSON.stringify([inboxId]), RAW.length, now, now, now).lastInsertRowid,
  );
  for (const label of labels) db.prepare('INSERT INTO message_labels (message_rowid, label) VALUES (?, ?)').run(rowid, label);
  db.prepare('INSERT INTO attachments (message_rowid, attachment_id, filename, content_type, size, content) VALUES (?, ?, ?, ?, ?, ?)').run(rowid, 'att1', 'Report "Q1".pdf', 'Application/PDF; name=x', BYTES.length, BYTES);
  storeRawMime(db, rowid, RAW);
  return rowid;
}

function fixture(t: Test) {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, INBOX);
  insertInbox(db, 'other@example.org');
  const rowid = seedMessage(db, INBOX, MESSAGE_ID);
  const key = insertApiKey(db, { permissions: ['message_read'], inboxIds: [INBOX] });
  const keyPrincipal: Principal = { kind: 'api_key', id: key.id, inboxScope: new Set([INBOX]), permissions: new Set(['message_read']), sendPolicy: 'direct' };
  /** Mints a URL in this process and reads its claims back through the real token code. */
  const claimsFor = (principal: Principal, target: DownloadTarget, origin = ORIGIN): DownloadClaims => {
    const { download_url } = issueDownloadUrl(principal, origin, target);
    const claims = readDownloadToken(download_url.slice(`${origin}/v0/downloads/`.length));
    if (!claims) throw new Error('freshly issued token did not verify');
    return claims;
  };
  const attachment: DownloadTarget = { kind: 'attachment', inboxId: INBOX, messageId: MESSAGE_ID, attachmentId: 'att1' };
  const raw: DownloadTarget = { kind: 'raw', inboxId: INBOX, messageId: MESSAGE_ID };
  const setKey = (column: 'permissions' | 'inbox_ids' | 'expires_at', value: string | null) => db.prepare(`UPDATE api_keys SET ${column} = ? WHERE api_key_id = ?`).run(value, key.id);
  return { db, rowid, key, keyPrincipal, claimsFor, attachment, raw, setKey };
}

t.test('a fresh URL serves the attachment bytes with a safe type and filename', async (t) => {
  const { db, keyPrincipal, claimsFor, attachment } = fixture(t);
  const outcome = verifyDownload(claimsFor(keyPrincipal, attachment), Date.now(), db, ORIGIN);
  t.equal(outcome.status, 200);
  if (outcome.status !== 200) return;
  t.ok(outcome.file.content.equals(BYTES), 'exact bytes');
  t.equal(outcome.file.contentType, 'application/pdf', 'the stored type, lower-cased, without parameters');
  t.equal(outcome.file.filename, 'Report _Q1_.pdf');
});

t.test('a raw URL serves the original MIME as message/rfc822 with an .eml name', async (t) => {
  const { db, keyPrincipal, claimsFor, raw } = fixture(t);
  const outcome = verifyDownload(claimsFor(keyPrincipal, raw), Date.now(), db, ORIGIN);
  t.equal(outcome.status, 200);
  if (outcome.status !== 200) return;
  t.ok(outcome.file.content.equals(RAW));
  t.equal(outcome.file.contentType, 'message/rfc822');
  t.equal(outcome.file.filename, 'm1@example.net.eml');
});

t.test('tokens are HMAC-signed: any change makes them invalid', async (t) => {
  const { keyPrincipal, attachment } = fixture(t);
  const token = issueDownloadUrl(keyPrincipal, ORIGIN, attachment).download_url.split('/').pop()!;
  const [body, mac] = token.split('.');
  t.ok(readDownloadToken(token));
  const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as DownloadClaims;
  const forged = Buffer.from(JSON.stringify({ ...claims, target: { ...attachment, inboxId: 'other@example.org' } })).toString('base64url');
  t.equal(readDownloadToken(`${forged}.${mac}`), null, 'changed claims');
  // The first character carries six bits of the MAC (the last one only four), and is replaced by
  // another: writing "AA" over the end left the MAC unchanged when it already ended so (1 in 1,024).
  const changed = `${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`;
  t.not(changed, mac);
  t.equal(readDownloadToken(`${body}.${changed}`), null, 'changed signature');
  t.equal(readDownloadToken(`${body}.${mac}.x`), null, 'extra segment');
  t.equal(readDownloadToken(body), null, 'no signature');
  t.equal(readDownloadToken('not-a-token'), null);
});

t.test('a URL is valid five minutes', async (t) => {
  const { db, keyPrincipal, claimsFor, attachment } = fixture(t);
  const issuedAt = Date.now();
  const claims = claimsFor(keyPrincipal, attachment);
  t.ok(claims.exp - issuedAt >= DOWNLOAD_TTL_MS - 1000 && claims.exp - issuedAt <= DOWNLOAD_TTL_MS + 1000, 'expiry is five minutes out');
  t.equal(DOWNLOAD_TTL_MS, 5 * 60 * 1000);
  t.equal(verifyDownload(claims, claims.exp - 1, db, ORIGIN).status, 200, 'valid until the last millisecond');
  t.equal(verifyDownload(claims, claims.exp, db, ORIGIN).status, 404, 'expired is not_found');
  const token = issueDownloadUrl(keyPrincipal, ORIGIN, attachment).download_url.split('/').pop()!;
  const realNow = Date.now;
  Date.now = () => realNow() + DOWNLOAD_TTL_MS + 1;
  try {
    t.equal(readDownloadToken(token), null, 'the token itself no longer reads after five minutes');
  } finally {
    Date.now = realNow;
  }
});

t.test('a URL only works on the origin it was issued for', async (t) => {
  const { db, keyPrincipal, claimsFor, attachment } = fixture(t);
  const claims = claimsFor(keyPrincipal, attachment);
  t.equal(verifyDownload(claims, Date.now(), db, 'http://localhost:8025').status, 404);
  t.equal(verifyDownload(claims, Date.now(), db, 'https://remote.example.org').status, 404);
});

t.test('a bearer sent with the URL must be the issuer', async (t) => {
  const { db, key, keyPrincipal, claimsFor, attachment } = fixture(t);
  const claims = claimsFor(keyPrincipal, attachment);
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN, { kind: 'api_key', id: key.id }).status, 200);
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN, { kind: 'api_key', id: 'someone-else' }).status, 401);
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN, { kind: 'owner', id: 'owner' }).status, 401, 'even the owner');
});

t.test('a revoked or expired issuing key makes the URL 401', async (t) => {
  const { db, key, keyPrincipal, claimsFor, attachment, setKey } = fixture(t);
  const claims = claimsFor(keyPrincipal, attachment);
  setKey('expires_at', new Date(Date.now() - 1000).toISOString());
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 401, 'expired key');
  setKey('expires_at', null);
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 200);
  db.prepare('DELETE FROM api_keys WHERE api_key_id = ?').run(key.id);
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 401, 'revoked key');
});

t.test('owner URLs: the bearer lasts the process; a session must still exist', async (t) => {
  const { db, claimsFor, attachment } = fixture(t);
  const owner: Principal = { kind: 'owner', id: 'owner', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };
  t.equal(verifyDownload(claimsFor(owner, attachment), Date.now(), db, ORIGIN).status, 200);
  const now = new Date().toISOString();
  const later = new Date(Date.now() + 3600_000).toISOString();
  db.prepare('INSERT INTO owner_sessions (session_id, token_hash, csrf_token, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)').run('s1', 'h', 'c', now, now, later);
  const session: Principal = { kind: 'session', id: 's1', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };
  const claims = claimsFor(session, attachment);
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 200);
  db.prepare('UPDATE owner_sessions SET expires_at = ? WHERE session_id = ?').run(now, 's1');
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 401, 'expired session');
  db.prepare('DELETE FROM owner_sessions WHERE session_id = ?').run('s1');
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 401, 'signed-out session');
});

t.test('an issuer that lost message_read gets 403', async (t) => {
  const { db, keyPrincipal, claimsFor, attachment, raw, setKey } = fixture(t);
  const claims = [claimsFor(keyPrincipal, attachment), claimsFor(keyPrincipal, raw)];
  setKey('permissions', JSON.stringify(['inbox_read']));
  for (const c of claims) t.same(verifyDownload(c, Date.now(), db, ORIGIN), { status: 403, permission: 'message_read' });
});

t.test('an inbox outside the issuer\'s current scope is 404, before permissions', async (t) => {
  const { db, keyPrincipal, claimsFor, attachment, setKey } = fixture(t);
  const claims = claimsFor(keyPrincipal, attachment);
  setKey('inbox_ids', JSON.stringify(['other@example.org']));
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 404);
  setKey('permissions', JSON.stringify([]));
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 404, 'still 404 without permissions');
});

t.test('hidden mail is 404 unless the issuer may read that label', async (t) => {
  const { db, rowid, keyPrincipal, claimsFor, attachment, setKey } = fixture(t);
  const claims = claimsFor(keyPrincipal, attachment);
  for (const label of ['spam', 'blocked', 'unauthenticated', 'trash']) {
    db.prepare('INSERT INTO message_labels (message_rowid, label) VALUES (?, ?)').run(rowid, label);
    setKey('permissions', JSON.stringify(['message_read']));
    t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 404, `${label} without label_${label}_read`);
    setKey('permissions', JSON.stringify(['message_read', `label_${label}_read`]));
    t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 200, `${label} with label_${label}_read`);
    db.prepare('DELETE FROM message_labels WHERE message_rowid = ? AND label = ?').run(rowid, label);
  }
  db.prepare("INSERT INTO message_labels (message_rowid, label) VALUES (?, 'unread')").run(rowid);
  setKey('permissions', JSON.stringify(['message_read']));
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 200, 'other labels do not hide');
});

t.test('a deleted message, attachment or raw copy is 404', async (t) => {
  const { db, rowid, keyPrincipal, claimsFor, attachment, raw } = fixture(t);
  const missingAttachment = claimsFor(keyPrincipal, { ...attachment, attachmentId: 'att2' });
  t.equal(verifyDownload(missingAttachment, Date.now(), db, ORIGIN).status, 404, 'unknown attachment id');
  const rawClaims = claimsFor(keyPrincipal, raw);
  db.prepare('DELETE FROM raw_message_parts WHERE message_rowid = ?').run(rowid);
  t.equal(verifyDownload(rawClaims, Date.now(), db, ORIGIN).status, 404, 'no raw copy');
  const attClaims = claimsFor(keyPrincipal, attachment);
  db.prepare('DELETE FROM messages WHERE id = ?').run(rowid);
  t.equal(verifyDownload(attClaims, Date.now(), db, ORIGIN).status, 404, 'message deleted');
});

t.test('draft attachment URLs: draft_read is required, and no draft can be found yet', async (t) => {
  const { db, keyPrincipal, claimsFor, setKey } = fixture(t);
  const claims = claimsFor(keyPrincipal, { kind: 'draft_attachment', inboxId: INBOX, draftId: 'd1', attachmentId: 'a1' });
  t.same(verifyDownload(claims, Date.now(), db, ORIGIN), { status: 403, permission: 'draft_read' });
  setKey('permissions', JSON.stringify(['draft_read']));
  t.equal(verifyDownload(claims, Date.now(), db, ORIGIN).status, 404);
});

t.test('OAuth issuers are refused until OAuth tokens exist', async (t) => {
  const { db, claimsFor, attachment } = fixture(t);
  const oauth: Principal = { kind: 'oauth', id: 'g1', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };
  t.equal(verifyDownload(claimsFor(oauth, attachment), Date.now(), db, ORIGIN).status, 401);
});

t.test('filenames are sanitized for headers and file systems', async (t) => {
  t.equal(safeFilename('../../etc/passwd', 'x'), 'etc_passwd');
  t.equal(safeFilename('a\r\nb\u0000c.txt', 'x'), 'a_b_c.txt');
  t.equal(safeFilename('  ...  ', 'fallback'), 'fallback');
  t.equal(safeFilename(null, 'fallback'), 'fallback');
  t.equal(safeFilename('C:\\evil<>|?*.exe', 'x'), 'C_evil_.exe');
  t.equal([...safeFilename('é'.repeat(300), 'x')].length, 200);
  t.equal(contentDisposition('résumé (final).pdf'), "attachment; filename=\"r_sum_ (final).pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%28final%29.pdf");
  t.equal(contentDisposition('100%.txt'), "attachment; filename=\"100_.txt\"; filename*=UTF-8''100%25.txt");
});
