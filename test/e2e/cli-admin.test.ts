/**
 * The `svc` CLI against a real service without a transport (issue 9): transport and edge
 * pairing, remote access, webhooks, lists, api-keys, open, quarantine, completion and --help;
 * and the exit codes of real causes: 10 (no transport on send, service stopped), 4 (agent
 * variables for local service management, agent on owner routes), 6 (missing or uninitialized
 * home, quarantine retry while a deletion is pending), 9 (retry of a queue-message item).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { uuidv7 } from '../../src/db/ids.js';
import { agentEnv, svcCli } from './cli-run.js';
import { eachLimited } from '../helpers/wire.js';

let svc: RunningSvc;
let owner: string[];
let agentKey = '';
const dir = tempDir('svc-cli-admin-');

t.before(async () => {
  svc = await startSvc();
  owner = ['--home', svc.home];
  const inbox = await svcCli(['inboxes', 'create', 'ops@admin.test', ...owner]);
  if (inbox.code !== 0) throw new Error(inbox.stderr);
  const key = await svcCli(['api-keys', 'create', '--permissions', 'all', '--send-policy', 'direct', '--json', ...owner]);
  agentKey = key.json<{ api_key: string }>().api_key;
});
t.teardown(() => svc.stop());

t.test('sending without a transport is service_unavailable (exit 10)', async (t) => {
  const run = await svcCli(['send', '--to', 'someone@example.org', '--subject', 'x', '--text', 'x', ...owner]);
  t.equal(run.code, 10);
  t.match(run.stderr, /^error \(service_unavailable\): .*\nfix: /);
});

t.test('transport: pair an edge from a token file, set a smart host, show without secrets, clear', async (t) => {
  const tokenFile = path.join(dir, 'edge-token');
  fs.writeFileSync(tokenFile, 'edge-token-0123456789abcdef\n');
  const set = await svcCli(['transport', 'set', '--edge-url', 'http://127.0.0.1:9', '--edge-token-file', tokenFile, '--json', ...owner]);
  t.equal(set.code, 0, set.stderr);
  const paired = set.json<{ edges: { url: string; token_set: boolean }[] }>();
  t.match(paired, { configured: true, edge: { url: 'http://127.0.0.1:9', token_set: true }, smtp: null });
  t.same(
    paired.edges.map((e) => [e.url, e.token_set]),
    [['http://127.0.0.1:9', true]],
    'the one edge is the list',
  );
  // A second edge beside it, then first; removed again. Kept edges keep their tokens (never shown).
  const added = await svcCli(['transport', 'add-edge', '--edge-url', 'http://127.0.0.1:19', '--edge-token', 'edge-token-second-0123456789', '--json', ...owner]);
  t.equal(added.code, 0, added.stderr);
  t.same(
    added.json<{ edges: { url: string }[] }>().edges.map((e) => e.url),
    ['http://127.0.0.1:9', 'http://127.0.0.1:19'],
  );
  const firstNow = await svcCli(['transport', 'add-edge', '--edge-url', 'http://127.0.0.1:19', '--edge-token', 'edge-token-second-0123456789', '--first', ...owner]);
  t.equal(firstNow.code, 0, firstNow.stderr);
  t.match(firstNow.stdout, /edge 1: +http:\/\/127\.0\.0\.1:19 \(token set/);
  t.match(firstNow.stdout, /edge 2: +http:\/\/127\.0\.0\.1:9 \(token set/);
  t.notMatch(added.stdout + firstNow.stdout, /edge-token-/, 'tokens are never printed');
  const removed = await svcCli(['transport', 'remove-edge', 'http://127.0.0.1:19', '--json', ...owner]);
  t.equal(removed.code, 0, removed.stderr);
  t.same(
    removed.json<{ edges: { url: string }[] }>().edges.map((e) => e.url),
    ['http://127.0.0.1:9'],
  );
  t.equal((await svcCli(['transport', 'remove-edge', 'http://127.0.0.1:19', ...owner])).code, 1, 'removing an edge that is not paired is an error');
  const smtp = await svcCli(['transport', 'set', '--smtp-host', 'smtp.example.org', '--smtp-port', '587', '--smtp-username', 'me', '--smtp-password', 'secret-pw', ...owner]);
  t.equal(smtp.code, 0, smtp.stderr);
  const show = await svcCli(['transport', 'show', ...owner]);
  // Nothing listens on port 9: the line may also say the edge is unhealthy (edge_unreachable).
  t.match(show.stdout, /edge: +http:\/\/127\.0\.0\.1:9 \(token set\)(, unhealthy: edge_unreachable)?\nsmtp: +smtp\.example\.org:587 as me, password set/);
  t.notMatch(show.stdout + set.stdout, /edge-token-0123|secret-pw/, 'secrets are never printed');
  const half = await svcCli(['transport', 'set', '--edge-url', 'http://127.0.0.1:9', ...owner]);
  t.equal(half.code, 1, 'pairing needs the token too');
  const bad = await svcCli(['transport', 'set', '--edge-url', 'http://edge.example.org', '--edge-token', 'edge-token-0123456789abcdef', '--json', ...owner]);
  t.equal(bad.code, 1);
  t.equal(bad.error().error.code, 'validation_error', 'the service refuses plain http off loopback');
  t.match((await svcCli(['transport', 'clear', '--smtp', '--json', ...owner])).json(), { edge: { url: 'http://127.0.0.1:9' }, smtp: null });
  t.match((await svcCli(['transport', 'clear', '--json', ...owner])).json(), { configured: false, edge: null, smtp: null });
  const agent = await svcCli(['transport', 'show'], { env: agentEnv(svc.url, agentKey) });
  t.equal(agent.code, 4, 'owner only');
});

t.test('guard: show the checks, switch one off, tune the limits, add a secret from stdin, remove it (issue 20 §4)', async (t) => {
  const show = await svcCli(['guard', 'show', ...owner]);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, /credentials: +on +API keys/);
  t.match(show.stdout, /first contacts: +at most 10 per message, 30 per 24 hours/);
  const set = await svcCli(['guard', 'set', '--off', 'new_recipients,iban', '--per-day', '50', '--json', ...owner]);
  t.equal(set.code, 0, set.stderr);
  const view = set.json<{ checks: { name: string; enabled: boolean }[]; new_recipients: { per_message: number; per_day: number } }>();
  t.same(view.checks.filter((c) => !c.enabled).map((c) => c.name), ['iban', 'new_recipients']);
  t.same(view.new_recipients, { per_message: 10, per_day: 50 }, 'the limit not given is kept');
  const secretFile = path.join(dir, 'guard-secret');
  fs.writeFileSync(secretFile, 'the-family-bank-password-4471\n');
  const added = await svcCli(['guard', 'set', '--add-secret-file', secretFile, '--json', ...owner]);
  t.equal(added.code, 0, added.stderr);
  const secrets = added.json<{ secrets: { secret_id: string; hint: string }[] }>().secrets;
  t.match(secrets, [{ hint: '…4471' }]);
  t.notMatch(added.stdout + (await svcCli(['guard', 'show', ...owner])).stdout, /family-bank/, 'never printed');
  const removed = await svcCli(['guard', 'set', '--remove-secret', secrets[0].secret_id, '--on', 'iban,new_recipients', '--per-day', '30', '--json', ...owner]);
  t.same(removed.json<{ secrets: unknown[] }>().secrets, []);
  const unknown = await svcCli(['guard', 'set', '--off', 'telepathy', '--json', ...owner]);
  t.equal(unknown.code, 1);
  t.equal(unknown.error().error.code, 'validation_error');
  const agent = await svcCli(['guard', 'show'], { env: agentEnv(svc.url, agentKey) });
  t.equal(agent.code, 4, 'owner only');
  const key = await svcCli(['api-keys', 'create', '--permissions', 'message_send', '--send-policy', 'guarded', '--json', ...owner]);
  t.equal(key.code, 0, key.stderr);
  t.equal(key.json<{ send_policy: string }>().send_policy, 'guarded');
});

t.test('remote: show, enable with a connector command, disable', async (t) => {
  const enable = await svcCli(['remote', 'enable', '--hostname', 'mail.admin.example', '--command', 'sleep 30', '--json', ...owner]);
  t.equal(enable.code, 0, enable.stderr);
  t.match(enable.json(), { enabled: true, hostname: 'mail.admin.example', url: 'https://mail.admin.example', command: 'sleep 30' });
  const show = await svcCli(['remote', 'show', ...owner]);
  t.match(show.stdout, /^enabled: +yes\nurl: +https:\/\/mail\.admin\.example\n/);
  const disable = await svcCli(['remote', 'disable', '--json', ...owner]);
  t.match(disable.json(), { enabled: false, hostname: 'mail.admin.example' });
  const invalid = await svcCli(['remote', 'enable', '--hostname', 'localhost', '--command', 'true', '--json', ...owner]);
  t.equal(invalid.code, 1);
  t.equal(invalid.error().error.code, 'validation_error');
});

t.test('webhooks: create prints the secret once; list, show with health, disable, delete — as an agent too', async (t) => {
  const created = await svcCli(['webhooks', 'create', 'http://127.0.0.1:9/hook', '--event', 'message.received,message.sent', '--inbox', 'ops@admin.test', ...owner]);
  t.equal(created.code, 0, created.stderr);
  t.match(created.stdout, /Signing secret \(shown only this once; store it now\):\n\S+/);
  const id = /^webhook: +(\S+)$/m.exec(created.stdout)![1];
  const show = await svcCli(['webhooks', 'show', id, '--json', ...owner]);
  t.match(show.json(), { webhook_id: id, event_types: ['message.received', 'message.sent'], inbox_ids: ['ops@admin.test'], enabled: true, failure_count: 0 });
  t.equal(show.json().secret, '', 'the secret is not shown again (an empty string: the AgentMail SDK type requires the field)');
  t.match((await svcCli(['webhooks', 'update', id, '--disable', '--json', ...owner])).json(), { enabled: false });
  t.match((await svcCli(['webhooks', 'list', ...owner])).stdout, new RegExp(`${id} +http://127\\.0\\.0\\.1:9/hook +no`));
  t.equal((await svcCli(['webhooks', 'delete', id, ...owner])).code, 0);

  const env = agentEnv(svc.url, agentKey);
  const local = await svcCli(['webhooks', 'create', 'http://127.0.0.1:9/agent', '--event', 'message.received', '--json'], { env });
  t.equal(local.code, 1, 'agents may not target loopback');
  t.equal(local.error().error.code, 'validation_error');
  const mine = await svcCli(['webhooks', 'create', 'https://hooks.example.org/agent', '--event', 'message.received', '--json'], { env });
  t.equal(mine.code, 0, mine.stderr);
  const list = await svcCli(['webhooks', 'list', '--json'], { env });
  t.same(list.json<{ webhooks: { url: string }[] }>().webhooks.map((w) => w.url), ['https://hooks.example.org/agent'], 'agents see their own webhooks');
});

t.test('lists: add, show, get and remove entries, global and per inbox; rejections for the owner', async (t) => {
  const add = await svcCli(['lists', 'add', 'receive', 'block', 'spam.example', '--reason', 'newsletters', '--json', ...owner]);
  t.match(add.json(), { entry: 'spam.example', entry_type: 'domain', direction: 'receive', list_type: 'block', reason: 'newsletters', inbox_id: null });
  const env = agentEnv(svc.url, agentKey);
  const inbox = await svcCli(['lists', 'add', 'send', 'allow', 'partner@example.org', '--inbox', 'ops@admin.test'], { env });
  t.equal(inbox.code, 0, inbox.stderr);
  const show = await svcCli(['lists', 'show', 'send', 'allow', '--inbox', 'ops@admin.test', ...owner]);
  t.match(show.stdout, /^ENTRY +TYPE +LIST +INBOX +REASON +CREATED\npartner@example\.org +email +send\/allow +ops@admin\.test/);
  t.match((await svcCli(['lists', 'get', 'receive', 'block', 'spam.example', '--json', ...owner])).json(), { entry: 'spam.example' });
  t.equal((await svcCli(['lists', 'remove', 'receive', 'block', 'spam.example', ...owner])).code, 0);
  t.same((await svcCli(['lists', 'show', 'receive', 'block', '--json', ...owner])).json<{ entries: unknown[] }>().entries, []);
  const wrong = await svcCli(['lists', 'show', 'inbound', 'block', ...owner]);
  t.equal(wrong.code, 1);
  t.match(wrong.stderr, /validation_error/);
  t.match((await svcCli(['lists', 'rejections', '--json', ...owner])).json(), { rejections: [] });
  t.equal((await svcCli(['lists', 'rejections'], { env })).code, 4, 'rejections are owner only');
});

t.test('api-keys: list, show and update; open prints a login link for the owner only', async (t) => {
  const list = await svcCli(['api-keys', 'list', '--json', ...owner]);
  const [key] = list.json<{ api_keys: { api_key_id: string }[] }>().api_keys;
  t.notMatch(list.stdout, /svc_key_[A-Za-z0-9_-]{20}/, 'secrets are never listed');
  const update = await svcCli(['api-keys', 'update', key.api_key_id, '--name', 'renamed', '--send-policy', 'read_only', '--json', ...owner]);
  t.match(update.json(), { name: 'renamed', send_policy: 'read_only' });
  t.match((await svcCli(['api-keys', 'show', key.api_key_id, ...owner])).stdout, /send policy: +read_only/);
  await svcCli(['api-keys', 'update', key.api_key_id, '--send-policy', 'direct', ...owner]);

  const open = await svcCli(['open', '--print', ...owner]);
  t.equal(open.code, 0, open.stderr);
  t.match(open.stdout, new RegExp(`\\n${svc.url.replace(/\./g, '\\.')}/login#token=\\S+\\n$`));
  const agent = await svcCli(['open', '--print', '--json'], { env: agentEnv(svc.url, agentKey) });
  t.equal(agent.code, 4);
  t.equal(agent.error().error.code, 'missing_permission');
});

t.test('quarantine: list; retry of a queue-message item is not_supported (9); retry while its deletion is pending is action_required (6)', async (t) => {
  t.match((await svcCli(['quarantine', 'list', ...owner])).stdout, /^Nothing is quarantined\.\n$/);
  const queued = uuidv7();
  const deleting = uuidv7();
  // SQL: quarantine items come only from inbound failures; no route makes one, least of all one mid-deletion.
  const db = openHomeDb(svc.home);
  const insert = db.prepare('INSERT INTO inbound_quarantine (quarantine_id, source_kind, source_key, reason_code, first_seen, size, inbox_id, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  insert.run(queued, 'queue_message', `q-${queued}`, 'object_missing', new Date().toISOString(), 100, 'ops@admin.test', 'quarantined');
  insert.run(deleting, 'buffer_object', `o-${deleting}`, 'open_failed', new Date().toISOString(), 200, 'ops@admin.test', 'delete_pending');
  db.close();
  const list = await svcCli(['quarantine', 'list', '--json', ...owner]);
  t.same(list.json<{ items: { quarantine_id: string }[] }>().items.map((i) => i.quarantine_id).sort(), [queued, deleting].sort());
  const status = await svcCli(['status', '--json', ...owner]);
  t.same(status.json<{ counts: { quarantine: unknown } }>().counts.quarantine, { count: 2, more: false }, '`svc status` counts the waiting items');
  t.match((await svcCli(['status', ...owner])).stdout, /quarantine:\s+2 items waiting \(see `svc quarantine list`\)\n/);
  const notSupported = await svcCli(['quarantine', 'retry', queued, ...owner]);
  t.equal(notSupported.code, 9);
  t.match(notSupported.stderr, /^error \(not_supported\): /);
  const pending = await svcCli(['quarantine', 'retry', deleting, '--json', ...owner]);
  t.equal(pending.code, 6);
  t.equal(pending.error().error.code, 'action_required');
  const noBuffer = await svcCli(['quarantine', 'delete', queued, '--json', ...owner]);
  t.equal(noBuffer.code, 6, 'no buffer configured');
  t.equal((await svcCli(['quarantine', 'list'], { env: agentEnv(svc.url, agentKey) })).code, 4, 'owner only');
});

t.test('completion scripts complete commands, subcommands and options', async (t) => {
  const bash = await svcCli(['completion', 'bash']);
  t.equal(bash.code, 0);
  const script = path.join(dir, 'svc.bash');
  fs.writeFileSync(script, bash.stdout);
  const complete = (...words: string[]) =>
    execFileSync('bash', ['-c', `source "${script}"; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _svc; echo "\${COMPREPLY[*]}"`], { encoding: 'utf8' }).trim();
  t.equal(complete('svc', 'inb'), 'inboxes');
  t.equal(complete('svc', 'domains', 've'), 'verify');
  t.equal(complete('svc', 'send', '--att'), '--attach');
  t.equal(complete('svc', 'domains', 'verify', '--time'), '--timeout');
  const zsh = await svcCli(['completion', 'zsh']);
  t.match(zsh.stdout, /^#compdef svc\n/);
  t.match(zsh.stdout, /"domains verify"\) opts=\(--timeout --no-wait /);
  const fish = await svcCli(['completion', 'fish']);
  t.equal(fish.code, 9, 'other shells are not_supported');
});

t.test('--help on every command prints its usage and an example', async (t) => {
  const help = await svcCli(['help']);
  const commands = [...help.stdout.matchAll(/^ {2}([a-z-]+) {2,}/gm)].map((m) => m[1]);
  t.ok(commands.length >= 20, `${commands.length} commands listed`);
  // A few at a time: each is a separate process, and the answers are checked in order.
  const runs = await eachLimited(commands, 4, (command) => svcCli([command, '--help']));
  commands.forEach((command, i) => {
    t.equal(runs[i]!.code, 0, command);
    t.match(runs[i]!.stdout, /Examples?:\n {2}\S/, `${command} --help has an example`);
  });
  t.match((await svcCli(['domains', 'verify', '--help'])).stdout, /^Usage: svc domains verify <domain> \[options\]\n[\s\S]*--timeout SECONDS/);
  // The Cloudflare edge's four actions have their own help page, reached from `svc edge --help`.
  t.match((await svcCli(['edge', '--help'])).stdout, /svc edge cloudflare dev\|init\|deploy\|status/);
  const cloudflare = await svcCli(['edge', 'cloudflare', '--help']);
  t.equal(cloudflare.code, 0);
  t.same([...cloudflare.stdout.matchAll(/^ {2}svc edge cloudflare ([a-z]+) {2,}\S/gm)].map((m) => m[1]), ['dev', 'init', 'deploy', 'status']);
  const optionOf = { dev: '--max-message-bytes N', init: '--domain D (repeatable)', deploy: '--routing-only', status: '--api-token-file FILE' };
  for (const [action, option] of Object.entries(optionOf)) {
    const run = await svcCli(['edge', 'cloudflare', action, '--help']);
    t.equal(run.code, 0, action);
    t.ok(run.stdout.startsWith(`Usage: svc edge cloudflare ${action} [options]\n`), `${action} --help names its command`);
    t.ok(run.stdout.includes(`  ${option}`), `${action} --help lists ${option}`);
  }
  const unknown = await svcCli(['mailboxes']);
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /^error \(validation_error\): Unknown command mailboxes\./);
});

t.test('local service management refuses agent variables with missing_permission (exit 4)', async (t) => {
  const install = await svcCli(['service', 'install', '--home', svc.home], { env: { SVC_URL: svc.url } });
  t.equal(install.code, 4);
  t.match(install.stderr, /missing_permission/);
  const serve = await svcCli(['serve', '--home', path.join(dir, 'other')], { env: { SVC_API_KEY: agentKey } });
  t.equal(serve.code, 4);
  t.match(serve.stderr, /^error \(missing_permission\): svc serve /);
  t.notOk(fs.existsSync(path.join(dir, 'other')), 'nothing was created');
});

t.test('a missing or uninitialized home is action_required (exit 6)', async (t) => {
  const missing = await svcCli(['status', '--home', path.join(dir, 'nowhere')]);
  t.equal(missing.code, 6);
  t.match(missing.stderr, /^error \(action_required\): The home .* does not exist\.\nfix: Initialize it once with `svc serve --init/);
  const empty = path.join(dir, 'empty-home');
  fs.mkdirSync(empty);
  const uninit = await svcCli(['inboxes', 'list', '--json', '--home', empty]);
  t.equal(uninit.code, 6);
  t.match(uninit.error(), { error: { code: 'action_required', message: /not initialized/ } });
  const viaEnv = await svcCli(['inboxes', 'list'], { env: { SVC_HOME: empty } });
  t.equal(viaEnv.code, 6, 'SVC_HOME is the home when --home is not given');
});

t.test('with the service stopped, an intact home is service_unavailable (exit 10)', async (t) => {
  await svc.stop();
  const run = await svcCli(['status', '--json', ...owner]);
  t.equal(run.code, 10);
  t.match(run.error(), { error: { code: 'service_unavailable', message: /svc is not running/, fix: /svc serve/ } });
  const agent = await svcCli(['inboxes', 'list'], { env: agentEnv(svc.url, agentKey) });
  t.equal(agent.code, 10, 'the same for an agent whose SVC_URL does not answer');
});
