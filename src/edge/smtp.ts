/**
 * The SMTP receiver: inbound only (no AUTH), RCPT limited to the routing table, size enforced by
 * SIZE and by counting DATA bytes, and no `250` until `accept` has the message on disk.
 *
 * Replies (enhanced status codes on): unrouted recipient 550 5.1.1; no routing yet 451 4.3.0;
 * too many recipients 452 4.5.3; oversized 552; storage or processing failure 451 4.3.0.
 */
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { MAX_RECIPIENTS_PER_MESSAGE, MAX_SMTP_CLIENTS, SMTP_CLOSE_GRACE_MS, SMTP_SOCKET_TIMEOUT_MS } from './limits.js';
import type { RoutingTable } from './routing.js';

export interface ReceivedMessage {
  raw: Buffer;
  clientIp: string;
  helo: string;
  mailFrom: string;
  recipients: string[];
  receivedAt: Date;
}

export interface TlsFiles {
  key: Buffer | string;
  cert: Buffer | string;
}

export interface ReceiverContext {
  hostname: string;
  maxMessageBytes: number;
  routing: RoutingTable;
  /** Offers STARTTLS when set; without it the receiver speaks cleartext only (loopback, tests). */
  tls?: TlsFiles;
  /** Stores the message durably and returns its object key; throws an SmtpReply to refuse it. */
  accept(message: ReceivedMessage): Promise<string>;
  stopping(): boolean;
}

/** An error smtp-server turns into the reply `code message`. */
export class SmtpReply extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
  }
}

const TEMPORARY_FAILURE = () => new SmtpReply(451, 'Temporary local problem; please try again later');

/** Sockets on a dual-stack listener report IPv4 clients as ::ffff:a.b.c.d; SPF needs the plain form. */
export function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

export function createSmtpReceiver(ctx: ReceiverContext): SMTPServer {
  return new SMTPServer({
    name: ctx.hostname,
    banner: 'svc edge',
    size: ctx.maxMessageBytes,
    rejectOversized: true,
    hideENHANCEDSTATUSCODES: false,
    disabledCommands: ctx.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    authOptional: true,
    // The reverse name is not used for any decision, and the lookup would go to the system resolver.
    disableReverseLookup: true,
    maxClients: MAX_SMTP_CLIENTS,
    socketTimeout: SMTP_SOCKET_TIMEOUT_MS,
    closeTimeout: SMTP_CLOSE_GRACE_MS,
    logger: false,
    ...(ctx.tls ? { key: ctx.tls.key, cert: ctx.tls.cert } : {}),

    onConnect(_session, callback) {
      if (ctx.stopping()) return callback(new SmtpReply(421, 'Shutting down; try again later'));
      callback();
    },

    onMailFrom(_address, _session, callback) {
      // Any sender may deliver to a routed recipient; SPF/DMARC are judged on the whole message.
      callback();
    },

    onRcptTo(address, session, callback) {
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS_PER_MESSAGE) {
        return callback(new SmtpReply(452, 'Too many recipients in one message'));
      }
      const decision = ctx.routing.decide(address.address);
      if (!decision.accept) return callback(new SmtpReply(decision.code, decision.message));
      callback();
    },

    onData(stream: SMTPServerDataStream, session: SMTPServerSession, reply) {
      let answered = false;
      const callback = (err: Error | null, message?: string) => {
        if (answered) return;
        answered = true;
        reply(err, message);
      };
      const chunks: Buffer[] = [];
      let bytes = 0;
      let oversized = false;
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > ctx.maxMessageBytes) {
          // Keep reading (the client is still sending) but stop holding the bytes.
          oversized = true;
          chunks.length = 0;
          return;
        }
        chunks.push(chunk);
      });
      stream.once('error', () => callback(TEMPORARY_FAILURE()));
      stream.once('end', () => {
        if (oversized || stream.sizeExceeded) return callback(new SmtpReply(552, `Message exceeds the maximum size of ${ctx.maxMessageBytes} bytes`));
        const message: ReceivedMessage = {
          raw: Buffer.concat(chunks, bytes),
          clientIp: plainAddress(session.remoteAddress),
          helo: session.hostNameAppearsAs || '',
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          recipients: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
          receivedAt: new Date(),
        };
        ctx.accept(message).then(
          (key) => callback(null, `OK: queued as ${key}`),
          (err: unknown) => callback(err instanceof SmtpReply ? err : TEMPORARY_FAILURE()),
        );
      });
    },
  });
}
