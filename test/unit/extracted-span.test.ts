/**
 * Migration 14: a message's extracted text is stored as a span of its text when it is one, and
 * reads back exactly as extracted whatever its shape (no quote, a reply, leading blank lines, a
 * body that is only a quotation, CRLF text, an astral character, a lone surrogate).
 */
import t from 'tap';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { openDatabase } from '../../src/db/open.js';
import { commitInbound } from '../../src/mail/store.js';
import { getMessage } from '../../src/mail/messages.js';
import { extractText } from '../../src/mail/extract.js';
import { readExtract, storedExtract } from '../../src/mail/extracted-span.js';
import { parseMime } from '../../workers/pool/parse.js';
import { deliveredEvents, insertInbox } from '../helpers/db.js';
import { tempDir } from '../helpers/svc.js';
import { simpleMail } from '../helpers/mail.js';

const BODIES: [string, string, boolean][] = [
  ['no quote', 'Hello Ana,\n\nthe report is attached.\n\nBest,\nBo\n\n', true],
  ['a reply', 'Sounds good, see you at 3.\n\nOn Tue, 3 Mar 2026 at 10:00, Ana <ana@example.com> wrote:\n> Shall we meet?\n> Ana\n', true],
  ['leading blank lines', '\n\n   \nHi there 👋\nsecond line\n', true],
  ['only a quotation', '  \n> quoted only\n> still quoted\n', true],
  ['quoted lines in the middle', 'top\n> quoted\nbottom\n', false],
  ['CRLF line ends', 'line one\r\nline two\r\n\r\nOn Mon, Ana wrote:\r\n> x\r\n', false],
  ['a lone surrogate', 'broken \ud800 text\n', false],
];

t.test('storedExtract keeps a span exactly when the extracted text is one, and readExtract gives it back', async (t) => {
  for (const [name, text, span] of BODIES) {
    const extracted = extractText(text);
    const stored = storedExtract(text, extracted);
    t.equal(stored.extracted_from !== null, span, `${name}: ${span ? 'a span' : 'a copy'}`);
    t.equal(readExtract({ text, ...stored }), extracted, `${name}: reads back as extracted`);
  }
  t.same(storedExtract(null, null), { extracted_text: null, extracted_from: null, extracted_length: null });
  t.same(storedExtract('abc', ''), { extracted_text: '', extracted_from: null, extracted_length: null }, 'an empty extract is its own copy');
});

t.test('received mail stores the span, and every read gives the extracted text', async (t) => {
  const db = openDatabase(path.join(tempDir(), 'svc.db'), randomBytes(32), { migrate: true });
  t.teardown(() => db.close());
  insertInbox(db, 'agent@example.com');
  let n = 0;
  for (const [name, text] of BODIES.filter(([, , span]) => span)) {
    const raw = Buffer.from(simpleMail({ body: text.replace(/\r?\n/g, '\r\n') }));
    const parsed = { ...(await parseMime(raw)), messageId: `<e${n++}@x.org>` };
    const result = commitInbound(db, { inboxId: 'agent@example.com', raw, parsed });
    const row = db.prepare('SELECT text, extracted_text, extracted_from, extracted_length FROM messages WHERE id = ?').get(result.messageRowid) as {
      text: string;
      extracted_text: string | null;
      extracted_from: number | null;
    };
    t.equal(row.extracted_text, null, `${name}: no second copy stored`);
    t.not(row.extracted_from, null);
    const message = getMessage(db, 'agent@example.com', parsed.messageId!, { excluded: [] });
    t.equal(message?.extracted_text, extractText(row.text), `${name}: the message read gives the extracted text`);
    const event = JSON.parse(deliveredEvents(db, 'seq = ?', result.seq)[0]) as { message: { extracted_text: string } };
    t.equal(event.message.extracted_text, extractText(row.text), `${name}: so does the message.received event`);
  }
});
