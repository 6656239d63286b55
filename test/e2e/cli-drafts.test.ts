/**
 * `svc drafts list --status` and the pending count of `svc status` ask the API for the state
 * (`send_status`) instead of filtering one fetched page (issue 17 §3): drafts awaiting approval
 * behind a page of other drafts are still found and counted.
 */
import t from 'tap';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { insertApiKey, insertInbox, openHomeDb } from '../helpers/db.js';
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
  const db = openHomeDb(svc.home);
  insertInbox(db, INBOX);
  const { secret } = insertApiKey(db, { permissions: ['message_send', 'draft_read'], inboxIds: [INBOX], sendPolicy: 'approval' });
  db.close();
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
  const page = run.json<{ drafts: { send_status: string }[]; next_page_token?: string }>();
  t.equal(page.drafts.length, PAGE, 'a full page of pending drafts');
  t.ok(page.drafts.every((d) => d.send_status === 'pending_approval'));
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
