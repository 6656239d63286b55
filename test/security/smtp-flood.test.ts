/**
 * Issue 16 finding 8: SMTP connection exhaustion. Against a real `svc serve --local-edge`, one
 * address (127.0.0.1) opens as many idle connections as the whole server admits (maxClients) plus
 * a few more and says nothing. Only the per-client maximum gets a greeting; the rest get 421 at
 * once. A sender from another address (127.0.0.2: Linux routes all of 127/8 to lo) still gets its
 * message accepted and delivered while the flood holds its connections, and once the flood lets
 * go, its address may connect again (the count is released).
 */
import t from 'tap';
import net from 'node:net';
import nodemailer from 'nodemailer';
import { MAX_SMTP_CLIENTS, MAX_SMTP_CONNECTIONS_PER_CLIENT } from '../../src/edge/limits.js';
import { api, startSvc } from '../helpers/svc.js';
import { subscribe } from '../helpers/events.js';

const FLOOD = MAX_SMTP_CLIENTS + 5;

/** Opens a connection from `localAddress` and resolves with the server's first reply line (or '' if closed first). */
function firstReply(port: number, localAddress: string): Promise<{ socket: net.Socket; line: string }> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress });
    let buffered = '';
    let done = false;
    const finish = (line: string) => {
      if (done) return;
      done = true;
      resolve({ socket, line });
    };
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      const end = buffered.indexOf('\r\n');
      if (end !== -1) finish(buffered.slice(0, end));
    });
    socket.on('error', () => finish(''));
    socket.on('close', () => finish(''));
  });
}

t.test('one address holding idle connections cannot lock out other senders', async (t) => {
  const svc = await startSvc({ args: ['--local-edge'] });
  t.teardown(() => svc.stop());
  const events = await subscribe(svc.url, svc.ownerToken);
  t.teardown(() => events.close());
  const created = await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'ops', domain: 'flood.test' } });
  t.equal(created.status, 200);
  const inbox = created.body.inbox_id;
  const port = Number(String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp).split(':')[1]);

  const flood = await Promise.all(Array.from({ length: FLOOD }, () => firstReply(port, '127.0.0.1')));
  t.teardown(() => flood.forEach((c) => c.socket.destroy()));
  const greeted = flood.filter((c) => c.line.startsWith('220 '));
  const refused = flood.filter((c) => c.line.startsWith('421 '));
  t.equal(greeted.length, MAX_SMTP_CONNECTIONS_PER_CLIENT, 'only the per-client maximum is greeted');
  t.equal(refused.length, FLOOD - MAX_SMTP_CONNECTIONS_PER_CLIENT, 'every connection past it is told 421');

  // While the flood holds its connections, another address sends as usual.
  const client = nodemailer.createTransport({ host: '127.0.0.1', port, localAddress: '127.0.0.2', secure: false, ignoreTLS: true });
  const info = await client.sendMail({ from: 'peer@sender.test', to: inbox, subject: 'Through the flood', text: 'Still here.' });
  t.match(info.response, /^250 /, 'accepted (250) from 127.0.0.2');
  const received = await events.next('message.received', (e) => (e.message as { inbox_id: string }).inbox_id === inbox);
  t.equal((received.message as { subject: string }).subject, 'Through the flood', 'and delivered to the inbox');

  // The flood lets go: its address is admitted again (the per-client count was released).
  for (const c of flood) c.socket.destroy();
  let again = '';
  for (let attempt = 0; attempt < 100 && !again.startsWith('220 '); attempt++) {
    const probe = await firstReply(port, '127.0.0.1');
    again = probe.line;
    probe.socket.destroy();
    if (!again.startsWith('220 ')) await new Promise((r) => setTimeout(r, 50));
  }
  t.match(again, /^220 /, '127.0.0.1 is greeted again once its connections are closed');
});
