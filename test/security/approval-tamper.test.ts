/**
 * Issue 16 finding 4: approval binds content. An approval-policy agent cannot change a draft
 * while it waits for the owner (PATCH is `409 conflict`, no event, nothing stored), a draft send
 * by the agent cannot skip approval, and the owner's approve applies to the version the owner
 * read (`expected_updated_at`; a stale one is `409 conflict`, and an edit racing the approve
 * makes the approve fail rather than send either version unseen). What reaches the SMTP sink
 * is exactly what the owner approved.
 */
import t from 'tap';
import type { Db } from '../../src/db/open.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { subscribe, type EventStream } from '../helpers/events.js';
import { startSink, type Sink } from '../helpers/sink.js';

interface DraftBody {
  draft_id: string;
  to: string[] | null;
  bcc: string[] | null;
  text: string | null;
  subject: string | null;
  state: string;
  send_at: string | null;
  labels: string[];
  attachments: { attachment_id: string; filename: string | null }[];
  updated_at: string;
}
interface ErrorBody {
  code: string;
  draft_id?: string;
  updated_at?: string;
}

const enc = encodeURIComponent;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const ROUNDS = 6;

let svc: RunningSvc;
let db: Db;
let sink: Sink;
let events: EventStream;
let inbox: string;
let agent: string;
let direct: string;

t.before(async () => {
  svc = await startSvc();
  db = openHomeDb(svc.home);
  sink = await startSink();
  const transport = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { smtp: { host: '127.0.0.1', port: sink.port } } });
  if (transport.status !== 200) throw new Error(`transport: ${transport.status} ${transport.text}`);
  inbox = await createInbox(svc, 'careful@tamper.test');
  const everything = ['message_send', 'message_read', 'draft_read', 'draft_create', 'draft_update', 'draft_delete', 'draft_send'];
  agent = (await createApiKey(svc, { permissions: everything, sendPolicy: 'approval' })).secret;
  direct = (await createApiKey(svc, { permissions: everything, sendPolicy: 'direct' })).secret;
  events = await subscribe(svc.url, svc.ownerToken);
});
t.teardown(async () => {
  events?.close();
  db?.close();
  await svc?.stop();
  await sink?.close();
});

const draftPath = (draftId: string, rest = '') => `/v0/inboxes/${enc(inbox)}/drafts/${enc(draftId)}${rest}`;
const read = async (draftId: string) => (await api<DraftBody>(svc.url, 'GET', draftPath(draftId), { token: svc.ownerToken })).body;
const approve = (draftId: string, body: Record<string, unknown>) => api<ErrorBody & { message_id?: string }>(svc.url, 'POST', draftPath(draftId, '/approve'), { token: svc.ownerToken, body });
const sunk = (marker: string) => sink.messages.filter((m) => m.raw.toString('utf8').includes(marker));
const eventsFor = (type: string, draftId: string) => events.all(type).filter((e) => (e.draft as { draft_id: string }).draft_id === draftId);

/** What an approval-policy agent asks to send: it becomes a draft awaiting the owner. */
async function agentSend(marker: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, {
    token: agent,
    body: { to: 'ann@example.net', subject: `Report ${marker}`, text: `Approved body ${marker}`, ...extra },
  });
  if (res.status !== 403 || res.body.code !== 'approval_required' || !res.body.draft_id) throw new Error(`approval send: ${res.status} ${res.text}`);
  await events.next('draft.approval_required', (e) => (e.draft as { draft_id: string }).draft_id === res.body.draft_id);
  return res.body.draft_id;
}

/** Polls the sink for a marker until it shows up (bounded). */
async function arrived(marker: string): Promise<Buffer> {
  for (let i = 0; i < 300; i++) {
    const found = sunk(marker);
    if (found.length) return found[0].raw;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing with ${marker} reached the sink`);
}

t.test('an approval-policy agent cannot change a pending draft: recipients, body, attachments, schedule, labels', async (t) => {
  const draftId = await agentSend('tamper-1', { attachments: [{ filename: 'numbers.txt', content: b64('42') }] });
  const seen = await read(draftId);
  t.equal(seen.state, 'pending_approval');
  const tampering: [string, Record<string, unknown>][] = [
    ['recipient + body', { to: ['attacker@evil.example'], text: 'Wire the money to account 666.' }],
    ['hidden recipient', { bcc: ['attacker@evil.example'] }],
    ['subject', { subject: 'Something else' }],
    ['html', { html: '<p>Wire the money</p>' }],
    ['added attachment', { add_attachments: [{ filename: 'payload.exe', content: b64('MZ') }] }],
    ['removed attachment', { remove_attachments: [seen.attachments[0].attachment_id] }],
    ['schedule', { send_at: '2030-01-01T00:00:00Z' }],
    ['schedule cancelled', { send_at: null }],
    ['labels', { add_labels: ['innocent'] }],
  ];
  for (const [what, body] of tampering) {
    const res = await api<ErrorBody>(svc.url, 'PATCH', draftPath(draftId), { token: agent, body });
    t.equal(res.status, 409, `${what}: ${res.text}`);
    t.equal(res.body.code, 'conflict', what);
  }
  const after = await read(draftId);
  t.same(after, seen, 'the draft is exactly as the owner read it, version included');

  const send = await api<ErrorBody>(svc.url, 'POST', draftPath(draftId, '/send'), { token: agent, body: {} });
  t.equal(send.status, 403, 'a draft send by the agent does not skip approval');
  t.equal(send.body.code, 'approval_required');
  t.equal((await read(draftId)).updated_at, seen.updated_at, 'asking again does not move the version the owner is about to approve');

  const approved = await approve(draftId, { expected_updated_at: seen.updated_at });
  t.equal(approved.status, 200, approved.text);
  const raw = (await arrived('tamper-1')).toString('utf8');
  t.equal(sunk('tamper-1').length, 1, 'one message');
  const message = sink.messages.find((m) => m.raw.toString('utf8').includes('tamper-1'))!;
  t.same(message.to, ['ann@example.net'], 'sent to the recipient the owner saw, nobody else');
  t.match(raw, /Approved body tamper-1/);
  t.match(raw, /numbers\.txt/);
  t.notMatch(raw, /Wire the money|evil\.example|payload\.exe/);
  t.equal(eventsFor('draft.approval_required', draftId).length, 1, 'the refused edits and the repeated send asked nothing new');
});

t.test('the owner approves the version read: a later edit makes that approve 409, and nothing is sent', async (t) => {
  const draftId = await agentSend('tamper-2');
  const seen = await read(draftId);
  // A direct credential may edit a pending draft (it could send anything itself); the owner's
  // approve of the older version must still not send the newer one.
  const edit = await api<DraftBody>(svc.url, 'PATCH', draftPath(draftId), { token: direct, body: { to: ['someone-else@example.org'], text: 'Edited body tamper-2' } });
  t.equal(edit.status, 200, edit.text);
  t.ok(edit.body.updated_at > seen.updated_at, 'the edit moved the version forward');

  const stale = await approve(draftId, { expected_updated_at: seen.updated_at });
  t.equal(stale.status, 409, stale.text);
  t.equal(stale.body.code, 'conflict');
  t.equal(stale.body.updated_at, edit.body.updated_at, 'the answer names the current version');
  t.equal((await read(draftId)).state, 'pending_approval', 'still waiting');
  const garbage = await approve(draftId, { expected_updated_at: 'not a version' });
  t.equal(garbage.status, 409, 'any other value is stale too');
  t.equal(sunk('tamper-2').length, 0, 'nothing was sent');

  const current = await approve(draftId, { expected_updated_at: edit.body.updated_at });
  t.equal(current.status, 200, current.text);
  await arrived('tamper-2');
  const message = sunk('tamper-2')[0];
  t.same(message.to, ['someone-else@example.org']);
  t.match(message.raw.toString('utf8'), /Edited body tamper-2/, 'the version approved is the version sent');
});

t.test('after an approval to send later, an agent edit asks again and the old approval cannot be replayed', async (t) => {
  const later = new Date(Date.now() + 3600_000).toISOString();
  const created = await api<DraftBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/drafts`, {
    token: agent,
    body: { to: ['ann@example.net'], subject: 'Report tamper-3', text: 'Approved body tamper-3', send_at: later },
  });
  t.equal(created.body.state, 'pending_approval');
  const scheduled = await approve(created.body.draft_id, { expected_updated_at: created.body.updated_at });
  t.equal(scheduled.status, 200, scheduled.text);
  const approvedVersion = (scheduled.body as unknown as DraftBody).updated_at;
  t.equal((scheduled.body as unknown as DraftBody).state, 'scheduled');

  const edit = await api<DraftBody>(svc.url, 'PATCH', draftPath(created.body.draft_id), { token: agent, body: { to: ['attacker@evil.example'], send_at: new Date(Date.now() - 1000).toISOString() } });
  t.equal(edit.status, 200, 'a scheduled draft may be edited, which withdraws the approval');
  t.equal(edit.body.state, 'pending_approval');
  for (let i = 0; i < 200 && eventsFor('draft.approval_required', created.body.draft_id).length < 2; i++) await new Promise((r) => setTimeout(r, 25));
  t.equal(eventsFor('draft.approval_required', created.body.draft_id).length, 2, 'the owner is asked again');

  for (const version of [created.body.updated_at, approvedVersion]) {
    const replayed = await approve(created.body.draft_id, { expected_updated_at: version });
    t.equal(replayed.status, 409, `approving an older version (${version}) is refused`);
  }
  t.equal(sunk('tamper-3').length, 0, 'nothing was sent to the attacker');
});

t.test('race: agent and direct edits against the owner approve, round after round', async (t) => {
  for (let round = 0; round < ROUNDS; round++) {
    const marker = `race-${round}`;
    const draftId = await agentSend(marker);
    const seen = await read(draftId);
    const editor = round % 2 === 0 ? agent : direct;
    const [edit, approved] = await Promise.all([
      api<DraftBody>(svc.url, 'PATCH', draftPath(draftId), { token: editor, body: { to: ['attacker@evil.example'], text: `Tampered body ${marker}` } }),
      approve(draftId, { expected_updated_at: seen.updated_at }),
    ]);
    const who = editor === agent ? 'approval agent' : 'direct key';
    if (editor === agent) t.equal(edit.status, 409, `${marker}: the approval agent's edit is refused whatever the order`);
    t.ok((edit.status === 200) !== (approved.status === 200), `${marker} (${who}): exactly one of edit (${edit.status}) and approve (${approved.status}) wins`);
    if (approved.status === 200) {
      const raw = (await arrived(marker)).toString('utf8');
      const message = sunk(marker)[0];
      t.same(message.to, ['ann@example.net'], `${marker}: sent as approved`);
      t.match(raw, new RegExp(`Approved body ${marker}`));
      t.notMatch(raw, /Tampered body/);
    } else {
      t.equal(approved.body.code, 'conflict', `${marker}: the approve lost to the edit`);
      t.equal((await read(draftId)).state, 'pending_approval', `${marker}: the edited draft waits for a new approval`);
    }
  }
  // Anything sent at all was sent as approved: no tampered message ever reached the sink.
  t.equal(sink.messages.filter((m) => /Tampered body|evil\.example/.test(m.raw.toString('utf8'))).length, 0);
});
