/**
 * The `svc` CLI against a real service with the local edge (issue 9): inboxes, send (stdin body,
 * file attachment), messages and threads (read, raw export, attachment download, labels), reply,
 * forward, drafts and approval, api-keys, domains (apply with a progress display until failed),
 * status; owner mode through --home and agent mode through SVC_URL + SVC_API_KEY, with the exit
 * codes of real causes (4, 9, 1).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { agentEnv, svcCli } from './cli-run.js';
import { until } from '../helpers/until.js';

let dns: LoopbackDns;
let svc: RunningSvc;
let owner: string[];
const dir = tempDir('svc-cli-');
const attachment = path.join(dir, 'notes.txt');

t.before(async () => {
  dns = await startLoopbackDns({});
  svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  owner = ['--home', svc.home];
  fs.writeFileSync(attachment, 'attached notes\n');
});
t.teardown(async () => {
  await svc.stop();
  await dns.close();
});

interface Msg {
  message_id: string;
  thread_id: string;
  subject: string;
  labels: string[];
  text: string;
  attachments: { attachment_id: string; filename: string }[];
}

/** The first message in `inbox` with this subject, once it arrived. */
const arrived = (inbox: string, subject: string) =>
  until(`"${subject}" in ${inbox}`, async () => {
    const run = await svcCli(['messages', 'list', '--inbox', inbox, '--json', ...owner]);
    return run.json<{ messages: Msg[] }>().messages.find((m) => m.subject === subject);
  });

t.test('inboxes: create, list, show, pause and resume as the owner', async (t) => {
  const alice = await svcCli(['inboxes', 'create', 'alice@cli.test', '--display-name', 'Alice', ...owner]);
  t.equal(alice.code, 0, alice.stderr);
  t.match(alice.stdout, /^Created alice@cli\.test\.\ninbox: +alice@cli\.test\n/);
  const bob = await svcCli(['inboxes', 'create', 'bob@cli.test', '--json', ...owner]);
  t.match(bob.json(), { inbox_id: 'bob@cli.test', status: 'active' });
  const list = await svcCli(['inboxes', 'list', '--json', ...owner]);
  t.same(list.json<{ inboxes: { inbox_id: string }[] }>().inboxes.map((i) => i.inbox_id).sort(), ['alice@cli.test', 'bob@cli.test']);
  const table = await svcCli(['inboxes', 'list', ...owner]);
  t.match(table.stdout, /^INBOX +STATUS +DISPLAY NAME +CREATED\n/);
  t.match(table.stdout, /alice@cli\.test +active +Alice/);
  t.match((await svcCli(['inboxes', 'pause', 'alice@cli.test', '--json', ...owner])).json(), { status: 'paused' });
  const paused = await svcCli(['send', '--inbox', 'alice@cli.test', '--to', 'bob@cli.test', '--text', 'x', '--json', ...owner]);
  t.equal(paused.code, 1, 'a paused inbox cannot send');
  t.equal(paused.error().error.code, 'inbox_paused');
  t.match((await svcCli(['inboxes', 'resume', 'alice@cli.test', '--json', ...owner])).json(), { status: 'active' });
  const missing = await svcCli(['inboxes', 'show', 'nobody@cli.test', ...owner]);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^error \(not_found\): .*\nfix: /);
});

t.test('send takes the body from stdin and attaches a file; the other inbox receives it; read, raw export and attachment download', async (t) => {
  const sent = await svcCli(['send', '--inbox', 'alice@cli.test', '--to', 'bob@cli.test', '--subject', 'Quarterly notes', '--attach', attachment, '--json', ...owner], { input: 'Body from stdin\n' });
  t.equal(sent.code, 0, sent.stderr);
  t.match(sent.json(), { message_id: /^<.+>$/, thread_id: String });
  const got = await arrived('bob@cli.test', 'Quarterly notes');
  const show = await svcCli(['messages', 'show', got.message_id, '--inbox', 'bob@cli.test', '--json', ...owner]);
  const message = show.json<Msg>();
  t.equal(message.text.trim(), 'Body from stdin');
  t.equal(message.attachments[0].filename, 'notes.txt');
  const human = await svcCli(['messages', 'show', got.message_id, '--inbox', 'bob@cli.test', ...owner]);
  t.match(human.stdout, /from: +.*alice@cli\.test[\s\S]*attachment: .*notes\.txt[\s\S]*\n\nBody from stdin/);

  const file = path.join(dir, 'message.eml');
  const raw = await svcCli(['messages', 'raw', got.message_id, '--inbox', 'bob@cli.test', '--output', file, ...owner]);
  t.equal(raw.code, 0, raw.stderr);
  t.match(fs.readFileSync(file, 'utf8'), /^Subject: Quarterly notes\r?$/m, 'the original MIME was written to the file');
  t.equal(fs.statSync(file).mode & 0o777, 0o600, 'the export is private');
  const rawOut = await svcCli(['messages', 'raw', got.message_id, '--inbox', 'bob@cli.test', ...owner]);
  t.match(rawOut.stdout, /^Subject: Quarterly notes\r?$/m, 'or printed on stdout');
  const link = await svcCli(['messages', 'raw', got.message_id, '--inbox', 'bob@cli.test', '--json', ...owner]);
  t.match(link.json(), { download_url: /\/v0\/downloads\//, expires_at: String });

  const att = await svcCli(['messages', 'attachment', got.message_id, message.attachments[0].attachment_id, '--inbox', 'bob@cli.test', ...owner]);
  t.equal(att.stdout, 'attached notes\n', 'the attachment bytes');
});

t.test('messages wait: a stored match at once with --after, exit 2 with no_message at the timeout', async (t) => {
  const got = await arrived('bob@cli.test', 'Quarterly notes');
  const found = await svcCli(['messages', 'wait', '--inbox', 'bob@cli.test', '--after', '2000-01-01T00:00:00Z', '--subject', 'quarterly', '--timeout', '0', '--json', ...owner]);
  t.equal(found.code, 0, found.stderr);
  t.equal(found.json<Msg>().message_id, got.message_id);
  const none = await svcCli(['messages', 'wait', '--subject', 'never-sent', '--timeout', '1', '--json', ...owner]);
  t.equal(none.code, 2, 'exit 2: nothing came');
  t.equal(none.error().error.code, 'no_message');
  const bad = await svcCli(['messages', 'wait', '--timeout', '61', ...owner]);
  t.equal(bad.code, 1, 'a timeout over 60 s is refused');
});

t.test('metrics: event counts and usage as a table and JSON, live counts, bad input refused', async (t) => {
  await arrived('bob@cli.test', 'Quarterly notes');
  const events = await svcCli(['metrics', 'events', '--inbox', 'bob@cli.test', '--type', 'message.received', '--period', '3600', '--json', ...owner]);
  t.equal(events.code, 0, events.stderr);
  const received = events.json<Record<string, { count: number }[]>>()['message.received'];
  t.ok(received.reduce((n, b) => n + b.count, 0) >= 1, 'bob received mail');
  const table = await svcCli(['metrics', 'events', '--type', 'message.sent,message.received', '--period', '86400', ...owner]);
  t.equal(table.code, 0, table.stderr);
  t.match(table.stdout, /TIME\s+message\.received\s+message\.sent/, 'one column per type, in the API\'s order');
  t.match(table.stdout, /TOTAL/);
  const usage = await svcCli(['metrics', 'usage', '--inbox', 'bob@cli.test', '--type', 'message_count', '--descending', '--limit', '1', '--json', ...owner]);
  t.equal(usage.code, 0, usage.stderr);
  t.ok(usage.json<{ message_count: { value: number }[] }>().message_count[0].value >= 1);
  const counts = await svcCli(['metrics', 'counts', ...owner]);
  t.equal(counts.code, 0, counts.stderr);
  t.match(counts.stdout, /INBOX\s+UNREAD\s+AWAITING APPROVAL/);
  const bad = await svcCli(['metrics', 'events', '--start', 'yesterday', '--json', ...owner]);
  t.equal(bad.code, 1);
  t.equal(bad.error().error.code, 'validation_error');
});

t.test('threads: list, show and label; reply and forward from a file body', async (t) => {
  const got = await arrived('bob@cli.test', 'Quarterly notes');
  const list = await svcCli(['threads', 'list', '--inbox', 'bob@cli.test', '--label', 'unread', '--json', ...owner]);
  t.ok(list.json<{ threads: { thread_id: string }[] }>().threads.some((th) => th.thread_id === got.thread_id));
  const show = await svcCli(['threads', 'show', got.thread_id, ...owner]);
  t.match(show.stdout, /^thread: +\S+\ninbox: +bob@cli\.test\nsubject: +Quarterly notes/);
  const label = await svcCli(['threads', 'label', got.thread_id, '--remove', 'unread', '--add', 'done', '--json', ...owner]);
  t.equal(label.code, 0, label.stderr);
  t.ok(label.json<{ labels: string[] }>().labels.includes('done'));
  t.notOk(label.json<{ labels: string[] }>().labels.includes('unread'));
  const system = await svcCli(['messages', 'label', got.message_id, '--inbox', 'bob@cli.test', '--add', 'sent', ...owner]);
  t.equal(system.code, 1, 'system labels cannot be edited');
  t.match(system.stderr, /validation_error/);

  const body = path.join(dir, 'reply.txt');
  fs.writeFileSync(body, 'Thanks for the notes');
  const reply = await svcCli(['reply', got.message_id, '--inbox', 'bob@cli.test', '--text-file', body, '--json', ...owner]);
  t.equal(reply.code, 0, reply.stderr);
  const back = await arrived('alice@cli.test', 'Re: Quarterly notes');
  t.equal(back.thread_id === undefined, false);
  const fwd = await svcCli(['forward', got.message_id, '--inbox', 'bob@cli.test', '--to', 'alice@cli.test', '--text', 'FYI', ...owner]);
  t.equal(fwd.code, 0, fwd.stderr);
  t.match(fwd.stdout, /^Queued forward <.+>/);
  await arrived('alice@cli.test', 'Fwd: Quarterly notes');
});

t.test('URL attachments are not_supported (exit 9)', async (t) => {
  const run = await svcCli(['send', '--inbox', 'alice@cli.test', '--to', 'bob@cli.test', '--text', 'x', '--attach', 'https://example.com/file.pdf', '--json', ...owner]);
  t.equal(run.code, 9);
  t.match(run.error(), { error: { code: 'not_supported', message: String } });
});

t.test('resolve of a message that is not send_unknown is a conflict (exit 1)', async (t) => {
  const got = await arrived('bob@cli.test', 'Quarterly notes');
  const run = await svcCli(['resolve', got.message_id, 'sent', '--inbox', 'bob@cli.test', '--json', ...owner]);
  t.equal(run.code, 1);
  t.equal(run.error().error.code, 'conflict');
});

t.test('agent mode: a scoped key reads and sends as itself; a missing permission or an owner route exits 4', async (t) => {
  const created = await svcCli(['api-keys', 'create', '--name', 'cli agent', '--inbox', 'alice@cli.test', '--permissions', 'inbox_read,message_read,message_send', '--send-policy', 'direct', ...owner]);
  t.equal(created.code, 0, created.stderr);
  const secret = /^(svc_key_\S+)$/m.exec(created.stdout)?.[1];
  t.ok(secret, 'the secret is printed once');
  const env = agentEnv(svc.url, secret!);
  const inboxes = await svcCli(['inboxes', 'list', '--json'], { env });
  t.same(inboxes.json<{ inboxes: { inbox_id: string }[] }>().inboxes.map((i) => i.inbox_id), ['alice@cli.test'], 'only its scope');
  const sent = await svcCli(['send', '--to', 'bob@cli.test', '--subject', 'From the agent', '--text', 'hi', '--json'], { env });
  t.equal(sent.code, 0, sent.stderr);
  await arrived('bob@cli.test', 'From the agent');
  const list = await svcCli(['messages', 'list', '--json'], { env });
  t.equal(list.code, 0, 'the only inbox in scope is the default --inbox');

  const got = list.json<{ messages: Msg[] }>().messages[0];
  const del = await svcCli(['messages', 'delete', got.message_id, '--json'], { env });
  t.equal(del.code, 4, 'lacking message_delete');
  t.match(del.error(), { error: { code: 'missing_permission', fix: String } });
  const keys = await svcCli(['api-keys', 'list'], { env });
  t.equal(keys.code, 4, 'api-keys are owner only');
  t.match(keys.stderr, /^error \(missing_permission\): /);
  const both = await svcCli(['inboxes', 'list', ...owner], { env });
  t.equal(both.code, 1, '--home with agent variables is ambiguous');
  const half = await svcCli(['inboxes', 'list'], { env: { SVC_URL: svc.url } });
  t.equal(half.code, 1, 'agent mode needs both variables');
  const bad = await svcCli(['inboxes', 'list', '--json'], { env: agentEnv(svc.url, 'svc_key_unknown') });
  t.equal(bad.code, 1);
  t.equal(bad.error().error.code, 'unauthorized');
  const status = await svcCli(['status', '--json'], { env });
  t.match(status.json(), { mode: 'agent', url: svc.url, service: { running: true }, counts: { inboxes: { count: 1 } } });
});

t.test('approval policy: the agent send exits 1 with approval_required and the draft id; the owner approves and rejects', async (t) => {
  const created = await svcCli(['api-keys', 'create', '--inbox', 'alice@cli.test', '--permissions', 'all', '--send-policy', 'approval', '--json', ...owner]);
  const key = created.json<{ api_key: string; api_key_id: string }>();
  const env = agentEnv(svc.url, key.api_key);
  const held = await svcCli(['send', '--to', 'bob@cli.test', '--subject', 'Needs approval', '--text', 'please', '--json'], { env });
  t.equal(held.code, 1);
  const error = held.error().error;
  t.equal(error.code, 'approval_required');
  t.type(error.draft_id, 'string');
  const human = await svcCli(['send', '--to', 'bob@cli.test', '--subject', 'Rejected one', '--text', 'no'], { env });
  t.match(human.stderr, /^error \(approval_required\): .*\ndraft_id: (\S+)\nfix: /);
  const rejectId = /draft_id: (\S+)/.exec(human.stderr)![1];

  const pending = await svcCli(['drafts', 'list', '--status', 'pending_approval', '--json', ...owner]);
  t.same(pending.json<{ drafts: { draft_id: string }[] }>().drafts.map((d) => d.draft_id).sort(), [error.draft_id, rejectId].sort());
  const approve = await svcCli(['drafts', 'approve', error.draft_id as string, '--json', ...owner]);
  t.equal(approve.code, 0, approve.stderr);
  t.match(approve.json(), { message_id: String, thread_id: String });
  await arrived('bob@cli.test', 'Needs approval');
  const reject = await svcCli(['drafts', 'reject', rejectId, '--reason', 'Not now', '--json', ...owner]);
  t.match(reject.json(), { draft_id: rejectId, state: 'rejected', send_status: 'failed', send_reason: 'Not now' });
  // The human output shows svc's own state, also where the SDK's send_status has no name for it.
  const shown = await svcCli(['drafts', 'show', rejectId, ...owner]);
  t.match(shown.stdout, /status: +rejected \(Not now\)/);
  const plainDraft = await svcCli(['drafts', 'create', '--inbox', 'alice@cli.test', '--subject', 'Plain', '--text', 'x', ...owner]);
  t.match(plainDraft.stdout, /^Created draft \S+ \(draft\)\.\n/);
  t.match(plainDraft.stdout, /status: +draft\n/);
  const agentApprove = await svcCli(['drafts', 'approve', rejectId], { env });
  t.equal(agentApprove.code, 4, 'approving is for the owner');

  const draft = await svcCli(['drafts', 'create', '--inbox', 'alice@cli.test', '--to', 'bob@cli.test', '--subject', 'Drafted', '--text', 'later', '--json', ...owner]);
  const id = draft.json<{ draft_id: string }>().draft_id;
  const send = await svcCli(['drafts', 'send', id, '--json', ...owner]);
  t.equal(send.code, 0, send.stderr);
  await arrived('bob@cli.test', 'Drafted');
  const revoke = await svcCli(['api-keys', 'delete', key.api_key_id, ...owner]);
  t.equal(revoke.code, 0);
  t.equal((await svcCli(['inboxes', 'list'], { env })).code, 1, 'a revoked key is refused');
});

t.test('domains: zone file to stdout, apply follows the progress until failed (exit 1), teardown and delete', async (t) => {
  const add = await svcCli(['domains', 'add', 'cli.test', '--json', ...owner]);
  t.equal(add.code, 0, add.stderr);
  t.match(add.json(), { domain: 'cli.test', state: 'pending', status: 'NOT_STARTED' });
  const zone = await svcCli(['domains', 'zone-file', 'cli.test', ...owner]);
  t.match(zone.stdout, /^\$ORIGIN cli\.test\.$/m);
  const plan = await svcCli(['domains', 'plan', 'cli.test', '--json', ...owner]);
  t.match(plan.json(), { domain: 'cli.test', records: Array, steps: Array, warnings: Array });
  const early = await svcCli(['domains', 'verify', 'cli.test', '--no-wait', '--json', ...owner]);
  t.equal(early.code, 0, early.stderr);
  t.match(early.json(), { state: 'provisioning', status: 'PENDING' }, 'verify before apply provisions the domain, as apply does');
  // No records exist in the loopback DNS, so verification must end in `failed`.
  const apply = await svcCli(['domains', 'apply', 'cli.test', '--timeout', '45', ...owner]);
  t.equal(apply.code, 1, apply.stderr);
  t.match(apply.stderr, /^cli\.test: (provisioning|verifying)/m, 'progress lines');
  t.match(apply.stderr, /^error \(verification_failed\): cli\.test failed verification/m);
  t.match(apply.stdout, /status: +failed/);
  const timeout = await svcCli(['domains', 'verify', 'cli.test', '--timeout', '1', '--json', ...owner]);
  t.ok([1].includes(timeout.code!), 'a short --timeout (or a quick failure) exits 1');
  t.match(timeout.error().error.code, /^(timeout|verification_failed)$/);
  const down = await svcCli(['domains', 'teardown', 'cli.test', '--timeout', '30', '--json', ...owner]);
  t.equal(down.code, 0, down.stderr);
  t.match(down.json(), { state: 'torn_down', status: 'NOT_STARTED' });
  t.equal((await svcCli(['domains', 'delete', 'cli.test', ...owner])).code, 0);
  const gone = await svcCli(['domains', 'show', 'cli.test', '--json', ...owner]);
  t.equal(gone.code, 1);
  t.equal(gone.error().error.code, 'not_found');
});

t.test('status as the owner shows the service, loops, transport and edge, remote access and counts', async (t) => {
  const run = await svcCli(['status', '--json', ...owner]);
  t.equal(run.code, 0, run.stderr);
  t.match(run.json(), {
    mode: 'owner',
    url: svc.url,
    home: svc.home,
    service: { running: true, pid: Number, started_at: String },
    loops: { state: 'running' },
    transport: { configured: true, edge: { url: /^http:\/\/127\.0\.0\.1:/ } },
    edge: { reachable: true },
    remote: { enabled: false },
    counts: { inboxes: { count: 2 }, quarantine: { count: 0 } },
  });
  const human = await svcCli(['status', ...owner]);
  t.match(human.stdout, /^service: +running at http:\/\/127\.0\.0\.1:\d+ /);
  t.match(human.stdout, /\nedge: +reachable(; last contact [^\n]+)?\n/, "one edge line: reachable, with its last contact once the pull loop has reached it");
});

t.test('inboxes delete removes the inbox and everything in it', async (t) => {
  const run = await svcCli(['inboxes', 'delete', 'bob@cli.test', ...owner]);
  t.equal(run.code, 0, run.stderr);
  t.equal((await svcCli(['inboxes', 'show', 'bob@cli.test', ...owner])).code, 1);
});
