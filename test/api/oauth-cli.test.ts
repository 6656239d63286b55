/**
 * `svc oauth clients | revoke | purge` (spec §5.3 "Owner management", §7.2 exit codes) run as
 * subprocesses against a real service, reaching it through the home's connection.json.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { api, setupOwner, startSvc, svcBin, type RunningSvc } from '../helpers/svc.js';
import { authorizeCode, ensureWebApp, exchange, refresh, register, type Session } from '../helpers/oauth.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs bin/svc with a clean environment: no SVC_HOME, SVC_URL or SVC_API_KEY unless given. */
function svcCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const base = { ...process.env };
  for (const name of ['SVC_HOME', 'SVC_URL', 'SVC_API_KEY']) delete base[name];
  return new Promise((resolve) => {
    execFile(process.execPath, [svcBin, ...args], { env: { ...base, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as NodeJS.ErrnoException & { code?: number }).code as number) : 0, stdout, stderr });
    });
  });
}

let svc: RunningSvc;
let session: Session;
let clientId: string;
let grantId: string;
let refreshToken: string;

t.before(async () => {
  ensureWebApp();
  svc = await startSvc();
  session = await setupOwner(svc);
  await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'agent', domain: 'cli.test' } });
  clientId = (await register(svc.url, { client_name: 'CLI Client' })).body.client_id;
  const resource = `${svc.url}/mcp`;
  const { code, verifier } = await authorizeCode(svc.url, session, { clientId, resource, inbox_ids: ['agent@cli.test'] });
  refreshToken = (await exchange(svc.url, { code, verifier, clientId, resource })).body.refresh_token;
  const list = await api<{ clients: { client_id: string; grants: { grant_id: string }[] }[] }>(svc.url, 'GET', '/v0/owner/oauth/clients', { token: svc.ownerToken });
  grantId = list.body.clients.find((c) => c.client_id === clientId)!.grants[0].grant_id;
});
t.teardown(() => svc.stop());

t.test('clients --json lists every client with its grants', async (t) => {
  const unused = (await register(svc.url, { client_name: 'Unused' })).body.client_id;
  const run = await svcCli(['oauth', 'clients', '--home', svc.home, '--json']);
  t.equal(run.code, 0, run.stderr);
  const body = JSON.parse(run.stdout) as { count: number; clients: { client_id: string; client_name: string; grants: { grant_id: string; resource: string; inbox_ids: string[] }[] }[] };
  t.equal(body.count, body.clients.length);
  const client = body.clients.find((c) => c.client_id === clientId)!;
  t.equal(client.client_name, 'CLI Client');
  t.match(client.grants, [{ grant_id: grantId, resource: `${svc.url}/mcp`, inbox_ids: ['agent@cli.test'] }]);
  t.same(body.clients.find((c) => c.client_id === unused)!.grants, []);
});

t.test('clients prints a table by default, the home taken from SVC_HOME', async (t) => {
  const run = await svcCli(['oauth', 'clients'], { SVC_HOME: svc.home });
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /^CLIENT\s+NAME\s+GRANT\s+RESOURCE\s+INBOXES\s+POLICY\s+EXPIRES\s+LAST USED\n/);
  const row = run.stdout.split('\n').find((line) => line.includes(grantId))!;
  t.match(row, clientId);
  t.match(row, 'CLI Client');
  t.match(row, 'agent@cli.test');
  t.match(row, 'approval');
});

t.test('revoke ends the grant and its tokens; an unknown grant is not_found (exit 1)', async (t) => {
  const run = await svcCli(['oauth', 'revoke', grantId, '--home', svc.home]);
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, `Revoked grant ${grantId}`);
  t.equal((await refresh(svc.url, refreshToken, clientId)).body.error, 'invalid_grant', 'its refresh token no longer works');
  const again = await svcCli(['oauth', 'revoke', grantId, '--home', svc.home]);
  t.equal(again.code, 1);
  t.match(again.stderr, /^error \(not_found\): The grant was not found\.\nfix: /);
  const json = await svcCli(['oauth', 'revoke', grantId, '--home', svc.home, '--json']);
  t.equal(json.code, 1);
  t.match(JSON.parse(json.stderr), { error: { code: 'not_found', message: String, fix: String } });
  const missing = await svcCli(['oauth', 'revoke', '--home', svc.home]);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /validation_error/);
});

t.test('purge deletes registrations without a grant', async (t) => {
  const run = await svcCli(['oauth', 'purge', '--home', svc.home, '--json']);
  t.equal(run.code, 0, run.stderr);
  const body = JSON.parse(run.stdout) as { deleted_clients: number };
  t.ok(body.deleted_clients >= 2, 'the unused client and the one whose grant was revoked');
  const list = await svcCli(['oauth', 'clients', '--home', svc.home, '--json']);
  t.same(JSON.parse(list.stdout), { count: 0, clients: [] });
  const human = await svcCli(['oauth', 'purge', '--home', svc.home]);
  t.equal(human.stdout, 'Deleted 0 client registrations without a grant.\n');
  const empty = await svcCli(['oauth', 'clients', '--home', svc.home]);
  t.equal(empty.stdout, 'No OAuth clients are registered.\n');
});

t.test('agent variables in the environment are refused with missing_permission (exit 4)', async (t) => {
  for (const env of [{ SVC_URL: svc.url }, { SVC_API_KEY: 'svc_key_x' }]) {
    const run = await svcCli(['oauth', 'clients', '--home', svc.home], env);
    t.equal(run.code, 4, Object.keys(env)[0]);
    t.match(run.stderr, /missing_permission/);
  }
});

t.test('unknown subcommands and options are usage errors (exit 1)', async (t) => {
  for (const args of [['oauth'], ['oauth', 'grants'], ['oauth', 'clients', '--port', '1'], ['oauth', 'clients', 'extra']]) {
    const run = await svcCli([...args, '--home', svc.home]);
    t.equal(run.code, 1, args.join(' '));
    t.match(run.stderr, /validation_error/);
  }
});

t.test('an intact home whose service is stopped is service_unavailable (exit 10)', async (t) => {
  await svc.stop();
  const stopped = await svcCli(['oauth', 'purge', '--home', svc.home, '--json']);
  t.equal(stopped.code, 10);
  t.match(JSON.parse(stopped.stderr), { error: { code: 'service_unavailable', message: /not running/, fix: /svc serve/ } });
  const human = await svcCli(['oauth', 'clients', '--home', svc.home]);
  t.equal(human.code, 10);
  t.match(human.stderr, /^error \(service_unavailable\): svc is not running .*\nfix: Start it with `svc serve/);
});
