/**
 * Issue 16 finding 8 and issue 32: SMTP connection exhaustion. Against a real `svc serve --local-edge`, one
 * address (127.0.0.1) opens as many idle connections as the whole server admits (maxClients) plus
 * a few more and says nothing. Only the per-client maximum gets a greeting; the rest get 421 at
 * once. A sender from another address (127.0.0.2: Linux routes all of 127/8 to lo) still gets its
 * message accepted and delivered while the flood holds its connections, and once the flood lets
 * go, its address may connect again (the count is released).
 *
 * Issue 32: ten addresses of one network used to fill all 200 slots. Now one network (an IPv4 /24)
 * holds at most its own share; a few networks together fill only the shared slots; the last slots
 * go one per network that has nothing open, so an attacker needs a new network for each, while
 * a sender from a fresh network is greeted and delivers. 127.0.x.y are all loopback on Linux.
 */
import t from 'tap';
import net from 'node:net';
import nodemailer from 'nodemailer';
import { MAX_SMTP_CLIENTS, MAX_SMTP_CONNECTIONS_PER_CLIENT, MAX_SMTP_CONNECTIONS_PER_NETWORK, SMTP_SLOTS_FOR_NEW_NETWORKS } from '../../src/edge/limits.js';
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

/** Opens `count` connections from each address at once; greeted ones are kept, refused ones closed. */
async function openFrom(port: number, addresses: string[], count: number): Promise<{ greeted: { socket: net.Socket; from: string }[]; refusals: string[] }> {
  const replies = await Promise.all(addresses.flatMap((from) => Array.from({ length: count }, async () => ({ from, ...(await firstReply(port, from)) }))));
  const greeted = replies.filter((r) => r.line.startsWith('220 '));
  const refused = replies.filter((r) => !r.line.startsWith('220 '));
  for (const r of refused) r.socket.destroy();
  return { greeted, refusals: refused.map((r) => r.line) };
}

const inNetwork = (network: number, hosts: number) => Array.from({ length: hosts }, (_, i) => `127.0.${network}.${i + 1}`);

t.test('many addresses in a few networks cannot take every slot; a fresh network still delivers', async (t) => {
  const svc = await startSvc({ args: ['--local-edge'] });
  t.teardown(() => svc.stop());
  const events = await subscribe(svc.url, svc.ownerToken);
  t.teardown(() => events.close());
  const created = await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'ops', domain: 'flood.test' } });
  const inbox = created.body.inbox_id;
  const port = Number(String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp).split(':')[1]);
  const held: net.Socket[] = [];
  t.teardown(() => held.forEach((s) => s.destroy()));

  // The finding: 10 addresses of one /24 × 20 connections each.
  const oneNetwork = await openFrom(port, inNetwork(0, 10), MAX_SMTP_CONNECTIONS_PER_CLIENT);
  held.push(...oneNetwork.greeted.map((g) => g.socket));
  t.equal(oneNetwork.greeted.length, MAX_SMTP_CONNECTIONS_PER_NETWORK, 'one network gets only its share');
  t.ok(oneNetwork.refusals.every((l) => /^421 /.test(l)), 'the rest are told 421');
  t.ok(oneNetwork.refusals.some((l) => /your network/.test(l)), 'saying the network is over its share');

  // Next: several networks, several addresses each, all at once.
  const attackerNetworks = [1, 2, 3, 4];
  const several = await openFrom(port, attackerNetworks.flatMap((n) => inNetwork(n, 3)), MAX_SMTP_CONNECTIONS_PER_CLIENT);
  held.push(...several.greeted.map((g) => g.socket));
  const shared = MAX_SMTP_CLIENTS - SMTP_SLOTS_FOR_NEW_NETWORKS;
  const taken = oneNetwork.greeted.length + several.greeted.length;
  t.ok(taken >= shared, `the attacker fills the shared slots (${taken})`);
  t.ok(taken <= shared + attackerNetworks.length, `and no more than one slot per network beyond them (${taken})`);
  for (const n of attackerNetworks) {
    const ofNetwork = several.greeted.filter((g) => g.from.startsWith(`127.0.${n}.`)).length;
    t.ok(ofNetwork <= MAX_SMTP_CONNECTIONS_PER_NETWORK, `network ${n} holds ${ofNetwork}, within its share`);
  }

  // A network that already holds slots gets nothing more, from a new address either.
  const busiest = await openFrom(port, ['127.0.1.77', '127.0.0.77'], 2);
  t.equal(busiest.greeted.length, 0, 'networks holding slots are refused first');
  t.ok(busiest.refusals.every((l) => /^421 /.test(l)));

  // A spread attacker gets one slot per new network, no more.
  const spread = await openFrom(port, Array.from({ length: 10 }, (_, i) => `127.0.${10 + i}.1`), 3);
  held.push(...spread.greeted.map((g) => g.socket));
  t.equal(spread.greeted.length, 10, 'each new network gets exactly one slot');
  t.equal(new Set(spread.greeted.map((g) => g.from)).size, 10);

  // A sender from a network with nothing open is greeted and delivers, while all of that is held.
  const fresh = await firstReply(port, '127.0.200.1');
  t.match(fresh.line, /^220 /, 'a fresh network is greeted');
  fresh.socket.destroy();
  const client = nodemailer.createTransport({ host: '127.0.0.1', port, localAddress: '127.0.201.1', secure: false, ignoreTLS: true });
  const info = await client.sendMail({ from: 'peer@sender.test', to: inbox, subject: 'Past the crowd', text: 'Still here.' });
  t.match(info.response, /^250 /, 'accepted (250) from a fresh network');
  const received = await events.next('message.received', (e) => (e.message as { inbox_id: string }).inbox_id === inbox);
  t.equal((received.message as { subject: string }).subject, 'Past the crowd', 'and delivered to the inbox');
});
