/**
 * kill -9 of the home at seeded random moments (issue 10 item 2), then a restart: during
 * ingest and during sends (draft approvals: reliability-approval.test.ts, same rig). The edge runs in this test process (as it
 * would on a VPS, it survives the home), relaying to a real SMTP sink through loopback DNS.
 * After the restart every state is explained through REST:
 * - ingest: every message the edge accepted is stored exactly once, and the edge buffer empties;
 * - send: every accepted send reaches the sink at most once; `sent` ones exactly once, the rest
 *   are `send_unknown` or `failed` with a reason — never queued forever, never twice;
 * Replay a failing run with SVC_FUZZ_SEED=<seed>; the kill moments come from it.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { killAfter, sleep, startCrashRig, type CrashRig } from '../helpers/crash-rig.js';
import { until } from '../helpers/until.js';
import { Rng, fuzzSeed } from '../helpers/fuzz.js';

const SEED = fuzzSeed(9);
const enc = encodeURIComponent;

const rng = new Rng(SEED);
let rig: CrashRig;
t.before(async () => {
  rig = await startCrashRig(t);
});

interface Stored {
  message_id: string;
  subject?: string;
  labels: string[];
  send_status?: string | null;
  send_reason?: string | null;
}

async function listAll(svc: RunningSvc, inbox: string): Promise<Stored[]> {
  const res = await api<{ messages: Stored[] }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages?limit=100&include_spam=true&include_blocked=true&include_unauthenticated=true`, { token: svc.ownerToken });
  if (res.status !== 200) throw new Error(res.text);
  return res.body.messages;
}

async function sendSmtp(subject: string, messageId: string, to: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await nodemailer.createTransport({ host: '127.0.0.1', port: rig.smtpPort, secure: false, ignoreTLS: true }).sendMail({ from: 'peer@sender.test', to, subject, text: 'x', messageId });
      return;
    } catch (err) {
      // 451 until the home pushed routing; 550 while the edge still has a previous home's routing.
      if (![451, 550].includes((err as { responseCode?: number }).responseCode ?? 0) || Date.now() > deadline) throw err;
      await sleep(200);
    }
  }
}

t.test('kill -9 during ingest: every accepted message is stored exactly once after the restart', async (t) => {
  const { svc, inbox } = await rig.pairedHome(t, 'ingest');
  const count = 30;
  await sendSmtp('routing is pushed', '<warmup@sender.test>', inbox);
  const killAt = rng.int(50, 800);
  t.comment(`seed ${SEED}: kill after ${killAt} ms of mail flow`);
  const killed = killAfter(svc, killAt);
  // The edge keeps accepting while the home is down; the sender never sees the crash.
  for (let i = 0; i < count; i++) await sendSmtp(`ingest ${i}`, `<ingest-${i}@sender.test>`, inbox);
  await killed;
  t.equal(svc.proc.signalCode, 'SIGKILL');
  const second = await startSvc({ home: svc.home, init: false });
  t.teardown(() => second.stop());
  const stored = await until('all mail stored', async () => {
    const list = await listAll(second, inbox);
    return list.length >= count + 1 ? list : undefined;
  });
  const ids = stored.map((m) => m.message_id).sort();
  t.same(ids, ['<warmup@sender.test>', ...Array.from({ length: count }, (_, i) => `<ingest-${i}@sender.test>`)].sort(), 'each accepted message exactly once');
  await until('edge buffer empty', async () => (fs.readdirSync(path.join(rig.edgeDir, 'objects')).some((f) => f.endsWith('.jwe')) ? undefined : true), 10_000);
  const quarantine = await api<{ items: unknown[] }>(second.url, 'GET', '/v0/owner/quarantine', { token: second.ownerToken });
  t.same(quarantine.body.items, [], 'nothing quarantined');
});

t.test('kill -9 during sends: each accepted send is at the sink at most once and ends sent, send_unknown or failed with a reason', async (t) => {
  const { svc, inbox } = await rig.pairedHome(t, 'sender');
  const count = 20;
  const killAt = rng.int(0, 400);
  t.comment(`seed ${SEED}: kill ${killAt} ms after the first send was answered`);
  const accepted: string[] = [];
  let firstAnswered = () => {};
  const answered = new Promise<void>((resolve) => (firstAnswered = resolve));
  let next = 0;
  // Four senders at once, so several messages are mid-handover when the kill lands.
  const sends = Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < count) {
        const i = next++;
        try {
          const res = await api<{ message_id: string }>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token: svc.ownerToken, body: { to: `r${i}@remote.test`, subject: `send ${i}`, text: 'x' } });
          if (res.status === 200) accepted.push(res.body.message_id);
          firstAnswered();
        } catch {
          return; // the home is gone: this send has no answer, the restart tells what became of it
        }
      }
    }),
  );
  await answered;
  await killAfter(svc, killAt);
  await sends;
  const second = await startSvc({ home: svc.home, init: false });
  t.teardown(() => second.stop());
  const final = new Set(['sent', 'delivered', 'send_unknown', 'failed', 'bounced', 'rejected']);
  const settled = await until('every send settled', async () => {
    const list = (await listAll(second, inbox)).filter((m) => m.subject?.startsWith('send '));
    const full = await Promise.all(list.map(async (m) => (await api<Stored>(second.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(m.message_id)}`, { token: second.ownerToken })).body));
    return full.every((m) => final.has(String(m.send_status))) ? full : undefined;
  });
  t.comment(`${accepted.length} sends answered before the kill, ${settled.length} stored`);
  const storedIds = new Set(settled.map((m) => m.message_id));
  t.same(accepted.filter((id) => !storedIds.has(id)), [], 'every answered send was kept');
  await sleep(1_000); // deliveries already handed to the edge finish
  const copies = rig.sinkCopies();
  for (const m of settled) {
    const n = copies.get(m.message_id) ?? 0;
    t.ok(n <= 1, `${m.message_id}: ${n} copies at the sink`);
    if (m.send_status === 'sent' || m.send_status === 'delivered') {
      const delivered = await until(`${m.message_id} at the sink`, async () => ((rig.sinkCopies().get(m.message_id) ?? 0) === 1 ? true : undefined), 15_000).catch(() => false);
      t.ok(delivered, `${m.message_id} is ${m.send_status} and at the sink once`);
    } else {
      t.match(m.send_reason, /\S/, `${m.message_id} is ${m.send_status} with a reason`);
    }
  }
});
