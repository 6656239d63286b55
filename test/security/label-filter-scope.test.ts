/**
 * Lists filtered by a label few messages carry start from the label's rows across the whole home
 * (src/mail/labels.ts `rareLabel`). That path must keep every boundary the inbox walk kept: a key
 * scoped to one inbox, asking for a label that only another inbox's mail carries (in any spelling
 * of the inbox id, with several labels, both orders), lists nothing; hidden mail with the label
 * stays out of a key without the hidden label's permission; and the owner's instance-wide thread
 * list over chosen inboxes lists only those inboxes' threads.
 */
import t from 'tap';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { createApiKey, createInbox } from '../helpers/seed.js';

const enc = encodeURIComponent;
const MINE = 'mine@labels.test';
const THEIRS = 'theirs@labels.test';

let svc: RunningSvc;
let key: string;

t.before(async () => {
  svc = await startSvc();
  await createInbox(svc, MINE);
  await createInbox(svc, THEIRS);
  const mail = (to: string, i: number) => simpleMail({ to, subject: `m${i}`, messageId: `<m${i}-${to}>` });
  for (let i = 0; i < 3; i++) await seedMail(svc.home, mail(MINE, i), { inboxId: MINE });
  for (let i = 0; i < 3; i++) await seedMail(svc.home, mail(THEIRS, i), { inboxId: THEIRS });
  await seedMail(svc.home, mail(MINE, 9), { inboxId: MINE, hiddenLabels: ['spam'] });
  // `secret-x` only on the other inbox's mail; `shared-y` on both, and on mine's hidden spam.
  const label = async (inbox: string, id: string, labels: string[]) => {
    const res = await api(svc.url, 'PATCH', `/v0/inboxes/${enc(inbox)}/messages/${enc(id)}`, { token: svc.ownerToken, body: { add_labels: labels } });
    if (res.status !== 200) throw new Error(`label ${id}: ${res.status} ${res.text}`);
  };
  await label(THEIRS, `<m0-${THEIRS}>`, ['secret-x', 'shared-y']);
  await label(THEIRS, `<m1-${THEIRS}>`, ['secret-x']);
  await label(MINE, `<m2-${MINE}>`, ['shared-y']);
  await label(MINE, `<m9-${MINE}>`, ['shared-y']);
  key = (await createApiKey(svc, { permissions: ['inbox_read', 'message_read'], inboxIds: [MINE] })).secret;
});
t.teardown(() => svc?.stop());

t.test("another inbox's label lists nothing through a key scoped to mine", async (t) => {
  for (const labels of [['secret-x'], ['secret-x', 'shared-y'], ['shared-y', 'secret-x'], ['SECRET-X']]) {
    const q = labels.map((l) => `labels=${enc(l)}`).join('&');
    for (const spelling of [MINE, 'MINE@labels.test', ` ${MINE}`]) {
      const messages = await api<{ messages: unknown[] }>(svc.url, 'GET', `/v0/inboxes/${enc(spelling)}/messages?${q}`, { token: key });
      if (messages.status === 200) t.same(messages.body.messages, [], `messages ${labels.join('+')} via ${JSON.stringify(spelling)}`);
      else t.equal(messages.status, 404, `messages via ${JSON.stringify(spelling)}: not found, never another inbox's`);
      const threads = await api<{ threads: unknown[] }>(svc.url, 'GET', `/v0/inboxes/${enc(spelling)}/threads?${q}`, { token: key });
      if (threads.status === 200) t.same(threads.body.threads, [], `threads ${labels.join('+')} via ${JSON.stringify(spelling)}`);
      else t.equal(threads.status, 404);
    }
  }
  const theirs = await api(svc.url, 'GET', `/v0/inboxes/${enc(THEIRS)}/messages?labels=secret-x`, { token: key });
  t.equal(theirs.status, 404, 'the other inbox itself is not found');
  const instance = await api<{ threads: { inbox_id: string }[] }>(svc.url, 'GET', '/v0/threads?labels=secret-x', { token: key });
  if (instance.status === 200) t.same(instance.body.threads, [], 'the instance-wide list keeps to the key\'s inboxes');
  else t.equal(instance.status, 403);
});

t.test('a shared label lists my visible mail only; hidden mail needs its permission', async (t) => {
  const messages = await api<{ messages: { message_id: string }[] }>(svc.url, 'GET', `/v0/inboxes/${enc(MINE)}/messages?labels=shared-y`, { token: key });
  t.equal(messages.status, 200);
  t.same(messages.body.messages.map((m) => m.message_id), [`<m2-${MINE}>`], 'mine, not spam, not theirs');
  const threads = await api<{ threads: { inbox_id: string }[] }>(svc.url, 'GET', `/v0/inboxes/${enc(MINE)}/threads?labels=shared-y`, { token: key });
  t.same(threads.body.threads.map((th) => th.inbox_id), [MINE]);
  const spam = await api(svc.url, 'GET', `/v0/inboxes/${enc(MINE)}/messages?labels=shared-y&include_spam=true`, { token: key });
  t.equal(spam.status, 403, 'asking for spam without label_spam_read is refused');
});

t.test("the owner's thread list over chosen inboxes lists only theirs", async (t) => {
  const res = await api<{ threads: { inbox_id: string }[] }>(svc.url, 'GET', `/v0/owner/mail/threads?inbox_ids=${enc(MINE)}&labels=shared-y`, { token: svc.ownerToken });
  t.equal(res.status, 200, res.text);
  t.same([...new Set(res.body.threads.map((th) => th.inbox_id))], [MINE]);
  const both = await api<{ threads: { inbox_id: string }[] }>(svc.url, 'GET', `/v0/owner/mail/threads?inbox_ids=${enc(MINE)}&inbox_ids=${enc(THEIRS)}&labels=shared-y`, { token: svc.ownerToken });
  t.same(new Set(both.body.threads.map((th) => th.inbox_id)), new Set([MINE, THEIRS]), 'both, in one query');
});
