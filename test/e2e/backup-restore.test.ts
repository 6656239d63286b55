/**
 * Issue 33 §3: `svc backup --to FILE` while svc runs and mail keeps arriving over SMTP; the file
 * holds no plaintext; `svc restore` with the recovery code in another keyring session (another
 * machine's credential store) into a new home brings back every inbox, message, attachment, API
 * key (its old secret works), webhook, domain and DKIM key; a wrong code and an existing home are
 * refused; kill -9 during a backup never leaves a file under the backup's name; `svc status` and
 * the owner route report the last backup.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import nodemailer from 'nodemailer';
import { api, OWNER_PASSWORD, setupOwner, startSvc, svcBin, tempDir, type RunningSvc } from '../helpers/svc.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { until } from '../helpers/until.js';
import { svcCli } from './cli-run.js';
import { recoveryCodeOf, restoreOnOtherMachine } from '../helpers/backup.js';
import { checkBackupFile } from '../../src/backup/format.js';

const INBOX = 'hello@local.test';
/** In every subject and body: the backup file must not contain it anywhere. */
const CANARY = 'PlaintextCanary7431';
/** Messages that must have arrived before the backup starts, and after it, while it runs. */
const BEFORE_BACKUP = 6;
const AFTER_BACKUP = 4;

interface Listed {
  message_id: string;
  subject: string;
}
interface Full {
  message_id: string;
  subject: string;
  text: string;
  attachments?: { attachment_id: string; filename: string; size: number }[];
}

/** The attachment of load message `i`: bytes that say which message they belong to. */
const attachmentOf = (i: number) => Buffer.from(`attachment ${i} ${CANARY} `.repeat(40 + i));

async function allMessages(url: string, token: string): Promise<Listed[]> {
  const res = await api<{ messages: Listed[] }>(url, 'GET', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages?limit=100`, { token });
  if (res.status !== 200) throw new Error(`list: ${res.status} ${res.text}`);
  return res.body.messages;
}

async function fullMessage(url: string, token: string, id: string): Promise<Full> {
  return (await api<Full>(url, 'GET', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages/${encodeURIComponent(id)}`, { token })).body;
}

async function attachmentBytes(url: string, token: string, messageId: string, attachmentId: string): Promise<Buffer> {
  const link = await api<{ download_url: string }>(url, 'GET', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages/${encodeURIComponent(messageId)}/attachments/${encodeURIComponent(attachmentId)}`, { token });
  const res = await fetch(link.body.download_url);
  return Buffer.from(await res.arrayBuffer());
}

/** Sends load messages over SMTP, one after another, until stopped; each with an attachment. */
function ingest(smtp: string) {
  const [host, port] = smtp.split(':');
  const client = nodemailer.createTransport({ host, port: Number(port), secure: false, ignoreTLS: true });
  let stopped = false;
  let sent = 0;
  const done = (async () => {
    for (let i = 0; !stopped; i++) {
      try {
        await client.sendMail({ from: 'load@elsewhere.test', to: INBOX, subject: `Load ${i} ${CANARY}`, text: `Body of load message ${i} ${CANARY}.`, attachments: [{ filename: `load-${i}.txt`, content: attachmentOf(i) }] });
        sent++;
      } catch (err) {
        // 451 while the edge learns the inbox: try the same message again.
        if ((err as { responseCode?: number }).responseCode !== 451) throw err;
        i--;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  })();
  return {
    sent: () => sent,
    stop: async () => {
      stopped = true;
      await done;
      client.close();
    },
  };
}

let svc: RunningSvc;
let load: ReturnType<typeof ingest>;

t.before(async () => {
  svc = await startSvc({ args: ['--local-edge'] });
});
t.teardown(async () => {
  await load?.stop().catch(() => undefined);
  await svc?.stop();
});

t.test('backup under an ingest load, restored on another machine, brings everything back', async (t) => {
  const code = recoveryCodeOf(svc);
  t.match(code, /^[0-9A-Z]{4}(-[0-9A-Z]{4}){6}$/, 'the recovery code is shown once, grouped');
  await setupOwner(svc);
  await createInbox(svc, INBOX);
  const key = await createApiKey(svc, { permissions: ['inbox_read', 'message_read'], inboxIds: [INBOX], name: 'agent one' });
  const hook = await api<{ webhook_id: string }>(svc.url, 'POST', '/v0/webhooks', { token: svc.ownerToken, body: { url: 'https://hooks.example/backup', event_types: ['message.received'] } });
  t.equal(hook.status, 200, 'webhook created');
  const domain = await api<{ domain_id: string }>(svc.url, 'POST', '/v0/domains', { token: svc.ownerToken, body: { domain: 'backup.example' } });
  t.equal(domain.status, 200, 'domain created');
  const zone = await api(svc.url, 'GET', `/v0/domains/${domain.body.domain_id}/zone-file`, { token: svc.ownerToken });
  t.match(zone.text, /_domainkey[\s\S]*p=/, 'the zone file carries the DKIM key');

  const smtp = String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp);
  load = ingest(smtp);
  await until('mail arriving before the backup', async () => ((await allMessages(svc.url, svc.ownerToken)).length >= BEFORE_BACKUP ? true : undefined));
  const storedBefore = (await allMessages(svc.url, svc.ownerToken)).length;

  const file = path.join(tempDir(), 'home.svcbackup');
  const made = await svcCli(['backup', '--to', file, '--home', svc.home, '--json']);
  t.equal(made.code, 0, `backup exits 0: ${made.stderr}`);
  t.match(made.json(), { file, via: 'service' }, 'made by the running service');
  const sentAtBackup = load.sent();
  await until('mail still arriving after the backup', () => (load.sent() >= sentAtBackup + AFTER_BACKUP ? true : undefined));
  await load.stop();

  const bytes = fs.readFileSync(file);
  t.equal(fs.statSync(file).mode & 0o777, 0o600, 'the backup file is private to its owner');
  t.notOk(bytes.includes(CANARY), 'no subject, body or attachment text in the backup');
  t.notOk(bytes.includes(Buffer.from(INBOX)), 'no address in the backup');
  t.notOk(bytes.includes(Buffer.from('SQLite format 3')), 'the database in it is not a plain SQLite file');
  const { manifest } = await checkBackupFile(file);
  t.notOk(JSON.stringify(manifest).includes(code.replace(/-/g, '')), 'the manifest does not carry the code');

  const status = await svcCli(['status', '--home', svc.home, '--json']);
  const reported = status.json<{ backup: { last_backup_at: string; age_seconds: number; recovery_code_set: boolean } }>().backup;
  t.equal(reported.last_backup_at, manifest.created_at, 'svc status reports the last backup');
  t.ok(reported.age_seconds >= 0 && reported.recovery_code_set);
  const human = await svcCli(['status', '--home', svc.home]);
  t.match(human.stdout, /^backup:\s+\d+ s ago/m, 'and its age, in the table');

  const everything = await allMessages(svc.url, svc.ownerToken);
  const other = await restoreOnOtherMachine(file, code, path.join(tempDir(), 'restored-home'), ['--local-edge']);
  t.teardown(() => other.stop());
  t.match(other.lines[0], { home: other.home, home_id: manifest.home_id }, 'restore reported the new home');
  t.notOk(other.lines.some((l) => l.event === 'home.recovery_code'), 'a restored home keeps its code: no new one is printed');

  const restored = await allMessages(other.url, other.ownerToken);
  const original = new Map(everything.map((m) => [m.message_id, m]));
  t.ok(restored.length >= storedBefore, `every message stored before the backup is back (${restored.length} ≥ ${storedBefore})`);
  t.ok(restored.length <= everything.length, 'and nothing that never existed');
  for (const m of restored) {
    t.ok(original.has(m.message_id), `${m.subject} existed in the original home`);
    const [a, b] = [await fullMessage(svc.url, svc.ownerToken, m.message_id), await fullMessage(other.url, other.ownerToken, m.message_id)];
    const i = Number(/^Load (\d+)/.exec(b.subject)![1]);
    t.equal(b.text.trim(), a.text.trim(), `${b.subject}: same body`);
    t.same(b.attachments?.map((x) => [x.filename, x.size]), a.attachments?.map((x) => [x.filename, x.size]), `${b.subject}: same attachments`);
    const att = b.attachments![0];
    t.ok((await attachmentBytes(other.url, other.ownerToken, m.message_id, att.attachment_id)).equals(attachmentOf(i)), `${b.subject}: attachment bytes intact`);
  }

  const asAgent = await api<{ inboxes: { inbox_id: string }[] }>(other.url, 'GET', '/v0/inboxes', { token: key.secret });
  t.equal(asAgent.status, 200, 'the API key works with its old secret');
  t.same(asAgent.body.inboxes.map((i) => i.inbox_id), [INBOX]);
  const hooks = async (url: string, token: string) => (await api<{ webhooks: unknown[] }>(url, 'GET', '/v0/webhooks', { token })).body.webhooks;
  t.same(await hooks(other.url, other.ownerToken), await hooks(svc.url, svc.ownerToken), 'the webhooks are back');
  const domains = async (url: string, token: string) => (await api<{ domains: { domain_id: string; domain: string }[] }>(url, 'GET', '/v0/domains', { token })).body.domains.map((d) => [d.domain_id, d.domain]);
  t.same(await domains(other.url, other.ownerToken), await domains(svc.url, svc.ownerToken), 'the domains are back');
  const zoneBack = await api(other.url, 'GET', `/v0/domains/${domain.body.domain_id}/zone-file`, { token: other.ownerToken });
  // The comment lines carry the time the file was generated.
  const records = (text: string) => text.split('\n').filter((l) => !l.startsWith(';')).join('\n');
  t.equal(records(zoneBack.text), records(zone.text), 'the same DKIM key (the zone file\'s records are identical)');
  const login = await api(other.url, 'POST', '/v0/owner/login', { body: { password: OWNER_PASSWORD } });
  t.equal(login.status, 200, 'the owner signs in with the old password');

  const keys = JSON.parse(fs.readFileSync(path.join(other.home, 'keys.json'), 'utf8')) as { wrapped_key: string; recovery: unknown; home_id: string };
  const oldKeys = JSON.parse(fs.readFileSync(path.join(svc.home, 'keys.json'), 'utf8')) as { wrapped_key: string; recovery: unknown; home_id: string };
  t.not(keys.wrapped_key, oldKeys.wrapped_key, 'the new home has its own key-encryption key');
  t.same(keys.recovery, oldKeys.recovery, 'and the same recovery block, so the same code restores its backups');
  t.equal(keys.home_id, oldKeys.home_id);
});

t.test('restore refuses a wrong recovery code, an existing home and a cut-short file', async (t) => {
  const file = path.join(tempDir(), 'refusals.svcbackup');
  t.equal((await svcCli(['backup', '--to', file, '--home', svc.home])).code, 0);
  const again = await svcCli(['backup', '--to', file, '--home', svc.home]);
  t.equal(again.code, 1, 'an existing file is not replaced without --force');
  t.match(again.stderr, /exists already/);

  const target = path.join(tempDir(), 'never-made');
  const wrong = await svcCli(['restore', file, '--home', target, '--recovery-code-file', '-', '--json'], { input: 'ABCD-EFGH-JKMN-PQRS-TVWX-YZ01-2345\n' });
  t.equal(wrong.code, 6, 'a wrong code: action_required');
  t.match(wrong.error().error.message, /recovery code does not open this backup/);
  t.notOk(fs.existsSync(target), 'nothing is left where the home would have gone');

  const code = recoveryCodeOf(svc);
  const codeFile = path.join(tempDir(), 'code.txt');
  fs.writeFileSync(codeFile, `${code.toLowerCase().replace(/-/g, ' ')}\n`, { mode: 0o600 });
  const over = await svcCli(['restore', file, '--home', svc.home, '--recovery-code-file', codeFile]);
  t.equal(over.code, 1, 'never over an existing home');
  t.match(over.stderr, /not empty; restore never overwrites a home/);

  const short = path.join(tempDir(), 'short.svcbackup');
  fs.writeFileSync(short, fs.readFileSync(file).subarray(0, fs.statSync(file).size - 100));
  const cut = await svcCli(['restore', short, '--home', target, '--recovery-code-file', codeFile]);
  t.equal(cut.code, 1, 'a cut-short file is refused');
  t.match(cut.stderr, /not a complete svc backup/);
  t.notOk(fs.existsSync(target));
});

t.test('kill -9 during a backup never leaves a file under the backup\'s name', async (t) => {
  const dir = tempDir();
  const file = path.join(dir, 'killed.svcbackup');
  let interrupted = 0;
  // The kill lands at a different moment each time; every outcome is checked, and at least one
  // kill must have hit while the file was being written (else the test proved nothing).
  for (let attempt = 0; attempt < 8 && interrupted < 2; attempt++) {
    fs.rmSync(file, { force: true });
    const child = spawn(process.execPath, [svcBin, 'backup', '--to', file, '--home', svc.home], { stdio: 'ignore', env: { ...process.env, SVC_URL: '', SVC_API_KEY: '' } });
    const exited = new Promise((r) => child.on('exit', r));
    let sawPartial = false;
    await until('the partial file or the end', () => {
      sawPartial = fs.readdirSync(dir).some((n) => n.startsWith('.killed.svcbackup.partial-'));
      return sawPartial || child.exitCode !== null ? true : undefined;
    }, 30_000, 1);
    child.kill('SIGKILL');
    await exited;
    if (sawPartial) interrupted++;
    if (fs.existsSync(file)) {
      await t.resolves(checkBackupFile(file), 'a file under the name is complete (the kill came after the rename)');
    } else if (sawPartial) {
      t.pass('killed while writing: no file under the backup\'s name');
    }
    for (const leftover of fs.readdirSync(dir).filter((n) => n.includes('.partial-'))) {
      await t.rejects(checkBackupFile(path.join(dir, leftover)), 'a leftover partial file never checks as complete');
      fs.rmSync(path.join(dir, leftover));
    }
  }
  t.ok(interrupted >= 1, `at least one kill hit a backup being written (${interrupted})`);
  // The service is unharmed and backs up again.
  const after = await svcCli(['backup', '--to', file, '--home', svc.home, '--force']);
  t.equal(after.code, 0, 'a later backup succeeds');
});
