/** `svc serve --local-edge` (issue 4.2): the built-in edge in-process, paired automatically. */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { api, startSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';

t.test('a newcomer can send a message with any SMTP client and see it arrive', async (t) => {
  const dns = await startLoopbackDns({});
  t.teardown(() => dns.close());
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  t.teardown(() => svc.stop());
  const ready = svc.stdoutLines.find((l) => l.event === 'server.ready')!;
  t.match(ready.smtp, /^127\.0\.0\.1:\d+$/, 'server.ready reports the SMTP port');
  const transport = await api(svc.url, 'GET', '/v0/owner/transport', { token: svc.ownerToken });
  t.match(transport.body, { configured: true, edge: { url: /^http:\/\/127\.0\.0\.1:\d+$/, token_set: true } });
  t.ok(fs.existsSync(path.join(svc.home, 'edge')), 'the edge keeps its buffer inside the home');

  const created = await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'hello', domain: 'local.test' } });
  t.equal(created.status, 200);
  const [, port] = String(ready.smtp).split(':');
  const client = nodemailer.createTransport({ host: '127.0.0.1', port: Number(port), secure: false, ignoreTLS: true });
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await client.sendMail({ from: 'someone@elsewhere.test', to: 'hello@local.test', subject: 'Hi from swaks', text: 'It works.' });
      break;
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  let subjects: string[] = [];
  while (!subjects.includes('Hi from swaks') && Date.now() < deadline) {
    const res = await api<{ messages: { subject: string }[] }>(svc.url, 'GET', '/v0/inboxes/hello%40local.test/messages', { token: svc.ownerToken });
    subjects = res.body.messages.map((m) => m.subject);
    await new Promise((r) => setTimeout(r, 150));
  }
  t.ok(subjects.includes('Hi from swaks'));
});

t.test('the SMTP port can be fixed and --smtp-port needs --local-edge', async (t) => {
  const svc = await startSvc({ args: ['--smtp-port', '2599'], init: true }).catch((err: Error) => err);
  t.type(svc, Error, 'refused without --local-edge');
});
