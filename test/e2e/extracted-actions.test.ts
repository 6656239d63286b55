/**
 * Codes and links (issue 20 §2, docs/extraction.md) end to end: a verification mail sent over
 * SMTP into the built-in edge carries its one-time code and its action links in the
 * `message.received` event, on the message read and in the wait answer; mail stored before
 * migration 15 (no stored value) gets the same on read; deleting the message redacts them from
 * the stored event.
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import WebSocket from 'ws';
import { api, startSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { deliveredEvents, openHomeDb } from '../helpers/db.js';

const enc = encodeURIComponent;
interface Extracted {
  codes: { value: string; context: string }[];
  links: { url: string; text: string | null; kind: string }[];
}

t.test('a verification mail over SMTP carries its code and links everywhere it is read', async (t) => {
  const dns = await startLoopbackDns({});
  t.teardown(() => dns.close());
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  t.teardown(() => svc.stop());
  const owner = svc.ownerToken;
  t.equal((await api(svc.url, 'POST', '/v0/inboxes', { token: owner, body: { username: 'agent', domain: 'codes.test' } })).status, 200);
  const ready = svc.stdoutLines.find((l) => l.event === 'server.ready')!;
  const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: Number(String(ready.smtp).split(':')[1]), secure: false, ignoreTLS: true });

  const ws = new WebSocket(svc.url.replace('http', 'ws') + '/v0/ws', { headers: { authorization: `Bearer ${owner}` } });
  t.teardown(() => ws.close());
  await new Promise((r) => ws.once('open', r));
  ws.send(JSON.stringify({ type: 'subscribe', event_types: ['message.received'] }));
  const event = new Promise<{ message: { message_id: string; extracted: Extracted } }>((resolve) =>
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { event_type?: string; message?: { subject?: string; message_id: string; extracted: Extracted } };
      if (frame.event_type === 'message.received' && frame.message?.subject === 'Confirm your Example account') resolve(frame as never);
    }),
  );

  const html = `<p>Hi! Your verification code is <b>482913</b>. It expires in 10 minutes.</p>
    <p><a href="https://example.test/verify?token=abc123">Confirm your email address</a></p>
    <p>Order history: <a href="https://example.test/orders">your orders</a></p>
    <p><a href="https://example.test/unsubscribe?u=1">Unsubscribe</a></p>`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await smtp.sendMail({
        from: 'Example <noreply@example.test>',
        to: 'agent@codes.test',
        subject: 'Confirm your Example account',
        text: 'Hi! Your verification code is 482913. It expires in 10 minutes.\nConfirm: https://example.test/verify?token=abc123',
        html,
        headers: { 'List-Unsubscribe': '<https://example.test/unsubscribe?u=1>, <mailto:unsub@example.test>' },
      });
      break;
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  const received = await event;
  const extracted = received.message.extracted;
  t.equal(extracted.codes[0]?.value, '482913', 'the code, first');
  t.match(extracted.codes[0]?.context, /verification code/);
  const kinds = new Map(extracted.links.map((l) => [l.url, l.kind]));
  t.equal(kinds.get('https://example.test/verify?token=abc123'), 'verification');
  t.equal(kinds.get('https://example.test/unsubscribe?u=1'), 'unsubscribe');
  t.equal(extracted.links[0]?.url, 'https://example.test/verify?token=abc123', 'the verification link comes first');
  t.equal(extracted.links.find((l) => l.kind === 'verification')?.text, 'Confirm your email address', 'with its anchor text');

  const path = `/v0/inboxes/${enc('agent@codes.test')}/messages/${enc(received.message.message_id)}`;
  const read = await api<{ extracted: Extracted }>(svc.url, 'GET', path, { token: owner });
  t.same(read.body.extracted, extracted, 'the message read carries the same');
  const waited = await api<{ extracted: Extracted }>(svc.url, 'GET', `/v0/inboxes/${enc('agent@codes.test')}/messages/wait?after=2000-01-01T00:00:00Z&subject=confirm&timeout=0`, { token: owner });
  t.same(waited.body.extracted, extracted, 'and the wait answer');

  const db = openHomeDb(svc.home);
  t.teardown(() => db.close());
  // Mail stored before migration 15 has no stored value: the read finds the same from the stored bodies.
  db.prepare('UPDATE messages SET actions = NULL WHERE message_id = ?').run(received.message.message_id);
  const older = await api<{ extracted: Extracted }>(svc.url, 'GET', path, { token: owner });
  t.same(older.body.extracted, extracted, 'computed on read for older mail');

  t.equal((await api(svc.url, 'DELETE', path, { token: owner })).status, 200);
  const stored = { payload: deliveredEvents(db, "event_type = 'message.received'").at(-1)! };
  const payload = JSON.parse(stored.payload) as { message: { extracted: unknown; redacted?: boolean } };
  t.equal(payload.message.redacted, true);
  t.equal(payload.message.extracted, null, 'codes and links are redacted from the stored event');
  t.notOk(stored.payload.includes('482913'), 'the code is nowhere in the event');
});
