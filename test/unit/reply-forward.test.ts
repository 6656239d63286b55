/**
 * What a reply and a forward derive from the original message (spec §2.4, §4.5;
 * src/mail/outbound.ts deriveReply / deriveForward), table by table: the recipients (Reply-To
 * before From, our own sent mail goes back to its To, reply-all adds To and Cc, never the inbox
 * itself, no duplicates), the subject prefixes (`Re:` / `Fwd:` added once, in any case), and the
 * threading headers (In-Reply-To is the original, References its chain plus the original, at
 * most 100). Pure functions: no service, no database.
 */
import t from 'tap';
import { parseRecipients, type Composition, type OutgoingAttachment } from '../../src/mail/compose.js';
import { deriveForward, deriveReply, type OriginalMessage } from '../../src/mail/outbound.js';

const INBOX = 'agent@home.test';

function original(fields: Partial<OriginalMessage> = {}): OriginalMessage {
  return {
    rowid: 1,
    inboxId: INBOX,
    threadId: 'thread-1',
    messageId: '<orig@sender.test>',
    from: 'Ann <ann@sender.test>',
    replyTo: [],
    to: [INBOX],
    cc: [],
    subject: 'Site photos',
    text: 'See attached.',
    html: null,
    inReplyTo: null,
    references: [],
    timestamp: '2025-01-02T03:04:05.000Z',
    direction: 'inbound',
    ...fields,
  };
}

function draft(fields: { to?: string[]; cc?: string[]; bcc?: string[] } & Partial<Omit<Composition, 'to' | 'cc' | 'bcc'>> = {}): Composition {
  const { to = [], cc = [], bcc = [], ...rest } = fields;
  return {
    to: parseRecipients(to, 'to'),
    cc: parseRecipients(cc, 'cc'),
    bcc: parseRecipients(bcc, 'bcc'),
    replyTo: [],
    subject: null,
    text: 'Thanks.',
    html: null,
    attachments: [],
    headers: {},
    labels: [],
    ...rest,
  };
}

const addresses = (c: Composition) => ({ to: c.to.map((r) => r.address), cc: c.cc.map((r) => r.address), bcc: c.bcc.map((r) => r.address) });

// ---- reply recipients ----

const replyRecipients: [name: string, orig: Partial<OriginalMessage>, given: Parameters<typeof draft>[0], replyAll: boolean, want: { to: string[]; cc: string[]; bcc: string[] }][] = [
  ['to the sender when there is no Reply-To', {}, {}, false, { to: ['ann@sender.test'], cc: [], bcc: [] }],
  ['to the Reply-To, not the From', { replyTo: ['Desk <desk@sender.test>'] }, {}, false, { to: ['desk@sender.test'], cc: [], bcc: [] }],
  ['our own sent mail goes back to its To', { direction: 'outbound', from: INBOX, to: ['bob@peer.test', 'carl@peer.test'] }, {}, false, { to: ['bob@peer.test', 'carl@peer.test'], cc: [], bcc: [] }],
  ['explicit recipients replace the derived ones', { replyTo: ['desk@sender.test'] }, { to: ['zed@else.test'] }, false, { to: ['zed@else.test'], cc: [], bcc: [] }],
  ['no From and no Reply-To: no recipient derived', { from: null }, {}, false, { to: [], cc: [], bcc: [] }],
  ['reply-all adds the original To and Cc, without the inbox', { to: [INBOX, 'bob@peer.test'], cc: ['cat@peer.test'] }, {}, true, { to: ['ann@sender.test', 'bob@peer.test'], cc: ['cat@peer.test'], bcc: [] }],
  ['reply-all drops an address already in To from Cc', { to: [INBOX], cc: ['Ann <ann@sender.test>', 'cat@peer.test'] }, {}, true, { to: ['ann@sender.test'], cc: ['cat@peer.test'], bcc: [] }],
  ['reply-all keeps the caller Bcc, minus the inbox', { to: [INBOX, 'bob@peer.test'] }, { bcc: [INBOX, 'audit@home.test'] }, true, { to: ['ann@sender.test', 'bob@peer.test'], cc: [], bcc: ['audit@home.test'] }],
  ['the inbox never replies to itself, even when it is the Reply-To', { replyTo: [INBOX] }, {}, false, { to: [], cc: [], bcc: [] }],
];

for (const [name, orig, given, replyAll, want] of replyRecipients) {
  t.test(`${replyAll ? 'reply-all' : 'reply'} recipients: ${name}`, async (t) => {
    t.same(addresses(deriveReply(INBOX, original(orig), draft(given), replyAll).composition), want);
  });
}

// ---- subject prefixes ----

const replySubjects: [original: string | null, reply: string][] = [
  ['Site photos', 'Re: Site photos'],
  ['Re: Site photos', 'Re: Site photos'],
  ['RE: Site photos', 'RE: Site photos'],
  ['re:Site photos', 're:Site photos'],
  ['  Site photos  ', 'Re: Site photos'],
  ['Fwd: Site photos', 'Re: Fwd: Site photos'],
  ['Réponse', 'Re: Réponse'],
  [null, 'Re:'],
  ['', 'Re:'],
];

for (const [subject, want] of replySubjects) {
  t.test(`reply subject of ${JSON.stringify(subject)} is ${JSON.stringify(want)}`, async (t) => {
    t.equal(deriveReply(INBOX, original({ subject }), draft(), false).composition.subject, want);
  });
}

t.test('a reply ignores a subject given by the caller: the thread keeps its subject', async (t) => {
  t.equal(deriveReply(INBOX, original(), draft({ subject: 'Something else' }), false).composition.subject, 'Re: Site photos');
});

const forwardSubjects: [original: string | null, given: string | null, forward: string][] = [
  ['Site photos', null, 'Fwd: Site photos'],
  ['Fwd: Site photos', null, 'Fwd: Site photos'],
  ['FWD: Site photos', null, 'FWD: Site photos'],
  ['Fw: Site photos', null, 'Fw: Site photos'],
  ['Re: Site photos', null, 'Fwd: Re: Site photos'],
  [null, null, 'Fwd:'],
  ['Site photos', 'For your files', 'For your files'],
];

for (const [subject, given, want] of forwardSubjects) {
  t.test(`forward subject of ${JSON.stringify(subject)}${given ? ` with ${JSON.stringify(given)} given` : ''} is ${JSON.stringify(want)}`, async (t) => {
    t.equal(deriveForward(original({ subject }), draft({ to: ['x@y.test'], subject: given }), []).composition.subject, want);
  });
}

// ---- threading ----

const chain = (n: number) => Array.from({ length: n }, (_, i) => `<m${i}@sender.test>`);

const threadings: [name: string, orig: Partial<OriginalMessage>, references: string[]][] = [
  ['a first message: References is just the original', {}, ['<orig@sender.test>']],
  ['the original had References: they come first', { references: ['<a@x>', '<b@x>'], inReplyTo: '<b@x>' }, ['<a@x>', '<b@x>', '<orig@sender.test>']],
  ['the original had only In-Reply-To: it stands in for References', { inReplyTo: '<parent@x>' }, ['<parent@x>', '<orig@sender.test>']],
  ['the original listed itself: not repeated', { references: ['<a@x>', '<orig@sender.test>'] }, ['<a@x>', '<orig@sender.test>']],
  ['a chain of 100: the oldest drops out, at most 100 stay', { references: chain(100) }, [...chain(100).slice(1), '<orig@sender.test>']],
];

for (const [name, orig, references] of threadings) {
  t.test(`threading: ${name}`, async (t) => {
    const o = original(orig);
    for (const [kind, derived] of [
      ['reply', deriveReply(INBOX, o, draft(), false)],
      ['forward', deriveForward(o, draft({ to: ['x@y.test'] }), [])],
    ] as const) {
      t.same(derived.threading, { threadId: 'thread-1', inReplyTo: '<orig@sender.test>', references }, kind);
    }
  });
}

// ---- forward body and attachments ----

t.test('a forward puts the caller text first, then the header block, then the original text', async (t) => {
  const { composition } = deriveForward(original({ cc: ['cat@peer.test'] }), draft({ to: ['x@y.test'], text: 'FYI.' }), []);
  t.equal(
    composition.text,
    ['FYI.', '', '---------- Forwarded message ---------', 'From: Ann <ann@sender.test>', 'Date: Thu, 02 Jan 2025 03:04:05 GMT', 'Subject: Site photos', `To: ${INBOX}`, 'Cc: cat@peer.test', '', 'See attached.'].join('\n'),
  );
  t.equal(composition.html, null, 'no HTML part when neither side has one');
});

t.test('a forward of an HTML original escapes the caller text and the header block, and keeps the original HTML', async (t) => {
  const { composition } = deriveForward(original({ html: '<p>See <b>attached</b>.</p>', from: 'Ann <ann@sender.test>' }), draft({ to: ['x@y.test'], text: 'a < b\nc' }), []);
  t.match(composition.html, /^<p>a &lt; b<br>c<\/p><div>---------- Forwarded message ---------<br>From: Ann &lt;ann@sender.test&gt;<br>/);
  t.match(composition.html, /<br><p>See <b>attached<\/b>\.<\/p>$/);
});

t.test('a forward of a text-only original with a caller HTML body shows the original as preformatted text', async (t) => {
  const { composition } = deriveForward(original({ text: '<not html>' }), draft({ to: ['x@y.test'], text: null, html: '<p>FYI</p>' }), []);
  t.match(composition.html, /^<p>FYI<\/p><div>/);
  t.match(composition.html, /<pre>&lt;not html&gt;<\/pre>$/);
});

const file = (name: string): OutgoingAttachment => ({ filename: name, contentType: 'text/plain', contentDisposition: 'attachment', contentId: null, content: Buffer.from(name) });

const forwardAttachments: [name: string, originals: number, added: number, refused: boolean][] = [
  ['none', 0, 0, false],
  ["the original's only", 2, 0, false],
  ["the original's and the caller's, 32 in all", 30, 2, false],
  ['33 in all', 30, 3, true],
];

for (const [name, originals, added, refused] of forwardAttachments) {
  t.test(`forward attachments: ${name}${refused ? ' → validation_error' : ''}`, async (t) => {
    const fromOriginal = Array.from({ length: originals }, (_, i) => file(`orig-${i}.txt`));
    const fromCaller = Array.from({ length: added }, (_, i) => file(`new-${i}.txt`));
    const forward = () => deriveForward(original(), draft({ to: ['x@y.test'], attachments: fromCaller }), fromOriginal);
    if (refused) t.throws(forward, { code: 'validation_error', message: /at most 32 attachments/ });
    else t.same(forward().composition.attachments.map((a) => a.filename), [...fromOriginal, ...fromCaller].map((a) => a.filename), "the original's first");
  });
}

t.test('a forward keeps the recipients the caller gave and derives none', async (t) => {
  t.same(addresses(deriveForward(original({ replyTo: ['desk@sender.test'] }), draft({ to: ['x@y.test'], cc: ['c@y.test'] }), []).composition), { to: ['x@y.test'], cc: ['c@y.test'], bcc: [] });
});
