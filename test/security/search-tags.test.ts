/**
 * Search by inbox-tagged words (migration 36, src/mail/search-index.ts), as an attacker tries it:
 * another inbox's mail that spells out the victim inbox's tag, a tag typed into the query, query
 * syntax and control characters, and a huge query. Another inbox's mail never comes back, and
 * nothing is an error. A search of one inbox checks its matches in `messages_search` (migration
 * 37) instead of their rows: mail a stranger gets delivered hidden (blocked, spam, unauthenticated)
 * or that the owner trashed stays out of it, through every label edit and in the same transaction.
 */
import t from 'tap';
import type { Test } from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase } from '../../src/db/open.js';
import { commitInbound } from '../../src/mail/store.js';
import { searchMessages, searchThreads } from '../../src/mail/search.js';
import { scopeTag } from '../../src/mail/search-index.js';
import { updateMessageLabels } from '../../src/mail/messages.js';
import { parseMime } from '../../workers/pool/parse.js';
import { insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';

const VICTIM = 'victim@example.com';
const ATTACKER = 'attacker@example.com';

/** A new database with the victim's and the attacker's inbox, and a parsed message to vary. */
async function twoInboxes(t: Test) {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, VICTIM);
  insertInbox(db, ATTACKER);
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${VICTIM}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  return { db, template };
}

t.test("mail written with the victim inbox's tag stays the attacker's; query syntax is text", async (t) => {
  const { db, template } = await twoInboxes(t);
  const tag = scopeTag(VICTIM);
  const store = (inbox: string, id: string, subject: string, body: string) =>
    db.transaction(() => commitInbound(db, { inboxId: inbox, parsed: { ...template, messageId: id, subject, text: body }, raw: new TextEncoder().encode('x'), sourceKey: id, receivedAt: '2026-03-01T00:00:00.000Z' }))();
  store(VICTIM, '<v1@x.org>', 'Payroll', 'the payroll run');
  // The attacker's mail spells the victim's tagged words out, in every column it controls.
  store(ATTACKER, '<a1@x.org>', `${tag}payroll ${tag}secret`, `${tag}payroll ${tag}secret ${tag}payroll`);

  const ids = (inboxes: string[], q: string) => searchMessages(db, { q, inboxIds: inboxes, limit: 10, cursor: null }).items.map((m) => m.message_id);
  t.same(ids([VICTIM], 'payroll'), ['<v1@x.org>'], "the victim's search: the victim's mail only");
  t.same(ids([VICTIM], 'secret'), [], "a word only the attacker's forged tagged words hold: nothing");
  t.same(ids([VICTIM], `${tag}payroll`), [], 'the tag typed into the query: nothing');
  t.same(searchThreads(db, { q: 'payroll', inboxIds: [VICTIM], limit: 10, cursor: null }).items.map((x) => x.last_message_id), ['<v1@x.org>'], 'threads alike');
  // FTS5 syntax, column filters, control characters and a query at the length limit are text, never an error.
  for (const q of ['payroll" OR "secret', '{s_body} : secret', 's_body:secret', 'NEAR(payroll secret)', '^payroll', '(payroll', 'payroll\u0000secret', 'pay\u0007roll', `${'payroll '.repeat(64)}`.slice(0, 512)]) {
    for (const inboxes of [[VICTIM], [VICTIM, ATTACKER]]) {
      const found = ids(inboxes, q);
      t.ok(found.every((id) => id === '<v1@x.org>' || inboxes.includes(ATTACKER)), `${JSON.stringify(q.slice(0, 40))} over ${inboxes.length} inbox(es): no mail out of scope (${found.join(' ')})`);
    }
  }
});

t.test('hidden mail never comes back from a search of its own inbox, whatever edits its labels', async (t) => {
  const { db, template } = await twoInboxes(t);
  const store = (inbox: string, id: string, hiddenLabels: ('blocked' | 'spam' | 'unauthenticated')[]) =>
    db.transaction(() => commitInbound(db, { inboxId: inbox, parsed: { ...template, messageId: id, subject: 'Invoice', text: 'invoice overdue' }, raw: new TextEncoder().encode('x'), sourceKey: id, receivedAt: '2026-03-01T00:00:00.000Z', hiddenLabels }))();
  store(VICTIM, '<clean@x.org>', []);
  store(VICTIM, '<blocked@x.org>', ['blocked']);
  store(VICTIM, '<spam@x.org>', ['spam']);
  store(VICTIM, '<unauth@x.org>', ['unauthenticated', 'spam']);
  store(ATTACKER, '<other@x.org>', []);
  const ids = (q = 'invoice') => searchMessages(db, { q, inboxIds: [VICTIM], limit: 10, cursor: null }).items.map((m) => m.message_id).sort();
  const threads = () => searchThreads(db, { q: 'invoice', inboxIds: [VICTIM], limit: 10, cursor: null }).items.map((x) => x.last_message_id);
  const edit = (id: string, add: string[], remove: string[]) => db.transaction(() => updateMessageLabels(db, VICTIM, [id], { excluded: [] }, { add, remove }))();
  t.same(ids(), ['<clean@x.org>'], 'mail that arrived hidden is not found; nor is another inbox\'s');
  t.same(threads(), ['<clean@x.org>'], 'threads alike');
  edit('<unauth@x.org>', [], ['spam']);
  t.same(ids(), ['<clean@x.org>'], 'one of two hidden labels taken off: still hidden');
  edit('<clean@x.org>', ['trash'], []);
  t.same(ids(), [], 'trashed by the owner: gone at once');
  // A label edit rolled back leaves search as it was.
  t.throws(() => db.transaction(() => {
    updateMessageLabels(db, VICTIM, ['<clean@x.org>'], { excluded: [] }, { add: [], remove: ['trash'] });
    throw new Error('rolled back');
  })());
  t.same(ids(), [], 'an untrash that rolled back does not bring it back');
  edit('<clean@x.org>', [], ['trash']);
  edit('<spam@x.org>', [], ['spam']);
  t.same(ids(), ['<clean@x.org>', '<spam@x.org>'], 'restored and not-spam mail is found again');
  // A stranger's words spelling the search index's own names are text, through this path too.
  for (const q of ['messages_search', 'hidden = 0', "invoice' OR hidden=1 --"]) t.doesNotThrow(() => ids(q), `${JSON.stringify(q)} is text`);
});
