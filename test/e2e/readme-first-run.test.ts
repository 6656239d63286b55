/**
 * The README's first run (issue 33 §7), pasted as printed: set the owner password with the setup
 * code, list the sessions with the cookie and its CSRF token, create an inbox with the owner token,
 * mail it and read it back. The commands are read from README.md's blocks before "Using the CLI",
 * so the test breaks when the README does. Substitutions, and only these: the service is started
 * by the test (`npm start`'s stand-in) with HOME at a temporary directory; its URL and SMTP address
 * replace the README's defaults; the setup code replaces `ABCDE-FGHJK`; `swaks`, which Debian does
 * not install by default, is replaced by the same message sent with nodemailer ("or any SMTP client").
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import nodemailer from 'nodemailer';
import t from 'tap';
import { repoRoot, startSvc, tempDir } from '../helpers/svc.js';

const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
const firstRun = readme.split(/^## Using the CLI/m)[0];
const blocks = [...firstRun.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
// Block 0 is the two set-up commands (npm install …); the walkthrough is what follows.
const walkthrough = blocks.slice(1).join('\n');

const home = tempDir();
const svc = await startSvc({ home: path.join(home, '.local', 'share', 'svc-dev'), args: ['--local-edge'], env: { HOME: home } });
t.teardown(() => svc.stop());
const smtp = String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp);

t.test('the README names the defaults it is about to use', async (t) => {
  t.match(walkthrough, /URL=http:\/\/127\.0\.0\.1:8733/);
  t.match(walkthrough, /ABCDE-FGHJK/);
  t.match(walkthrough, /X-Svc-CSRF: \$CSRF/, 'the session request carries the CSRF header');
});

t.test('pasted as printed, the first run sets the password, lists the session, creates an inbox and reads the mail', async (t) => {
  const lines = walkthrough.split('\n');
  const swaks = lines.findIndex((l) => l.startsWith('swaks '));
  t.ok(swaks > 0, 'the README mails the inbox with an SMTP client');
  const before = lines.slice(0, swaks).join('\n').replaceAll('http://127.0.0.1:8733', svc.url).replaceAll('ABCDE-FGHJK', svc.setupCode!);
  const after = lines.slice(swaks + 1).join('\n');
  const env = { ...process.env, HOME: home };
  for (const name of ['SVC_URL', 'SVC_API_KEY', 'SVC_HOME', 'XDG_DATA_HOME']) delete env[name];
  // In a scratch directory: the walkthrough writes its cookie jar where it runs.
  const cwd = tempDir('svc-readme-');
  const first = spawnSync('bash', ['-c', `set -euo pipefail\n${before}\necho "URL=$URL"`], { cwd, env, encoding: 'utf8', timeout: 60_000 });
  t.equal(first.status, 0, `the commands before the SMTP client ran: ${first.stderr}`);
  t.match(first.stdout, /"sessions":\[\{"session_id"/, 'the session list answered (the CSRF header made it a session)');
  t.match(first.stdout, /"inbox_id":"hello@example\.test"/, 'the inbox was created');

  const [host, port] = smtp.split(':');
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false, ignoreTLS: true });
  await transport.sendMail({ from: 'swaks@example.org', to: 'hello@example.test', subject: 'test', text: 'This is a test mailing' });

  let listed = '';
  for (let i = 0; i < 60 && !listed.includes('"subject":"test"'); i++) {
    const run = spawnSync('bash', ['-c', `set -euo pipefail\nURL=${svc.url}\nTOKEN=$(node -p "require(process.env.HOME + '/.local/share/svc-dev/connection.json').owner_token")\n${after}`], { cwd, env, encoding: 'utf8', timeout: 60_000 });
    listed = run.stdout;
    if (!listed.includes('"subject":"test"')) await new Promise((r) => setTimeout(r, 500));
  }
  t.match(listed, /"subject":"test"/, 'the message is listed');
});
