/**
 * What an index costs the write path: CPU per message of `commitInbound` on databases side by side
 * that differ only in their indexes, the rounds interleaved so drift on the host falls on every
 * variant alike (docs/benchmarks.md, seventh round). Not part of `npm run bench`: a probe to run
 * by hand after `npm run build`.
 *
 *   node dist/bench/commit-indexes.js [rounds=10] [messages per round=400] [messages per transaction=8]
 *   VARIANTS=now,before,listing,message-ids node dist/bench/commit-indexes.js
 *
 * `now` is the schema as migrated; the others undo parts of migrations 35, 37, 38 and 39 after migrating.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../src/db/open.js';
import { commitInbound } from '../src/mail/store.js';
import { parseMime, type ParsedMail } from '../workers/pool/parse.js';

/** Migration 38 undone: thread pages read from no table of their own. */
const UNDO_PAGES = ['insert', 'move', 'update', 'delete'].map((t) => `DROP TRIGGER thread_pages_${t};`).join(' ') + ' DROP TABLE thread_pages; DROP INDEX threads_inbox_id;';
const UNDO_LISTING = UNDO_PAGES + ' CREATE INDEX threads_inbox ON threads (inbox_id, updated_at);';
const UNDO_MESSAGE_INDEXES = 'DROP INDEX messages_message_id; DROP INDEX messages_time;';
/** SQL run after migrating, per variant. */
const VARIANTS: Record<string, string> = {
  now: '',
  before: UNDO_LISTING + UNDO_MESSAGE_INDEXES,
  listing: UNDO_MESSAGE_INDEXES,
  'message-ids': UNDO_LISTING,
  'message-id-only': UNDO_LISTING + 'DROP INDEX messages_time;',
  'time-only': UNDO_LISTING + 'DROP INDEX messages_message_id;',
  // Migration 37's index of visible messages for search of one inbox.
  'no-search-keys': 'DROP INDEX messages_search;',
  // Migration 38's thread_pages against migration 35's covering index it replaced.
  'listing-index': UNDO_PAGES + ' CREATE INDEX threads_listing ON threads (inbox_id, updated_at, shown, thread_id, subject, created_at, summary);',
  // Migration 39's day roll-ups of the metric counters, kept by triggers on the hour tables.
  'no-day-rollups': ['metric_hours', 'thread_hours', 'metric_home_hours', 'thread_home_hours']
    .flatMap((table) => ['insert', 'count', 'move', 'delete'].map((t) => `DROP TRIGGER ${table}_days_${t};`))
    .join(' ') + ' DROP TRIGGER inboxes_metric_days_delete;',
};
const INBOXES = 50;
const PER_THREAD = 4;

const [rounds = 10, perRound = 400, perTransaction = 8] = process.argv.slice(2).map(Number);
const names = (process.env.VARIANTS ?? 'now,before').split(',');
for (const name of names) if (!(name in VARIANTS)) throw new Error(`unknown variant ${name}; known: ${Object.keys(VARIANTS).join(', ')}`);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-commit-'));
function open(name: string): Db {
  const db = openDatabase(path.join(dir, `${name}.db`), randomBytes(32), { migrate: true });
  const now = new Date().toISOString();
  const insert = db.prepare("INSERT INTO inboxes (inbox_id, username, domain, status, created_at, updated_at) VALUES (?, ?, 'commit.test', 'active', ?, ?)");
  for (let k = 0; k < INBOXES; k++) insert.run(`agent${k}@commit.test`, `agent${k}`, now, now);
  db.exec(VARIANTS[name]!);
  return db;
}

const rawOf = (i: number) => `From: Sender ${i % 700} <sender${i % 700}@mail.example>\r\nTo: agent@commit.test\r\nSubject: s\r\nMessage-ID: <m${i}@mail.example>\r\n\r\nbody ${i}\r\n`;
const template = await parseMime(new TextEncoder().encode(rawOf(0)));
const startMs = Date.now() - 30 * 86_400_000;

/** CPU milliseconds (this thread's process; nothing else runs) to commit messages [from, to). */
function commitRange(db: Db, from: number, to: number): number {
  const batch = db.transaction((first: number, end: number) => {
    for (let i = first; i < end; i++) {
      const thread = Math.floor(i / PER_THREAD);
      const opens = i % PER_THREAD === 0;
      const date = new Date(startMs + i * 1000).toISOString();
      const parsed: ParsedMail = {
        ...template,
        messageId: `<m${i}@mail.example>`,
        inReplyTo: opens ? null : `<m${i - 1}@mail.example>`,
        references: opens ? [] : [`<m${thread * PER_THREAD}@mail.example>`],
        subject: `${opens ? '' : 'Re: '}thread ${thread} about invoices`,
        from: [{ address: `sender${i % 700}@mail.example`, name: `Sender ${i % 700}` }],
        text: `About the invoice and the meeting: message ${i}. Budget follow-up.`,
        date,
      };
      commitInbound(db, { inboxId: `agent${thread % INBOXES}@commit.test`, parsed, raw: new TextEncoder().encode(rawOf(i)), sourceKey: `k${i}`, receivedAt: date, hiddenLabels: [] });
    }
  });
  const before = process.cpuUsage();
  for (let i = from; i < to; i += perTransaction) batch(i, Math.min(to, i + perTransaction));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

const dbs = new Map(names.map((name) => [name, open(name)]));
const cpuMs = new Map(names.map((name) => [name, 0]));
try {
  for (let r = 0; r < rounds; r++) {
    for (const name of r % 2 ? [...names].reverse() : names) cpuMs.set(name, cpuMs.get(name)! + commitRange(dbs.get(name)!, r * perRound, (r + 1) * perRound));
  }
} finally {
  for (const db of dbs.values()) db.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
const n = rounds * perRound;
const first = cpuMs.get(names[0]!)!;
console.log(`${n} messages per database, ${perTransaction} per transaction, ${INBOXES} inboxes; CPU per message:`);
for (const name of names) console.log(`  ${name}: ${(cpuMs.get(name)! / n).toFixed(3)} ms (${(cpuMs.get(name)! / first).toFixed(3)}× ${names[0]})`);
