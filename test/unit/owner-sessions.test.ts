/** Owner session lifetime: 14 days of inactivity, 30 days at most (spec §5.1, §8). */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase } from '../../src/db/open.js';
import { OwnerAccount } from '../../src/owner/owner-account.js';
import { tempDir } from '../helpers/svc.js';

const DAY = 24 * 3600 * 1000;
const iso = (ms: number) => new Date(ms).toISOString();

function fixture() {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  const owner = new OwnerAccount(db);
  const session = owner.createSession('test-agent');
  const id = (db.prepare('SELECT session_id FROM owner_sessions').get() as { session_id: string }).session_id;
  const set = (createdAgo: number, seenAgo: number) => {
    const now = Date.now();
    db.prepare('UPDATE owner_sessions SET created_at = ?, last_seen_at = ?, expires_at = ? WHERE session_id = ?').run(
      iso(now - createdAgo),
      iso(now - seenAgo),
      iso(Math.min(now - seenAgo + 14 * DAY, now - createdAgo + 30 * DAY)),
      id,
    );
  };
  const row = () => db.prepare('SELECT * FROM owner_sessions WHERE session_id = ?').get(id) as { expires_at: string; last_seen_at: string } | undefined;
  t.teardown(() => db.close());
  return { owner, token: session.token, set, row };
}

t.test('a new session expires 14 days after creation', async (t) => {
  const { row } = fixture();
  const left = Date.parse(row()!.expires_at) - Date.now();
  t.ok(left > 14 * DAY - 60_000 && left <= 14 * DAY, 'idle limit applies first');
});

t.test('use within 14 days keeps the session and extends the idle deadline', async (t) => {
  const { owner, token, set, row } = fixture();
  set(13 * DAY, 13 * DAY);
  t.ok(owner.sessionPrincipal(token), 'still valid after 13 idle days');
  t.ok(Date.parse(row()!.expires_at) - Date.now() > 13 * DAY, 'deadline moved to 14 days from now');
});

t.test('14 days without use ends the session', async (t) => {
  const { owner, token, set, row } = fixture();
  set(15 * DAY, 14 * DAY + 1000);
  t.equal(owner.sessionPrincipal(token), null);
  t.equal(row(), undefined, 'the expired session is deleted');
});

t.test('30 days after creation the session ends even when used daily', async (t) => {
  const { owner, token, set, row } = fixture();
  set(25 * DAY, 2 * DAY);
  t.ok(owner.sessionPrincipal(token));
  const left = Date.parse(row()!.expires_at) - Date.now();
  t.ok(left <= 5 * DAY && left > 5 * DAY - 60_000, 'extension is capped at 30 days from creation');
  set(30 * DAY + 1000, 60_000);
  t.equal(owner.sessionPrincipal(token), null);
});
