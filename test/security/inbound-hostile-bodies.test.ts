/**
 * A hostile body can slow only its own message (issue 16, finding 3). Mail built to make reply
 * extraction quadratic (a long run of spaces before the last word, `<` without `>`, a long quote
 * chain, several MB of them) arrives over real SMTP at `svc serve --local-edge` while API writes
 * run in parallel. Every write answers 2xx, and every hostile message arrives in its inbox. Before
 * the fix, extraction ran inside the write transaction: one 250 KB mail made every API write
 * answer 503 for many seconds.
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';

const INBOX = 'target@local.test';
/** Bounds the whole exchange; a healthy service needs a small fraction of it. */
const DEADLINE_MS = 150_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const HOSTILE: { subject: string; text?: string; html?: string }[] = [
  { subject: 'spaces before the last word', text: `Hello.\n${`${' '.repeat(900)}\n`.repeat(300)}x` },
  { subject: 'tags that never close', text: 'See the HTML part.', html: `<p>Hello.</p>${'<a '.repeat(100_000)}` },
  { subject: 'quotes that never close', text: 'See the HTML part.', html: `<p>Hello.</p>${'<a title="'.repeat(30_000)}` },
  { subject: 'a long quote chain', text: `My answer.\n${`${'> '.repeat(400)}q\n`.repeat(400)}` },
  {
    subject: 'several megabytes of it',
    text: `Hello.\n${`${' '.repeat(900)}\n`.repeat(1_500)}x\nOn ${'wrote '.repeat(150_000)}\n${`${'> '.repeat(400)}q\n`.repeat(1_500)}`,
    html: `<p>Hello.</p>${'<!--'.repeat(100_000)}${'<div>'.repeat(100_000)}${'<a '.repeat(300_000)}`,
  },
];

async function messages(svc: RunningSvc): Promise<{ message_id: string; subject: string }[]> {
  const res = await api<{ messages: { message_id: string; subject: string }[] }>(svc.url, 'GET', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages?limit=100`, { token: svc.ownerToken });
  return res.body.messages;
}

t.test('hostile bodies do not stall API writes, and they arrive', async (t) => {
  const dns = await startLoopbackDns({});
  t.teardown(() => dns.close());
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  t.teardown(() => svc.stop());
  const port = Number(String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp).split(':')[1]);
  t.equal((await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'target', domain: 'local.test' } })).status, 200);
  const smtp = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
  t.teardown(() => smtp.close());
  const deadline = Date.now() + DEADLINE_MS;

  // The first send waits out the 451s until the new inbox's routing has reached the edge.
  for (;;) {
    try {
      await smtp.sendMail({ from: 'someone@elsewhere.test', to: INBOX, subject: 'warm-up', text: 'Hi.' });
      break;
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
      await sleep(200);
    }
  }

  // API writes, one after another, for as long as the hostile mail is being sent and committed.
  const statuses: number[] = [];
  let done = false;
  const writer = (async () => {
    for (let i = 0; !done && Date.now() < deadline; i++) {
      const created = await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: `parallel-${i}`, domain: 'local.test' } });
      statuses.push(created.status);
      if (created.status === 200) statuses.push((await api(svc.url, 'DELETE', `/v0/inboxes/${encodeURIComponent(created.body.inbox_id)}`, { token: svc.ownerToken })).status);
    }
  })();

  try {
    for (const mail of HOSTILE) {
      const info = await smtp.sendMail({ from: 'someone@elsewhere.test', to: INBOX, ...mail });
      t.match(info.response, /^250/, `"${mail.subject}" is accepted`);
    }
    const wanted = ['warm-up', ...HOSTILE.map((m) => m.subject)];
    let arrived: string[] = [];
    while (Date.now() < deadline) {
      arrived = (await messages(svc)).map((m) => m.subject);
      if (wanted.every((s) => arrived.includes(s))) break;
      await sleep(250);
    }
    for (const subject of wanted) t.ok(arrived.includes(subject), `"${subject}" arrived in the inbox`);
  } finally {
    done = true;
    await writer;
  }

  t.ok(statuses.length > 0, `${statuses.length} API writes were made while the mail came in`);
  t.same(
    statuses.filter((s) => s < 200 || s > 299),
    [],
    'every parallel write answered 2xx (no 503)',
  );

  const spaces = (await messages(svc)).find((m) => m.subject === 'spaces before the last word');
  if (spaces) {
    const full = await api<{ text: string; extracted_text: string }>(svc.url, 'GET', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages/${encodeURIComponent(spaces.message_id)}`, {
      token: svc.ownerToken,
    });
    t.match(full.body.extracted_text, /^Hello\.\n/, 'the hostile message is stored with its extracted text');
    t.match(full.body.text, /x\s*$/, 'and its full text');
  }
});
