/**
 * Migration 17 (src/db/migrations-guard.ts) on a database made by migrations 1–16 with data in
 * it: `api_keys` and `oauth_grants` are rebuilt to accept the `guarded` send policy without losing
 * a row, and above all without the rebuild's DROP cascading to the grants' codes and tokens
 * (migrate() runs it with foreign keys off and checks them before it commits); the correspondent
 * addresses are backfilled from clean received mail and from sent mail's recipients. Migration 19
 * then forgets the addresses known only from received mail, since whether it was authenticated
 * was never stored (issue 32 §5).
 */
import t from 'tap';
import Database from 'better-sqlite3-multiple-ciphers';
import { FOREIGN_KEYS_OFF, MIGRATIONS } from '../../src/db/migrations.js';
import { migrate } from '../../src/db/open.js';

const NOW = '2026-11-01T00:00:00.000Z';

function at16(): Database.Database {
  const db = new Database(':memory:');
  db.pragma('foreign_keys = ON');
  for (const sql of MIGRATIONS.slice(0, 16)) db.exec(sql);
  db.pragma('user_version = 16');
  db.prepare('INSERT INTO inboxes (inbox_id, username, domain, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run('a@home.example', 'a', 'home.example', NOW, NOW);
  db.prepare('INSERT INTO api_keys (api_key_id, prefix, key_hash, permissions, send_policy, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)').run('k1', 'svc_key_abcd', 'h1', '[]', 'approval', NOW, NOW);
  db.prepare("INSERT INTO oauth_clients (client_id, redirect_uris, grant_types, response_types, created_at) VALUES ('c1', '[]', '[]', '[]', ?)").run(NOW);
  db.prepare(
    "INSERT INTO oauth_grants (grant_id, client_id, resource, origin, audience, inbox_ids, permissions, send_policy, created_at, expires_at) VALUES ('g1', 'c1', 'r', 'o', '/mcp', '[]', '[]', 'direct', ?, ?)",
  ).run(NOW, NOW);
  db.prepare("INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, expires_at) VALUES ('code1', 'g1', 'http://127.0.0.1/cb', 'x', ?)").run(NOW);
  db.prepare("INSERT INTO oauth_tokens (token_id, grant_id, kind, token_hash, created_at, expires_at) VALUES ('t1', 'g1', 'access', 'th1', ?, ?)").run(NOW, NOW);
  db.prepare("INSERT INTO threads (thread_id, inbox_id, created_at, updated_at) VALUES ('th1', 'a@home.example', ?, ?)").run(NOW, NOW);
  const message = db.prepare(
    "INSERT INTO messages (inbox_id, thread_id, message_id, sender, to_addresses, cc_addresses, size, timestamp, direction, created_at, updated_at) VALUES ('a@home.example', 'th1', ?, ?, ?, ?, 1, ?, ?, ?, ?)",
  );
  message.run('<in1@x>', 'friend@partner.example', '["a@home.example"]', null, NOW, 'inbound', NOW, NOW);
  const spam = Number(message.run('<in2@x>', 'spammer@bad.example', '["a@home.example"]', null, NOW, 'inbound', NOW, NOW).lastInsertRowid);
  db.prepare("INSERT INTO message_labels (message_rowid, label) VALUES (?, 'spam')").run(spam);
  const flagged = Number(message.run('<in3@x>', 'lookalike@paypa1.example', '["a@home.example"]', null, NOW, 'inbound', NOW, NOW).lastInsertRowid);
  db.prepare("INSERT INTO message_labels (message_rowid, label) VALUES (?, 'suspicious')").run(flagged);
  const sent = Number(message.run('<out1@home.example>', 'a@home.example', '["Bob <Bob@Remote.example>", "carol@remote.example"]', '["Dan <dan@remote.example>"]', NOW, 'outbound', NOW, NOW).lastInsertRowid);
  db.prepare("INSERT INTO message_labels (message_rowid, label) VALUES (?, 'sent')").run(sent);
  const failed = Number(message.run('<out2@home.example>', 'a@home.example', '["never@bounced.example"]', null, NOW, 'outbound', NOW, NOW).lastInsertRowid);
  db.prepare("INSERT INTO message_labels (message_rowid, label) VALUES (?, 'failed')").run(failed);
  return db;
}

t.test('migration 17 keeps every key, grant, code and token, and accepts `guarded`', async (t) => {
  t.ok(FOREIGN_KEYS_OFF.has(17), 'it is marked to run with foreign keys off');
  const db = at16();
  t.teardown(() => db.close());
  migrate(db);
  t.equal(db.pragma('user_version', { simple: true }), MIGRATIONS.length);
  t.equal(db.pragma('foreign_keys', { simple: true }), 1, 'foreign keys are on again');
  t.same(db.pragma('foreign_key_check'), []);
  t.equal((db.prepare('SELECT count(*) AS c FROM oauth_codes').get() as { c: number }).c, 1, 'the code survived the rebuild');
  t.equal((db.prepare('SELECT count(*) AS c FROM oauth_tokens').get() as { c: number }).c, 1, 'the token survived the rebuild');
  t.same(db.prepare('SELECT api_key_id, send_policy FROM api_keys').all(), [{ api_key_id: 'k1', send_policy: 'approval' }]);
  db.prepare("UPDATE api_keys SET send_policy = 'guarded'").run();
  db.prepare("UPDATE oauth_grants SET send_policy = 'guarded'").run();
  t.throws(() => db.prepare("UPDATE api_keys SET send_policy = 'anything'").run(), /CHECK/, 'other values are still refused');
  // The cascade still works on the rebuilt table.
  db.prepare("DELETE FROM oauth_grants WHERE grant_id = 'g1'").run();
  t.equal((db.prepare('SELECT count(*) AS c FROM oauth_tokens').get() as { c: number }).c, 0, 'deleting a grant still deletes its tokens');
});

/** Migrations 1–17 only, as a home that has not yet run migration 19 has them. */
function at17(): Database.Database {
  const db = at16();
  db.pragma('foreign_keys = OFF');
  db.exec(MIGRATIONS[16]);
  db.pragma('foreign_keys = ON');
  db.pragma('user_version = 17');
  return db;
}

t.test('migration 17 backfills correspondent addresses: clean senders and sent-to recipients, as already known (not spam, suspicious or failed)', async (t) => {
  const db = at17();
  t.teardown(() => db.close());
  const rows = db.prepare('SELECT address, introduced_at FROM correspondent_addresses ORDER BY address').all();
  t.same(rows, [
    { address: 'bob@remote.example', introduced_at: null },
    { address: 'carol@remote.example', introduced_at: null },
    { address: 'dan@remote.example', introduced_at: null },
    { address: 'friend@partner.example', introduced_at: null },
  ]);
});

t.test('migration 19 forgets addresses known only from received mail (maybe a forged From); sent-to recipients and first contacts stay', async (t) => {
  const db = at17();
  t.teardown(() => db.close());
  // What a forged From made known before the upgrade, and a first contact a send made.
  const known = db.prepare('INSERT INTO correspondent_addresses (inbox_id, address, introduced_at) VALUES (?, ?, ?)');
  known.run('a@home.example', 'ceo@forged.example', null);
  known.run('a@home.example', 'new@remote.example', NOW);
  const domainsBefore = db.prepare('SELECT domain FROM correspondent_domains ORDER BY domain').all();
  migrate(db);
  t.equal(db.pragma('user_version', { simple: true }), MIGRATIONS.length);
  t.same(db.prepare('SELECT address, introduced_at FROM correspondent_addresses ORDER BY address').all(), [
    { address: 'bob@remote.example', introduced_at: null },
    { address: 'carol@remote.example', introduced_at: null },
    { address: 'dan@remote.example', introduced_at: null },
    { address: 'new@remote.example', introduced_at: NOW },
  ]);
  t.same(db.prepare('SELECT domain FROM correspondent_domains ORDER BY domain').all(), domainsBefore, 'the lookalike references stay');
});
