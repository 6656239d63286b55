/** How allow and block lists judge an address (spec §2.7; docs/lists.md "How an address is judged"). */
import t, { type Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase, type Db } from '../../src/db/open.js';
import { createListEntry, listVerdict, normalizeListEntry, type ListDirection, type ListType } from '../../src/mail/lists.js';
import { tempDir } from '../helpers/svc.js';

const INBOX = 'agent@example.org';
const OTHER = 'other@example.org';

function fixture(t: Test): { db: Db; add: (inboxId: string | null, direction: ListDirection, type: ListType, entry: string) => void } {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  const add = (inboxId: string | null, direction: ListDirection, type: ListType, entry: string) => {
    createListEntry(db, { inboxId, podId: null, direction, type }, normalizeListEntry(entry), null);
  };
  return { db, add };
}

const verdict = (db: Db, address: string, direction: ListDirection = 'receive', inboxId = INBOX) => listVerdict(db, { inboxId, direction, address });

t.test('with no entries every address is none', async (t) => {
  const { db } = fixture(t);
  for (const direction of ['receive', 'send', 'reply'] as const) t.equal(verdict(db, 'a@b.example', direction), 'none', direction);
});

t.test('an address entry matches that address exactly, case-insensitively', async (t) => {
  const { db, add } = fixture(t);
  add(INBOX, 'receive', 'block', 'Spammer@Bad.example');
  t.equal(verdict(db, 'spammer@bad.example'), 'block');
  t.equal(verdict(db, 'SPAMMER@BAD.EXAMPLE'), 'block');
  t.equal(verdict(db, 'other@bad.example'), 'none', 'another address at the same domain is not matched');
  t.equal(verdict(db, 'spammer@sub.bad.example'), 'none', 'an address entry does not cover subdomains');
});

t.test('a domain entry matches its domain and every subdomain, not look-alikes', async (t) => {
  const { db, add } = fixture(t);
  add(INBOX, 'receive', 'block', 'bad.example');
  t.equal(verdict(db, 'x@bad.example'), 'block');
  t.equal(verdict(db, 'x@mail.bad.example'), 'block');
  t.equal(verdict(db, 'x@a.b.bad.example'), 'block');
  t.equal(verdict(db, 'x@notbad.example'), 'none', 'a suffix that is not a label boundary does not match');
  t.equal(verdict(db, 'x@bad.example.net'), 'none');
});

t.test('block wins over allow, at the same level and across levels', async (t) => {
  const { db, add } = fixture(t);
  add(INBOX, 'receive', 'allow', 'partner.example');
  add(INBOX, 'receive', 'block', 'mallory@partner.example');
  t.equal(verdict(db, 'mallory@partner.example'), 'block');
  t.equal(verdict(db, 'alice@partner.example'), 'allow');
  add(null, 'receive', 'block', 'eve@partner.example');
  t.equal(verdict(db, 'eve@partner.example'), 'block', 'a global block beats an inbox allow');
  add(null, 'receive', 'allow', 'carol@example.com');
  add(INBOX, 'receive', 'block', 'example.com');
  t.equal(verdict(db, 'carol@example.com'), 'block', 'an inbox block beats a global allow');
});

t.test('a non-empty allow list turns unmatched addresses into not_allowed', async (t) => {
  const { db, add } = fixture(t);
  add(INBOX, 'receive', 'allow', 'friend@ok.example');
  t.equal(verdict(db, 'friend@ok.example'), 'allow');
  t.equal(verdict(db, 'stranger@ok.example'), 'not_allowed');
  t.equal(verdict(db, 'stranger@ok.example', 'receive', OTHER), 'none', 'another inbox has no allow list in force');
});

t.test('inbox and global allow lists apply together as one list', async (t) => {
  const { db, add } = fixture(t);
  add(null, 'receive', 'allow', 'company.example');
  add(INBOX, 'receive', 'allow', 'partner.example');
  t.equal(verdict(db, 'boss@company.example'), 'allow', 'the global allow list applies to the inbox');
  t.equal(verdict(db, 'pat@partner.example'), 'allow', 'the inbox allow list extends the global one');
  t.equal(verdict(db, 'pat@partner.example', 'receive', OTHER), 'not_allowed', 'another inbox only has the global list');
  t.equal(verdict(db, 'x@elsewhere.example'), 'not_allowed');
});

t.test('global entries apply to every inbox', async (t) => {
  const { db, add } = fixture(t);
  add(null, 'send', 'block', 'competitor.example');
  t.equal(verdict(db, 'ceo@competitor.example', 'send', INBOX), 'block');
  t.equal(verdict(db, 'ceo@competitor.example', 'send', OTHER), 'block');
});

t.test('directions are separate lists', async (t) => {
  const { db, add } = fixture(t);
  add(INBOX, 'send', 'block', 'x@dir.example');
  add(INBOX, 'reply', 'allow', 'y@dir.example');
  t.equal(verdict(db, 'x@dir.example', 'send'), 'block');
  t.equal(verdict(db, 'x@dir.example', 'receive'), 'none');
  t.equal(verdict(db, 'x@dir.example', 'reply'), 'not_allowed');
  t.equal(verdict(db, 'y@dir.example', 'reply'), 'allow');
  t.equal(verdict(db, 'y@dir.example', 'send'), 'none');
});

t.test('international domains match in either form', async (t) => {
  const { db, add } = fixture(t);
  add(INBOX, 'receive', 'block', 'bücher.example');
  t.equal(verdict(db, 'a@xn--bcher-kva.example'), 'block');
  t.equal(verdict(db, 'a@BÜCHER.example'), 'block');
});

t.test('the inbox id is compared lower-cased', async (t) => {
  const { db, add } = fixture(t);
  add(INBOX, 'receive', 'block', 'bad.example');
  t.equal(verdict(db, 'x@bad.example', 'receive', 'Agent@Example.ORG'), 'block');
});

t.test('entries are normalized to lower-case addresses or domains', async (t) => {
  t.equal(normalizeListEntry('  Bob+Tag@Example.COM '), 'bob+tag@example.com');
  t.equal(normalizeListEntry('Example.COM'), 'example.com');
  t.equal(normalizeListEntry('Bücher.Example'), 'xn--bcher-kva.example');
  t.equal(normalizeListEntry('o\'brien@x.example'), 'o\'brien@x.example');
  for (const bad of ['', 'localhost', '@example.com', 'a@', 'a@b', '*.example.com', 'http://example.com', 'a b@example.com', 'a..b@example.com', '.a@example.com', 'a@-x.example', 'a@x_y.example', '1.2.3.4', 'example.com.', `${'a'.repeat(65)}@example.com`, `a@${'b'.repeat(64)}.example`]) {
    t.throws(() => normalizeListEntry(bad), { code: 'validation_error' }, JSON.stringify(bad));
  }
});

t.test("a pod's lists apply to its own inboxes only (docs/pods.md)", async (t) => {
  const { db } = fixture(t);
  db.prepare("INSERT INTO pods (pod_id, name, created_at, updated_at) VALUES ('p1', 'p1', 'x', 'x')").run();
  for (const [inbox, pod] of [[INBOX, 'p1'], [OTHER, 'default']]) {
    db.prepare('INSERT INTO inboxes (inbox_id, username, domain, pod_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(inbox, inbox.split('@')[0], 'example.org', pod, 'x', 'x');
  }
  const addToPod = (podId: string, type: ListType, entry: string) => createListEntry(db, { inboxId: null, podId, direction: 'receive', type }, normalizeListEntry(entry), null);
  addToPod('p1', 'block', 'bad.example');
  t.equal(verdict(db, 'x@bad.example'), 'block', "the pod's block applies to its inbox");
  t.equal(verdict(db, 'x@bad.example', 'receive', OTHER), 'none', "and not to another pod's inbox");
  t.equal(verdict(db, 'x@bad.example', 'send'), 'none', 'nor to another direction');
  addToPod('default', 'allow', 'friend.example');
  t.equal(verdict(db, 'x@else.example', 'receive', OTHER), 'not_allowed', "the default pod's allow list is in force for its inbox");
  t.equal(verdict(db, 'x@friend.example', 'receive', OTHER), 'allow');
  t.equal(verdict(db, 'x@else.example'), 'none', 'and not for the inbox of pod p1');
});
