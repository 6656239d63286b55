/**
 * The stored-mail lookups of a message wait (src/mail/waits.ts) on a real database filled through
 * the inbound commit path: `messagePoint` and `firstReceivedAfter` answer, for every inbox scope
 * ('all', a list, one inbox) and many `after` points (times, message points, ties on one
 * timestamp), exactly what reading every stored message in arrival order gives — the oldest
 * received message after the point, hidden mail and filters respected — now that both seek
 * indexes instead of reading the whole store.
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase } from '../../src/db/open.js';
import { commitInbound } from '../../src/mail/store.js';
import { firstReceivedAfter, messagePoint, pointAt, type WaitFilters, type WaitPoint } from '../../src/mail/waits.js';
import { HIDDEN_LABELS } from '../../src/mail/labels.js';
import { parseMime } from '../../workers/pool/parse.js';
import { insertInbox, recordStatements } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const INBOXES = ['a@example.com', 'b@example.com', 'c@example.com'];
const BASE = Date.UTC(2026, 5, 1);

t.test('wait lookups answer as reading every message in arrival order', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  for (const inbox of INBOXES) insertInbox(db, inbox);
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${INBOXES[0]}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  db.transaction(() => {
    for (let i = 0; i < 90; i++) {
      // Every third message shares its timestamp with the one before (ties broken by row id).
      const at = new Date(BASE + (i - (i % 3 === 2 ? 1 : 0)) * 60_000).toISOString();
      commitInbound(db, {
        inboxId: INBOXES[(i * 7) % 3]!,
        parsed: { ...template, messageId: `<w${i}@example.net>`, subject: i % 4 === 0 ? `Code ${i}` : `Note ${i}`, from: [{ address: `s${i % 5}@example.net`, name: '' }], date: at },
        raw: new Uint8Array(0),
        sourceKey: `w${i}`,
        receivedAt: at,
        hiddenLabels: i % 10 === 6 ? ['spam'] : [],
      });
    }
  })();
  // Sent mail in the same inboxes and at the same times, which no wait answers with (as a send writes it).
  const thread = db.prepare('SELECT thread_id FROM threads LIMIT 1').pluck().get() as string;
  const sent = db.prepare("INSERT INTO messages (inbox_id, thread_id, message_id, from_address, to_addresses, subject, size, timestamp, direction, created_at, updated_at) VALUES (?, ?, ?, ?, '[]', ?, 1, ?, 'outbound', ?, ?)");
  db.transaction(() => {
    for (let i = 0; i < 90; i += 4) {
      const at = new Date(BASE + i * 60_000).toISOString();
      sent.run(INBOXES[i % 3]!, thread, `<sent${i}@example.com>`, `s${i % 5}@example.net`, `Code sent ${i}`, at, at, at);
    }
  })();
  const all = db.prepare("SELECT m.id, m.inbox_id, m.message_id, m.timestamp, m.subject, m.from_address, m.direction, EXISTS (SELECT 1 FROM message_labels l WHERE l.message_rowid = m.id AND l.label = 'spam') AS spam FROM messages m ORDER BY m.timestamp, m.id").all() as {
    id: number;
    inbox_id: string;
    message_id: string;
    timestamp: string;
    subject: string;
    from_address: string;
    direction: string;
    spam: number;
  }[];
  t.equal(all.length, 90 + 23);

  const scopes: WaitFilters['inboxes'][] = ['all', [INBOXES[1]!], [INBOXES[0]!, INBOXES[2]!], []];
  const inScope = (scope: WaitFilters['inboxes'], inbox: string) => scope === 'all' || scope.includes(inbox);
  const points: WaitPoint[] = [pointAt(new Date(BASE - 1).toISOString()), pointAt(new Date(BASE + 40 * 60_000).toISOString()), pointAt(new Date(BASE + 200 * 60_000).toISOString())];
  for (const m of all.filter((_, k) => k % 7 === 0)) points.push({ timestamp: m.timestamp, id: m.id });
  for (const scope of scopes) {
    for (const excluded of [HIDDEN_LABELS, [] as const]) {
      for (const [subject, from] of [[[], []], [['code'], []], [[], ['s3@']], [['code'], ['s1@', 's2@']], [['matches nothing'], []]]) {
        const f: WaitFilters = { inboxes: scope, from, to: [], subject, excluded };
        for (const p of points) {
          const expected = all.find(
            (m) =>
              inScope(scope, m.inbox_id) &&
              m.direction === 'inbound' &&
              (m.timestamp > p.timestamp || (m.timestamp === p.timestamp && m.id > p.id)) &&
              (excluded.length === 0 || !m.spam) &&
              (subject.length === 0 || m.subject.toLowerCase().includes(subject[0]!)) &&
              (from.length === 0 || from.some((a) => m.from_address.includes(a))),
          );
          const found = firstReceivedAfter(db, p, f);
          t.equal(found?.message_id ?? null, expected?.message_id ?? null, `scope ${JSON.stringify(scope)}, hidden ${excluded.length ? 'left out' : 'in'}, subject ${subject[0] ?? 'any'}, from ${from.join('|') || 'any'}, after ${p.timestamp}/${p.id}`);
        }
      }
    }
  }
  for (const scope of scopes) {
    for (const m of all.filter((_, k) => k % 5 === 0)) {
      const expected = inScope(scope, m.inbox_id) && !m.spam ? { timestamp: m.timestamp, id: m.id } : null;
      t.same(messagePoint(db, scope, m.message_id, { excluded: HIDDEN_LABELS }), expected, `point of ${m.message_id} in ${JSON.stringify(scope)}`);
    }
  }
  t.equal(messagePoint(db, 'all', '<missing@example.net>', { excluded: [] }), null, 'an unknown Message-ID has no point');
});

t.test('over every inbox, a Message-ID is one seek and the walk after a point one index, whatever the number of inboxes', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  for (let k = 0; k < 40; k++) insertInbox(db, `box${k}@example.com`);
  const { statements, plan } = recordStatements(db);
  messagePoint(db, 'all', '<w1@example.net>', { excluded: HIDDEN_LABELS });
  firstReceivedAfter(db, pointAt(new Date(BASE).toISOString()), { inboxes: 'all', from: [], to: [], subject: [], excluded: HIDDEN_LABELS });
  const plans = statements.map((sql) => plan(sql, 'x'));
  const reads = plans.flat().filter((d) => /^(SEARCH|SCAN) m\b/.test(d));
  t.ok(reads.some((d) => /^SEARCH m USING COVERING INDEX messages_message_id \(message_id=\?\)/.test(d)), reads.join(' | '));
  t.ok(reads.some((d) => /^SEARCH m USING COVERING INDEX messages_time \(timestamp>\?\)/.test(d)), reads.join(' | '));
  t.notOk(plans.flat().some((d) => /inboxes|json_each/.test(d)), `no lookup per inbox: ${plans.flat().join(' | ')}`);
});
