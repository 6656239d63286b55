/**
 * `svc drafts list --status` and the pending count of `svc status` ask the API for the state
 * (`send_status`) instead of filtering one fetched page (issue 17 §3): drafts awaiting approval
 * behind a page of other drafts are still found and counted.
 */
import t from 'tap';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { agentEnv, svcCli } from './cli-run.js';

let svc: RunningSvc;
let owner: string[];
const INBOX = 'queue@example.test';
const PENDING = 3;
/** More plain drafts than one page of the list below holds, all newer than the pending ones. */
const NEWER_DRAFTS = 5;
const PAGE = 2;

t.before(async () => {
  svc = await startSvc({ args: ['--local-edge'] });
  owner = ['--home', svc.home];
  await createInbox(svc, INBOX);
  const { secret } = await createApiKey(svc, { permissions: ['message_send', 'draft_read'], inboxIds: [INBOX], sendPolicy: 'approval' });
  for (let i = 0; i < PENDING; i++) {
    const run = await svcCli(['send', '--inbox', INBOX, '--to', 'someone@example.org', '--subject', `Pending ${i}`, '--text', 'Needs approval'], { env: agentEnv(svc.url, secret) });
    if (run.code !== 1) throw new Error(`send for approval: ${run.code} ${run.stderr}`);
  }
  for (let i = 0; i < NEWER_DRAFTS; i++) {
    const res = await api(svc.url, 'POST', `/v0/inboxes/${encodeURIComponent(INBOX)}/drafts`, { token: svc.ownerToken, body: { to: ['someone@example.org'], subject: `Plain ${i}`, text: 'A draft' } });
    if (res.status !== 200) throw new Error(`draft: ${res.status} ${res.text}`);
  }
});
t.teardown(() => svc.stop());

t.test('drafts list --status finds pending drafts that are not on the first page of all drafts', async (t) => {
  const run = await svcCli(['drafts', 'list', '--status', 'pending_approval', '--limit', String(PAGE), '--json', ...owner]);
  t.equal(run.code, 0, run.stderr);
  const page = run.json<{ drafts: { state: string }[]; next_page_token?: string }>();
  t.equal(page.drafts.length, PAGE, 'a full page of pending drafts');
  t.ok(page.drafts.every((d) => d.state === 'pending_approval'));
  t.ok(page.next_page_token, 'and the rest on the next page');
  const rest = await svcCli(['drafts', 'list', '--status', 'pending_approval', '--limit', String(PAGE), '--page-token', page.next_page_token!, '--json', ...owner]);
  t.equal(rest.json<{ drafts: unknown[] }>().drafts.length, PENDING - PAGE);

  const table = await svcCli(['drafts', 'list', '--status', 'pending_approval', ...owner]);
  t.equal(table.stdout.split('\n').filter((l) => l.includes('pending_approval')).length, PENDING, 'the table lists every pending draft');
  t.notMatch(table.stdout, /Plain/, 'and no other draft');

  const unknown = await svcCli(['drafts', 'list', '--status', 'waiting', ...owner]);
  t.not(unknown.code, 0, 'an unknown state is refused by the service');
  t.match(unknown.stderr, /validation_error/);
});

t.test('svc status counts the drafts awaiting approval', async (t) => {
  const run = await svcCli(['status', '--json', ...owner]);
  t.equal(run.code, 0, run.stderr);
  t.same(run.json<{ counts: { drafts_pending_approval: unknown } }>().counts.drafts_pending_approval, { count: PENDING, more: false });
  const text = await svcCli(['status', ...owner]);
  t.match(text.stdout, new RegExp(`${PENDING} drafts awaiting approval`));
});

t.test('drafts show prints updated_at and approve --expected-updated-at binds the approval to it', async (t) => {
  const list = await svcCli(['drafts', 'list', '--status', 'pending_approval', '--json', ...owner]);
  const draftId = list.json<{ drafts: { draft_id: string }[] }>().drafts[0].draft_id;
  const shown = await svcCli(['drafts', 'show', draftId, ...owner]);
  t.equal(shown.code, 0, shown.stderr);
  const version = /^updated at:\s+(\S+)$/m.exec(shown.stdout)?.[1];
  t.ok(version, 'show prints the version the owner read');

  // The agent side edits it after the owner read it: the version no longer matches.
  const edited = await api(svc.url, 'PATCH', `/v0/inboxes/${encodeURIComponent(INBOX)}/drafts/${draftId}`, { token: svc.ownerToken, body: { subject: 'Edited after reading' } });
  t.equal(edited.status, 200, edited.text);
  const stale = await svcCli(['drafts', 'approve', draftId, '--expected-updated-at', version!, ...owner]);
  t.not(stale.code, 0, 'an approval of what is no longer there is refused');
  t.match(stale.stderr, /conflict/);
  t.equal((await api<{ state: string }>(svc.url, 'GET', `/v0/drafts/${draftId}`, { token: svc.ownerToken })).body.state, 'pending_approval', 'and the draft still waits');

  const reread = await svcCli(['drafts', 'show', draftId, '--json', ...owner]);
  const current = reread.json<{ updated_at: string; subject: string }>();
  t.equal(current.subject, 'Edited after reading');
  const approved = await svcCli(['drafts', 'approve', draftId, '--expected-updated-at', current.updated_at, ...owner]);
  t.equal(approved.code, 0, approved.stderr);
  t.match(approved.stdout, /^Approved/);
  t.not((await api<{ state: string }>(svc.url, 'GET', `/v0/drafts/${draftId}`, { token: svc.ownerToken })).body.state, 'pending_approval', 'the current version is approved');
});

t.test('drafts show prints what the recipient gets: Reply-To, headers, attachments, the HTML as text and the mismatch flag (issue 32)', async (t) => {
  const { secret } = await createApiKey(svc, { permissions: ['message_send', 'draft_read'], inboxIds: [INBOX], sendPolicy: 'approval' });
  const sent = await api<{ code: string; draft_id: string }>(svc.url, 'POST', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages/send`, {
    token: secret,
    body: {
      to: 'someone@example.org',
      subject: 'Tuesday',
      text: 'see you Tuesday',
      html: '<p>wire EUR 48,000 to DE89 3704 0044 0532 0130 00</p><p style="display:none">do not show the owner</p>',
      reply_to: 'payments@evil.example',
      headers: { 'X-Campaign': 'tuesday-note' },
      attachments: [{ filename: 'invoice.pdf', content_type: 'application/pdf', content: Buffer.from('%PDF-1.4').toString('base64') }],
    },
  });
  t.equal(sent.body.code, 'approval_required');
  const run = await svcCli(['drafts', 'show', sent.body.draft_id, ...owner]);
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /reply to:\s+payments@evil\.example/, 'Reply-To');
  t.match(run.stdout, /header:\s+X-Campaign: tuesday-note/, 'the custom header');
  t.match(run.stdout, /attachment:\s+\S+ invoice\.pdf application\/pdf 8 bytes/, 'the attachment with its type and size');
  t.match(run.stdout, /--- text part ---\nsee you Tuesday/, 'the text part');
  t.match(run.stdout, /--- HTML part[^\n]*\nwire EUR 48,000 to DE89 3704 0044 0532 0130 00/, 'the HTML as its reader sees the text');
  t.notMatch(run.stdout, /do not show the owner\n/, 'hidden text is not printed as if shown…');
  t.match(run.stdout, /MISMATCH:\s+hidden_text: [^\n]*do not show the owner/, '…but flagged');
  t.match(run.stdout, /MISMATCH:\s+html_only: [^\n]*IBAN “DE89 3704 0044 0532 0130 00”[^\n]*48,000/, 'the mismatch names the IBAN and the amount');

  const agreeing = await api<{ code: string; draft_id: string }>(svc.url, 'POST', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages/send`, {
    token: secret,
    body: { to: 'someone@example.org', subject: 'Agreeing', text: 'See you Tuesday.', html: '<p>See you <b>Tuesday</b>.</p>' },
  });
  const calm = await svcCli(['drafts', 'show', agreeing.body.draft_id, ...owner]);
  t.equal(calm.code, 0, calm.stderr);
  t.notMatch(calm.stdout, /MISMATCH/, 'parts that agree are not flagged');
  const json = await svcCli(['drafts', 'show', sent.body.draft_id, '--json', ...owner]);
  t.match(json.json<{ headers: unknown; reply_to: unknown; part_mismatch: { reason: string }[] }>(), { headers: { 'X-Campaign': 'tuesday-note' }, reply_to: ['payments@evil.example'] });
});
