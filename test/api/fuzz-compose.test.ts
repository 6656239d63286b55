/**
 * Header injection through the composing payload (spec §2.4, issue 10 item 3): CR, LF and NUL
 * in the subject, addresses, display names, caller header names and values, attachment
 * filenames, content types and content IDs — on send, reply, forward and drafts (create and
 * patch), from the owner and from an agent — are refused with `validation_error` and never
 * reach the wire. The smart host is a real SMTP sink; a control message proves it is wired, and
 * at the end nothing at the sink carries an injected header line.
 */
import t, { type Test as Tap } from 'tap';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { PERMISSIONS } from '../../src/auth/permissions.js';

const enc = encodeURIComponent;
/** A header line that must never appear at the sink: it would come from an injection. */
const INJECTED = /^(X-Injected|Bcc):/im;
const BREAKS = ['\r\n', '\n', '\r', '\r\n\r\n', '\u0000'];

let svc: RunningSvc;
let sink: Sink;
let inbox = '';
let agent = '';
let original = '';
let draftId = '';

t.before(async () => {
  sink = await startSink();
  svc = await startSvc();
  const db = openHomeDb(svc.home);
  try {
    inbox = await createInbox(svc, 'composer@inject.test');
    agent = (await createApiKey(svc, { permissions: [...PERMISSIONS], inboxIds: [inbox], sendPolicy: 'direct' })).secret;
    original = (await seedMail(db, simpleMail({ to: inbox, from: 'Peer <peer@remote.test>', subject: 'Original', messageId: '<orig@remote.test>' }), { inboxId: inbox })).messageId;
  } finally {
    db.close();
  }
  const transport = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { smtp: { host: '127.0.0.1', port: sink.port } } });
  if (transport.status !== 200) throw new Error(transport.text);
  const draft = await api<{ draft_id: string }>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/drafts`, { token: svc.ownerToken, body: { to: ['ok@remote.test'], subject: 'Draft', text: 'x' } });
  draftId = draft.body.draft_id;
});
t.teardown(async () => {
  await svc?.stop();
  await sink?.close();
});

/** Every payload field that ends up in a header line, with a line break spliced in. */
function injections(brk: string): [string, Record<string, unknown>][] {
  const evil = `${brk}X-Injected: yes${brk}Bcc: victim@evil.test`;
  const att = (field: string, value: string) => ({ attachments: [{ filename: 'a.txt', content: 'aGk=', [field]: value }] });
  return [
    ['subject', { subject: `Hi${evil}` }],
    ['to address', { to: `a@remote.test${evil}` }],
    ['to list entry', { to: ['a@remote.test', `b@remote.test${evil}`] }],
    ['to display name', { to: `"Evil${evil}" <a@remote.test>` }],
    ['cc', { cc: `c@remote.test${evil}` }],
    ['bcc', { bcc: [`d@remote.test${evil}`] }],
    ['reply_to', { reply_to: `Name${evil} <r@remote.test>` }],
    ['header value', { headers: { 'X-Custom': `v${evil}` } }],
    ['header name', { headers: { [`X-A${brk}Bcc`]: 'victim@evil.test' } }],
    ['header name with a colon', { headers: { 'X-A: b\r\nBcc': 'v' } }],
    ['Auto-Submitted value', { headers: { 'Auto-Submitted': `no${evil}` } }],
    ['attachment filename', att('filename', `a.txt${evil}`)],
    ['attachment content_type', att('content_type', `text/plain${evil}`)],
    ['attachment content_id', { attachments: [{ content: 'aGk=', content_disposition: 'inline', content_id: `cid1${evil}` }] }],
    ['attachment content_disposition', att('content_disposition', `attachment${evil}`)],
  ];
}

/** A valid payload for the route, with the hostile fields laid over it. */
const payload = (extra: Record<string, unknown>, withRecipient = true) => ({ ...(withRecipient ? { to: 'ok@remote.test' } : {}), subject: 'Fine', text: 'body', ...extra });

async function expectRefused(t: Tap, method: string, path: string, token: string, body: Record<string, unknown>, what: string): Promise<void> {
  const res = await api(svc.url, method, path, { token, body });
  t.equal(res.status, 400, `${what}: 400 (${res.text.slice(0, 160)})`);
  t.match(res.body, { name: 'ValidationError', code: 'validation_error', message: String }, what);
}

t.test('a control message reaches the sink, so the injection checks below can see a leak', async (t) => {
  const res = await api<{ message_id: string }>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token: svc.ownerToken, body: payload({ headers: { 'X-Trace': 'control' } }) });
  t.equal(res.status, 200);
  const [first] = await sink.waitFor(1);
  t.match(first.raw.toString(), /^X-Trace: control\r?$/m);
});

t.test('line breaks and NULs in send payloads are validation_error, for the owner and an agent', async (t) => {
  for (const token of [svc.ownerToken, agent]) {
    for (const brk of BREAKS) {
      for (const [what, extra] of injections(brk)) {
        await expectRefused(t, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, token, payload(extra), `send ${what} ${JSON.stringify(brk)}`);
      }
    }
  }
});

t.test('reply, reply-all and forward refuse the same injections', async (t) => {
  const base = `/v0/inboxes/${enc(inbox)}/messages/${enc(original)}`;
  for (const [what, extra] of injections('\r\n')) {
    await expectRefused(t, 'POST', `${base}/reply`, svc.ownerToken, payload(extra, false), `reply ${what}`);
    await expectRefused(t, 'POST', `${base}/forward`, svc.ownerToken, payload(extra), `forward ${what}`);
    const replyAll = Object.fromEntries(Object.entries(payload(extra, false)).filter(([k]) => !['to', 'cc', 'bcc', 'subject'].includes(k)));
    if (Object.keys(extra).some((k) => !['to', 'cc', 'bcc', 'subject'].includes(k))) await expectRefused(t, 'POST', `${base}/reply-all`, svc.ownerToken, replyAll, `reply-all ${what}`);
  }
});

t.test('drafts refuse the injections on create and on patch, so approval cannot send them later', async (t) => {
  for (const [what, extra] of injections('\r\n')) {
    const listy = Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, ['to', 'cc', 'bcc', 'reply_to'].includes(k) && typeof v === 'string' ? [v] : v]));
    await expectRefused(t, 'POST', `/v0/inboxes/${enc(inbox)}/drafts`, agent, { to: ['ok@remote.test'], subject: 'Fine', text: 'x', ...listy }, `draft create ${what}`);
    if ('attachments' in listy) {
      await expectRefused(t, 'PATCH', `/v0/inboxes/${enc(inbox)}/drafts/${draftId}`, agent, { add_attachments: listy.attachments }, `draft patch ${what}`);
    } else if (!('headers' in listy)) {
      await expectRefused(t, 'PATCH', `/v0/inboxes/${enc(inbox)}/drafts/${draftId}`, agent, listy, `draft patch ${what}`);
    }
  }
  const draft = await api<{ subject: string; to: string[] }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/drafts/${draftId}`, { token: agent });
  t.same([draft.body.subject, draft.body.to], ['Draft', ['ok@remote.test']], 'the draft is unchanged');
});

t.test('an inbox display name with a line break is refused, so it can never reach From', async (t) => {
  for (const brk of BREAKS) {
    const res = await api(svc.url, 'PATCH', `/v0/inboxes/${enc(inbox)}`, { token: svc.ownerToken, body: { display_name: `Agent${brk}Bcc: victim@evil.test` } });
    t.equal(res.status, 400, JSON.stringify(brk));
    t.equal((res.body as { code: string }).code, 'validation_error');
  }
});

t.test('Unicode line separators are not line breaks in mail: accepted, and encoded so no header line is injected', async (t) => {
  const sneaky = '\u2028X-Injected: yes\u0085Bcc: victim@evil.test';
  const res = await api(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, {
    token: svc.ownerToken,
    body: payload({ subject: `Hi${sneaky}`, to: `"Name${sneaky}" <u@remote.test>`, headers: { 'X-Note': `v${sneaky}` }, attachments: [{ filename: `f${sneaky}.txt`, content: 'aGk=' }] }),
  });
  t.equal(res.status, 200, res.text.slice(0, 200));
  const messages = await sink.waitFor(2);
  const raw = messages[1].raw.toString();
  const headerBlock = raw.slice(0, raw.indexOf('\r\n\r\n'));
  t.notMatch(headerBlock, INJECTED, 'no injected header line');
  t.same(messages[1].to, ['u@remote.test'], 'the envelope holds only the given recipient');
});

t.test('nothing that reached the sink carries an injected header or recipient', async (t) => {
  await new Promise((r) => setTimeout(r, 500));
  t.equal(sink.messages.length, 2, 'only the two accepted messages were sent');
  for (const m of sink.messages) {
    t.notMatch(m.raw.toString().split('\r\n\r\n')[0], INJECTED);
    t.notOk(m.to.includes('victim@evil.test'));
  }
});
