/**
 * Received mail under load (issue 17 §1): thousands of messages between local inboxes through the
 * local edge while every loop writes at once — the outbox (sends), delivery reports (the local
 * edge reports `delivered`), webhooks (a local receiver), scheduled drafts — and owner API writes
 * (label changes, webhook creation) run beside them. Every message must be stored exactly once in
 * its recipient inbox, nothing may be quarantined, and no API write may answer 5xx.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';

/** Enough sends that several loops overlap on every commit, small enough for about a minute on 2 cores. */
const SENDS = 2_000;
const SCHEDULED_DRAFTS = 40;
const INBOXES = 8;
const SENDERS_AT_ONCE = 8;
/** Bounds every wait in this file (the whole run, not a speed assertion). */
const DEADLINE_MS = 150_000;

const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const RUN = `L${Date.now().toString(36)}`;

t.test('thousands of local messages while every loop writes: each stored once, none quarantined, no 5xx', async (t) => {
  const dns = await startLoopbackDns({});
  t.teardown(() => dns.close());
  const svc: RunningSvc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  t.teardown(() => svc.stop());
  const owner = { token: svc.ownerToken };
  const end = Date.now() + DEADLINE_MS;

  const writeStatuses: number[] = [];
  /** Every API write goes through here, so any 5xx is counted. */
  const write = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => {
    const res = await api<T>(svc.url, method, path, { ...owner, body });
    writeStatuses.push(res.status);
    return res;
  };

  const hooks = { received: 0 };
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hooks.received++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  t.teardown(() => receiver.close());
  const hookUrl = (n: number) => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook/${n}`;
  t.equal((await write('POST', '/v0/webhooks', { url: hookUrl(0), event_types: ['message.received', 'message.delivered'] })).status, 200);

  const inboxes: string[] = [];
  for (let i = 0; i < INBOXES; i++) {
    const res = await write<{ inbox_id: string }>('POST', '/v0/inboxes', { username: `load${i}`, domain: 'load.test' });
    t.equal(res.status, 200);
    inboxes.push(res.body.inbox_id);
  }

  // Message n goes from inbox n % INBOXES to the next inbox; its subject token identifies it.
  const expected = new Map<string, string>();
  const sendOne = async (n: number) => {
    const from = inboxes[n % INBOXES];
    const to = inboxes[(n + 1) % INBOXES];
    const subject = `${RUN}-m${n}`;
    expected.set(subject, to);
    const res = await write('POST', `/v0/inboxes/${enc(from)}/messages/send`, { to, subject, text: `load message ${n}` });
    if (res.status !== 200) t.fail(`send ${n}: ${res.status} ${res.text}`);
  };

  let next = 0;
  const senders = Array.from({ length: SENDERS_AT_ONCE }, async () => {
    while (next < SENDS && Date.now() < end) await sendOne(next++);
  });

  const scheduled = (async () => {
    for (let k = 0; k < SCHEDULED_DRAFTS && Date.now() < end; k++) {
      const from = inboxes[k % INBOXES];
      const to = inboxes[(k + 3) % INBOXES];
      const subject = `${RUN}-d${k}`;
      expected.set(subject, to);
      const sendAt = new Date(Date.now() + 1_000).toISOString();
      const res = await write('POST', `/v0/inboxes/${enc(from)}/drafts`, { to: [to], subject, text: `scheduled ${k}`, send_at: sendAt });
      if (res.status !== 200) t.fail(`draft ${k}: ${res.status} ${res.text}`);
      await sleep(250);
    }
  })();

  // Owner writes beside the loops: label changes on mail as it lands, and new webhooks.
  let sending = true;
  let labelled = 0;
  let webhooksMade = 0;
  const apiWrites = (async () => {
    for (let round = 0; sending && Date.now() < end; round++) {
      const inbox = inboxes[round % INBOXES];
      const list = await api<{ messages: { message_id: string }[] }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages?labels=received&limit=5`, owner);
      for (const m of list.body.messages ?? []) {
        await write('PATCH', `/v0/inboxes/${enc(inbox)}/messages/${enc(m.message_id)}`, { add_labels: [`seen-${round % 3}`] });
        labelled++;
      }
      if (round % 5 === 0) {
        const hook = await write('POST', '/v0/webhooks', { url: hookUrl(round + 1), event_types: ['message.delivered'] });
        if (hook.status === 200) webhooksMade++;
      }
      await sleep(50);
    }
  })();

  await Promise.all(senders);
  await scheduled;
  t.equal(next, SENDS, 'every send was made within the bound');

  // Wait (bounded) until every recipient inbox holds what was sent to it, then count by token.
  const receivedSubjects = async () => {
    const subjects: string[] = [];
    for (const inbox of inboxes) {
      let token: string | undefined;
      do {
        const page = await api<{ messages: { subject: string }[]; next_page_token?: string }>(
          svc.url,
          'GET',
          `/v0/inboxes/${enc(inbox)}/messages?labels=received&limit=100${token ? `&page_token=${enc(token)}` : ''}`,
          owner,
        );
        for (const m of page.body.messages) if (m.subject?.startsWith(`${RUN}-`)) subjects.push(`${inbox} ${m.subject}`);
        token = page.body.next_page_token ?? undefined;
      } while (token);
    }
    return subjects;
  };
  let subjects: string[] = [];
  while (Date.now() < end) {
    subjects = await receivedSubjects();
    if (subjects.length >= expected.size) break;
    await sleep(1_000);
  }
  sending = false;
  await apiWrites;

  const seen = new Map<string, number>();
  for (const s of subjects) seen.set(s, (seen.get(s) ?? 0) + 1);
  const missing = [...expected].filter(([subject, to]) => !seen.has(`${to} ${subject}`));
  const duplicated = [...seen].filter(([, n]) => n > 1);
  const misrouted = [...seen.keys()].filter((k) => {
    const [inbox, subject] = k.split(' ');
    return expected.get(subject) !== inbox;
  });
  t.equal(expected.size, SENDS + SCHEDULED_DRAFTS);
  t.same(missing.slice(0, 5), [], `every message reached its recipient (${missing.length} missing)`);
  t.same(duplicated.slice(0, 5), [], 'none stored twice');
  t.same(misrouted.slice(0, 5), [], 'none stored in another inbox');

  const quarantine = await api<{ items: unknown[]; total: number }>(svc.url, 'GET', '/v0/owner/quarantine', owner);
  t.same([quarantine.body.items.length, quarantine.body.total], [0, 0], 'nothing quarantined');
  t.same(writeStatuses.filter((s) => s >= 500), [], `no 5xx among ${writeStatuses.length} API writes`);
  t.ok(labelled > 0 && webhooksMade > 0, `owner writes ran beside the loops (${labelled} label changes, ${webhooksMade} webhooks)`);
  t.ok(hooks.received > 0, 'webhooks were delivered during the run');
});
