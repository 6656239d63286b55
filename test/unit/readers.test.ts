/**
 * Reader threads (src/supervisor/readers.ts, issue 19) on a real database: a read answered in a
 * reader equals the same request answered on the writer's connection; an ApiError raised in the
 * reader (404, 403, a stale page token) reaches the caller as the same error; a write committed on
 * the writer is seen by the very next read; the reader's connection cannot write; and a cheap read
 * is not queued behind a lane full of searches.
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, openReader } from '../../src/db/open.js';
import { ApiError } from '../../src/core/errors.js';
import { ensurePageKey } from '../../src/core/pagination.js';
import { Readers } from '../../src/supervisor/readers.js';
import { threadListPage } from '../../src/requests/threads.js';
import { commitInbound } from '../../src/mail/store.js';
import { parseMime } from '../../workers/pool/parse.js';
import type { Principal } from '../../src/auth/principal.js';
import type { Permission } from '../../src/auth/permissions.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const INBOX = 'reader@example.com';
const WORDS = ['invoice', 'meeting', 'contract', 'shipment', 'renewal', 'budget', 'release', 'payroll'];

const agent = (permissions: Permission[], scope: string[] | 'all' = 'all'): Principal => ({
  kind: 'api_key',
  id: 'key-1',
  inboxScope: scope === 'all' ? 'all' : new Set(scope),
  permissions: new Set(permissions),
  sendPolicy: 'read_only',
});
const reader = agent(['inbox_read', 'message_read']);

t.test('reads in reader threads', async (t) => {
  const dir = tempDir();
  const file = path.join(dir, 'svc.db');
  const key = randomBytes(32);
  const db = openDatabase(file, key, { migrate: true });
  ensurePageKey(db);
  insertInbox(db, INBOX);
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${INBOX}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  const store = (i: number) =>
    commitInbound(db, {
      inboxId: INBOX,
      parsed: {
        ...template,
        messageId: `<m${i}@example.net>`,
        subject: `${WORDS[i % WORDS.length]} ${WORDS[(i * 3 + 1) % WORDS.length]} ${i}`,
        text: `About the ${WORDS[(i * 5 + 2) % WORDS.length]} and the ${WORDS[(i * 7 + 3) % WORDS.length]}.`,
        date: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
      },
      raw: new Uint8Array(0),
      sourceKey: `k${i}`,
      receivedAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    });
  db.transaction(() => {
    for (let i = 0; i < 3000; i++) store(i);
  })();
  const readers = new Readers(file, key);
  t.teardown(async () => {
    await readers.close();
    db.close();
  });

  t.test('a page read in a reader equals the same page read on the writer', async (t) => {
    const query = { limit: 20 };
    const there = await readers.run('threadListPage', reader, INBOX, query);
    const here = threadListPage(db, reader, INBOX, query);
    t.same(there, here);
    t.equal((there.threads as unknown[]).length, 20);
    // The next token made in the reader works on the writer's connection and the other way round.
    const next = await readers.run('threadListPage', reader, INBOX, { limit: 20, page_token: here.next_page_token as string });
    t.same(next, threadListPage(db, reader, INBOX, { limit: 20, page_token: there.next_page_token as string }));
  });

  t.test('errors raised in a reader are the same errors', async (t) => {
    const missing = await readers.run('readThread', reader, { inbox_id: INBOX, thread_id: '01900000-0000-7000-8000-000000000000' }, {}).catch((e: unknown) => e);
    t.ok(missing instanceof ApiError);
    t.equal((missing as ApiError).status, 404);
    t.equal((missing as ApiError).code, 'not_found');
    const noPermission = await readers.run('messageListPage', agent(['inbox_read']), INBOX, {}).catch((e: unknown) => e);
    t.equal((noPermission as ApiError).code, 'missing_permission');
    const outOfScope = await readers.run('messageListPage', agent(['message_read'], ['other@example.com']), INBOX, {}).catch((e: unknown) => e);
    t.equal((outOfScope as ApiError).status, 404, 'another inbox is not found before any permission check');
    const token = ((await readers.run('threadListPage', reader, INBOX, { limit: 5 })) as { next_page_token: string }).next_page_token;
    const stale = await readers.run('threadListPage', reader, INBOX, { limit: 5, subject: ['budget'], page_token: token }).catch((e: unknown) => e);
    t.equal((stale as ApiError).code, 'page_token_stale');
    const forged = await readers.run('threadListPage', reader, INBOX, { limit: 5, page_token: `${token}x` }).catch((e: unknown) => e);
    t.equal((forged as ApiError).code, 'validation_error');
  });

  t.test('a write committed on the writer is seen by the next read', async (t) => {
    const before = (await readers.run('threadListPage', reader, INBOX, { limit: 1 })).threads as { subject: string }[];
    store(3000);
    const after = (await readers.run('threadListPage', reader, INBOX, { limit: 1 })).threads as { subject: string }[];
    t.not(after[0].subject, before[0].subject);
    t.match(after[0].subject, / 3000$/);
  });

  t.test('the reader connection cannot write', async (t) => {
    const conn = openReader(file, key);
    t.teardown(() => conn.close());
    t.throws(() => conn.prepare("INSERT INTO settings (key, value) VALUES ('x', 'y')").run(), /readonly|read-only|query_only/i);
    t.equal((conn.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n, 3001);
  });

  t.test('a cheap read does not wait behind queued searches', async (t) => {
    // Warm both lanes so thread start-up is not what is measured.
    await readers.run('threadSearchPage', reader, INBOX, { q: 'invoice' });
    await readers.run('readMessage', reader, INBOX, '<m1@example.net>');
    const order: string[] = [];
    const searches = Array.from({ length: 200 }, (_, i) =>
      readers.run('threadSearchPage', reader, INBOX, { q: `${WORDS[i % WORDS.length]} ${WORDS[(i + 1) % WORDS.length]}`, limit: 10 + (i % 30) }).then(() => order.push('search')),
    );
    const read = readers.run('readMessage', reader, INBOX, '<m2@example.net>').then((m) => {
      order.push('read');
      return m;
    });
    t.equal((await read).message_id, '<m2@example.net>');
    await Promise.all(searches);
    const at = order.indexOf('read');
    t.ok(at < 100, `the read finished at position ${at} of 201, not behind the searches queued before it`);
  });

  t.test("a search thread outlives the read lane's idle time, then exits", async (t) => {
    // The service's lanes with their idle times shortened: a read thread beyond the warm one lives 300 ms, a search thread 4 s.
    const short = new Readers(file, key, { read: 300, search: 4000 });
    t.teardown(() => short.close());
    t.equal(short.liveThreads('search'), 0, 'no search thread before a search');
    await short.run('threadSearchPage', reader, INBOX, { q: 'invoice' });
    t.equal(short.liveThreads('search'), 1, 'one search thread after it');
    await new Promise((r) => setTimeout(r, 1200));
    t.equal(short.liveThreads('search'), 1, "still there after four times the read lane's idle time");
    const deadline = Date.now() + 20_000;
    while (short.liveThreads('search') > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    t.equal(short.liveThreads('search'), 0, 'gone once its own idle time has passed');
    t.equal(short.liveThreads('read'), 0, 'the read lane was never started');
  });
});
