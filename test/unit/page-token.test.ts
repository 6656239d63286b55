/**
 * Page tokens are bound to what issued them (spec §4.1, src/core/pagination.ts): the route, the
 * query's filters, the caller's scope and, for search, the index generation. A token replayed
 * under any other binding is `page_token_stale`; a token that is not one svc signed is
 * `validation_error`. Table-driven, on a real database (the signing key lives in its settings).
 */
import t, { type Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { ApiError } from '../../src/core/errors.js';
import { decodePageToken, encodePageToken, readCursor, type Cursor, type PageBinding } from '../../src/core/pagination.js';
import type { Principal } from '../../src/auth/principal.js';
import { tempDir } from '../helpers/svc.js';

function freshDb(t: Test): Db {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  return db;
}

const key = (id: string, inboxes: 'all' | string[]): Principal => ({
  kind: 'api_key',
  id,
  inboxScope: inboxes === 'all' ? 'all' : new Set(inboxes),
  permissions: new Set(['message_read']),
  sendPolicy: 'direct',
});
const owner: Principal = { kind: 'owner', id: 'owner', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };

const CURSOR: Cursor = ['2025-03-01T12:00:00.000Z', 'msg-42'];
const ISSUED: PageBinding = { route: 'messages.list', filters: { inbox_id: 'a@x.test', labels: 'unread', ascending: false }, principal: key('k1', ['a@x.test', 'b@x.test']) };

/** Where the token is replayed, and whether it still reads as the same query. */
const replays: [name: string, binding: PageBinding, accepted: boolean][] = [
  ['the same route, filters and caller', ISSUED, true],
  ['the same filters in another order', { ...ISSUED, filters: { ascending: false, labels: 'unread', inbox_id: 'a@x.test' } }, true],
  ['an undefined filter, which is the same as leaving it out', { ...ISSUED, filters: { ...ISSUED.filters, before: undefined } }, true],
  ['the same scope listed in another order', { ...ISSUED, principal: key('k1', ['b@x.test', 'a@x.test']) }, true],
  ['another route', { ...ISSUED, route: 'threads.list' }, false],
  ['another filter value', { ...ISSUED, filters: { ...ISSUED.filters, labels: 'starred' } }, false],
  ['an added filter', { ...ISSUED, filters: { ...ISSUED.filters, before: '2025-01-01T00:00:00.000Z' } }, false],
  ['a dropped filter', { ...ISSUED, filters: { inbox_id: 'a@x.test', ascending: false } }, false],
  ['the other sort order', { ...ISSUED, filters: { ...ISSUED.filters, ascending: true } }, false],
  ['another key with the same scope', { ...ISSUED, principal: key('k2', ['a@x.test', 'b@x.test']) }, false],
  ['the same key id with a narrower scope', { ...ISSUED, principal: key('k1', ['a@x.test']) }, false],
  ['the same key id with every inbox', { ...ISSUED, principal: key('k1', 'all') }, false],
  ['the owner', { ...ISSUED, principal: owner }, false],
  ['a search binding (with a generation) for a list token', { ...ISSUED, generation: 0 }, false],
];

for (const [name, binding, accepted] of replays) {
  t.test(`replayed with ${name}: ${accepted ? 'the cursor comes back' : 'page_token_stale'}`, async (t) => {
    const db = freshDb(t);
    const token = encodePageToken(db, ISSUED, CURSOR);
    if (accepted) t.same(decodePageToken(db, token, binding), CURSOR);
    else t.throws(() => decodePageToken(db, token, binding), { code: 'page_token_stale' });
  });
}

t.test('a search token is stale once the index generation moved', async (t) => {
  const db = freshDb(t);
  const search: PageBinding = { route: 'messages.search', filters: { q: 'invoice' }, principal: owner, generation: 7 };
  const token = encodePageToken(db, search, CURSOR);
  t.same(decodePageToken(db, token, search), CURSOR, 'same generation');
  t.throws(() => decodePageToken(db, token, { ...search, generation: 8 }), { code: 'page_token_stale' });
});

/** Tokens svc did not issue as they are: each is refused as invalid, not as stale. */
const forged: [name: string, forge: (token: string) => string][] = [
  ['no signature', (token) => token.split('.')[0]],
  ['an empty body', (token) => `.${token.split('.')[1]}`],
  ['a changed cursor under the old signature', (token) => {
    const [body, mac] = token.split('.');
    const data = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { b: string; c: Cursor };
    return `${Buffer.from(JSON.stringify({ ...data, c: ['9999-12-31T00:00:00.000Z', 'msg-0'] })).toString('base64url')}.${mac}`;
  }],
  ['a flipped signature character', (token) => token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A')],
  ['not base64url at all', () => 'not a token'],
  ['the signature of another database', () => encodePageToken(otherDatabase(), ISSUED, CURSOR)],
];

let other: Db | undefined;
/** A second database, so a second signing key. */
function otherDatabase(): Db {
  other ??= openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  return other;
}
t.teardown(() => other?.close());

for (const [name, forge] of forged) {
  t.test(`a token with ${name} → validation_error`, async (t) => {
    const db = freshDb(t);
    const token = forge(encodePageToken(db, ISSUED, CURSOR));
    const err = (() => {
      try {
        decodePageToken(db, token, ISSUED);
      } catch (e) {
        return e;
      }
      return null;
    })();
    t.type(err, ApiError);
    t.match(err, { code: 'validation_error', fix: /next_page_token/ });
  });
}

t.test('readCursor refuses a genuine token whose cursor has another length than the route keys on', async (t) => {
  const db = freshDb(t);
  const token = encodePageToken(db, ISSUED, CURSOR);
  t.same(readCursor(db, token, ISSUED, 2), CURSOR);
  t.throws(() => readCursor(db, token, ISSUED, 3), { code: 'validation_error' });
});
