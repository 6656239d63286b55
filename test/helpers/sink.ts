/**
 * A real SMTP server on loopback standing in for a smart host or a remote MX. Its `mode` decides
 * how the next messages are answered: accept, a permanent 5xx, a temporary 4xx, or hanging up
 * after the data arrived (the lost-answer case).
 */
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { until } from './until.js';

export interface SunkMessage {
  from: string;
  to: string[];
  raw: Buffer;
}

export type SinkMode = 'accept' | 'reject' | 'defer' | 'hangup';

export interface Sink {
  port: number;
  messages: SunkMessage[];
  mode: SinkMode;
  /** Connections seen (including ones that failed). */
  attempts: number;
  /** Resolves once `count` messages were accepted, or rejects after `ms`. */
  waitFor(count: number, ms?: number): Promise<SunkMessage[]>;
  close(): Promise<void>;
}

export async function startSink(mode: SinkMode = 'accept'): Promise<Sink> {
  const messages: SunkMessage[] = [];
  const sink: Sink = {
    port: 0,
    messages,
    mode,
    attempts: 0,
    waitFor: (count, ms) => until(() => `${count} messages at the sink; it has ${messages.length}`, () => messages.length >= count && messages, ms),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onConnect(_session, cb) {
      sink.attempts++;
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        switch (sink.mode) {
          case 'reject':
            return cb(Object.assign(new Error('5.7.1 Message refused by policy'), { responseCode: 550 }));
          case 'defer':
            return cb(Object.assign(new Error('4.3.0 Try again later'), { responseCode: 451 }));
          case 'hangup':
            // The data arrived; the answer never does.
            for (const c of (server as unknown as { connections: Set<{ _socket: { destroy(): void } }> }).connections) c._socket.destroy();
            return;
          default:
            messages.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), raw });
            cb();
        }
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  sink.port = (server.server.address() as AddressInfo).port;
  return sink;
}
