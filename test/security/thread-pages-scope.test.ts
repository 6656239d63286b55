/**
 * An inbox's thread list never shows another inbox's threads through `thread_pages` (migration
 * 38), whose key ranges come from inbox row ids: an inbox made after one was deleted gets the
 * same row id, so the same range; inboxes with row ids past 2^23 share the last range. Either
 * way each list holds exactly its own threads, every page with its cursor, and keys never collide.
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { commitInbound } from '../../src/mail/store.js';
import { listThreads } from '../../src/mail/threads.js';
import { deleteInbox } from '../../src/mail/inboxes.js';
import { HIDDEN_LABELS } from '../../src/mail/labels.js';
import { everyPage } from '../helpers/pages.js';
import { parseMime } from '../../workers/pool/parse.js';
import { insertInbox, threadPagesDrift } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const VIEW = { excluded: HIDDEN_LABELS };
let n = 0;

async function mail(db: Db, inboxId: string, at: string): Promise<string> {
  const i = n++;
  const parsed = await parseMime(new TextEncoder().encode(`From: s${i}@example.net\r\nTo: ${inboxId}\r\nSubject: ${inboxId} ${i}\r\nMessage-ID: <m${i}@example.net>\r\n\r\nbody\r\n`));
  return commitInbound(db, { inboxId, parsed, raw: new Uint8Array(0), sourceKey: `k${i}`, receivedAt: at }).threadId;
}

/** Every thread id an inbox's list shows, page by page with the cursor. */
function listed(db: Db, inboxId: string, limit: number): string[] {
  return everyPage((cursor) => listThreads(db, [inboxId], {}, VIEW, { limit, ascending: false, cursor })).map((i) => i.thread_id);
}

t.test("an inbox reusing a deleted inbox's row id lists none of its threads", async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  const keep = insertInbox(db, 'keep@example.com');
  const victim = insertInbox(db, 'victim@example.com');
  const rowid = db.prepare('SELECT rowid FROM inboxes WHERE inbox_id = ?').pluck().get(victim);
  for (let i = 0; i < 12; i++) await mail(db, i % 2 ? victim : keep, new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString());
  db.transaction(() => deleteInbox(db, victim))();
  const attacker = insertInbox(db, 'attacker@example.com');
  t.equal(db.prepare('SELECT rowid FROM inboxes WHERE inbox_id = ?').pluck().get(attacker), rowid, 'the new inbox has the deleted one\'s row id, so its key range');
  t.same(listed(db, attacker, 5), [], 'it lists nothing of the deleted inbox');
  const own = await mail(db, attacker, new Date(Date.UTC(2026, 0, 2)).toISOString());
  t.same(listed(db, attacker, 5), [own], 'then only its own thread');
  t.equal(listed(db, keep, 2).length, 6, 'the other inbox keeps its six');
  t.same(threadPagesDrift(db), []);
});

t.test('inboxes sharing the last key range each list exactly their own threads, with no key shared', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  const now = new Date().toISOString();
  const insert = db.prepare("INSERT INTO inboxes (rowid, inbox_id, username, domain, status, created_at, updated_at) VALUES (?, ?, ?, 'example.com', 'active', ?, ?)");
  const inboxes = [[8_388_607, 'last@example.com'], [9_000_000, 'past@example.com'], [2 ** 40, 'far@example.com']] as const;
  for (const [rowid, id] of inboxes) insert.run(rowid, id, id.split('@')[0], now, now);
  const threads = new Map<string, string[]>(inboxes.map(([, id]) => [id, []]));
  // Interleaved, with ties of last activity across and within inboxes.
  for (let i = 0; i < 45; i++) {
    const inbox = inboxes[i % 3]![1];
    threads.get(inbox)!.push(await mail(db, inbox, new Date(Date.UTC(2026, 0, 1, 0, Math.floor(i / 6))).toISOString()));
  }
  const keys = db.prepare('SELECT key FROM thread_pages').safeIntegers().pluck().all() as bigint[]; // past 2^53: read exactly
  t.equal(new Set(keys).size, 45, 'every thread has a key of its own');
  for (const [, id] of inboxes) {
    for (const limit of [1, 4, 20]) {
      const got = listed(db, id, limit);
      t.same([...got].sort(), [...threads.get(id)!].sort(), `${id}, pages of ${limit}: its own 15 threads, each once`);
    }
  }
  t.same(threadPagesDrift(db), []);
});

t.test('the last key range used up: commits go on below the lowest key, lists stay exact', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  const now = new Date().toISOString();
  db.prepare("INSERT INTO inboxes (rowid, inbox_id, username, domain, status, created_at, updated_at) VALUES (9000000, 'top@example.com', 'top', 'example.com', 'active', ?, ?)").run(now, now);
  const first = await mail(db, 'top@example.com', '2026-01-01T00:00:00.000Z');
  // The range's last key is 2^63 - 1: one more would not be an integer.
  db.prepare('UPDATE thread_pages SET key = ? WHERE thread_id = ?').safeIntegers().run(2n ** 63n - 1n, first);
  const second = await mail(db, 'top@example.com', '2026-01-01T00:01:00.000Z');
  const keys = db.prepare('SELECT thread_id, key FROM thread_pages ORDER BY key').safeIntegers().all() as { thread_id: string; key: bigint }[];
  t.same(keys.map((k) => k.thread_id), [second, first], 'the new thread went below the lowest key');
  t.same(listed(db, 'top@example.com', 1), [second, first], 'the list pages newest first');
  t.same(threadPagesDrift(db), []);
});
