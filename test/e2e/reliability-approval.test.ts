/**
 * kill -9 of the home at a seeded random moment during owner draft approvals (issue 10 item 2),
 * then a restart. The edge runs in this test process (as it would on a VPS, it survives the
 * home), relaying to a real SMTP sink through loopback DNS (the rig of reliability-crash.test.ts).
 * After the restart, through REST: each draft ends sent exactly once, or is still approvable and sends once when approved again
 * (same idempotency key) — never twice.
 * Replay a failing run with SVC_FUZZ_SEED=<seed>; the kill moments come from it.
 */
import t from 'tap';
import { api, startSvc } from '../helpers/svc.js';
import { createApiKey } from '../helpers/seed.js';
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

t.test('kill -9 during draft approvals: each draft ends sent exactly once or stays approvable, never sent twice', async (t) => {
  const { svc, inbox } = await rig.pairedHome(t, 'approver');
  const agent = (await createApiKey(svc, { permissions: ['message_send', 'message_read', 'draft_read'], inboxIds: [inbox], sendPolicy: 'approval' })).secret;
  const drafts: string[] = [];
  for (let i = 0; i < 8; i++) {
    const res = await api<{ draft_id: string; code: string }>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token: agent, body: { to: `approve${i}@remote.test`, subject: `approval ${i}`, text: 'x' } });
    t.equal(res.body.code, 'approval_required');
    drafts.push(res.body.draft_id);
  }
  const killAt = rng.int(0, 400);
  t.comment(`seed ${SEED}: kill after ${killAt} ms of approvals`);
  const approvals = Promise.all(
    drafts.map((id) =>
      api(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/drafts/${id}/approve`, { token: svc.ownerToken, headers: { 'idempotency-key': `approve-${id}` } }).then(
        (r) => r.status,
        () => 0,
      ),
    ),
  );
  await killAfter(svc, killAt);
  const statuses = await approvals;
  t.comment(`approvals answered before the kill: ${statuses.filter((s) => s === 200).length} of ${drafts.length}`);
  const second = await startSvc({ home: svc.home, init: false });
  t.teardown(() => second.stop());
  let reapproved = 0;
  for (const id of drafts) {
    const draft = (await api<{ state: string; message_id: string | null }>(second.url, 'GET', `/v0/inboxes/${enc(inbox)}/drafts/${id}`, { token: second.ownerToken })).body;
    t.ok(['pending_approval', 'scheduled', 'sending', 'sent'].includes(draft.state), `${id}: ${draft.state} after the restart`);
    // Approving again (the owner retrying, same key) must never send a second copy.
    const again = await api<{ message_id: string }>(second.url, 'POST', `/v0/inboxes/${enc(inbox)}/drafts/${id}/approve`, { token: second.ownerToken, headers: { 'idempotency-key': `approve-${id}` } });
    t.equal(again.status, 200, `${id}: approve after the restart → ${again.text.slice(0, 120)}`);
    if (draft.message_id) t.equal(again.body.message_id, draft.message_id, 'the same message, not a new one');
    if (draft.state === 'pending_approval') reapproved++;
  }
  t.comment(`${reapproved} drafts were still waiting for approval after the restart`);
  const messageIds = await until('every draft sent', async () => {
    const all = await Promise.all(drafts.map(async (id) => (await api<{ state: string; message_id: string }>(second.url, 'GET', `/v0/inboxes/${enc(inbox)}/drafts/${id}`, { token: second.ownerToken })).body));
    return all.every((d) => d.state === 'sent') ? all.map((d) => d.message_id) : undefined;
  });
  await until('every approved message at the sink', async () => (messageIds.every((id) => rig.sinkCopies().has(id)) ? true : undefined), 20_000);
  await sleep(1_000);
  const copies = rig.sinkCopies();
  t.same(messageIds.map((id) => copies.get(id)), messageIds.map(() => 1), 'each approved draft reached the sink exactly once');
});
