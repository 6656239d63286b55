/**
 * The SMTP receiver: inbound only (no AUTH), RCPT limited to the routing table, size enforced by
 * SIZE and by counting DATA bytes, and no `250` until `accept` has the message on disk.
 *
 * Replies (enhanced status codes on): unrouted recipient 550 5.1.1; no routing yet 451 4.3.0;
 * too many recipients 452 4.5.3; oversized 552; storage or processing failure 451 4.3.0; more than
 * MAX_SMTP_CONNECTIONS_PER_CLIENT open connections from one client 421 at connect.
 */
import net from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { MAX_RECIPIENTS_PER_MESSAGE, MAX_SMTP_CLIENTS, MAX_SMTP_CONNECTIONS_PER_CLIENT, SMTP_CLOSE_GRACE_MS, SMTP_SOCKET_TIMEOUT_MS } from './limits.js';
import type { RoutingTable } from './routing.js';

export interface ReceivedMessage {
  /**
   * The message exactly as received after DATA (dot-unstuffed), in the chunks it arrived in: they
   * are joined only where one buffer is needed (`wholeMessage`), so a large message is held once.
   */
  chunks: Buffer[];
  /** Its size in bytes. */
  size: number;
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

/** The message as one buffer (joined once, then kept: a second caller gets the same buffer). */
export function wholeMessage(message: ReceivedMessage): Buffer {
  if (message.chunks.length !== 1) message.chunks = [Buffer.concat(message.chunks, message.size)];
  return message.chunks[0];
}

const TEMPORARY_FAILURE = () => new SmtpReply(451, 'Temporary local problem; please try again later');

/** Sockets on a dual-stack listener report IPv4 clients as ::ffff:a.b.c.d; SPF needs the plain form. */
export function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/**
 * Who a connection counts against for the per-client cap: the IPv4 address, or the /64 of an
 * IPv6 address (one subscriber usually gets a whole /64, so single IPv6 addresses are free to vary).
 */
export function clientKey(remoteAddress: string): string {
  const address = plainAddress(remoteAddress);
  if (net.isIPv6(address)) return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
  return address;
}

function expandIPv6(address: string): string[] {
  const [head, tail] = address.split('::');
  const part = (s: string | undefined) => (s ? s.split(':') : []);
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  const groups = [...left, ...Array.from({ length: Math.max(0, 8 - left.length - right.length) }, () => '0'), ...right];
  return groups.map((g) => (g.includes('.') ? g : parseInt(g || '0', 16).toString(16)));
}

/** Open sessions per client key, so one address cannot take every slot of `maxClients`. */
class ClientConnections {
  private readonly perClient = new Map<string, number>();
  private readonly counted = new Map<string, string>();

  /** Counts the session in; false (and not counted) when its client already has the maximum. */
  admit(session: SMTPServerSession): boolean {
    const key = clientKey(session.remoteAddress);
    const open = this.perClient.get(key) ?? 0;
    if (open >= MAX_SMTP_CONNECTIONS_PER_CLIENT) return false;
    this.perClient.set(key, open + 1);
    this.counted.set(session.id, key);
    return true;
  }

  release(session: SMTPServerSession): void {
    const key = this.counted.get(session.id);
    if (key === undefined) return;
    this.counted.delete(session.id);
    const open = (this.perClient.get(key) ?? 1) - 1;
    if (open > 0) this.perClient.set(key, open);
    else this.perClient.delete(key);
  }
}

export function createSmtpReceiver(ctx: ReceiverContext): SMTPServer {
  const clients = new ClientConnections();
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

    onConnect(session, callback) {
      if (ctx.stopping()) return callback(new SmtpReply(421, 'Shutting down; try again later'));
      if (!clients.admit(session)) return callback(new SmtpReply(421, 'Too many connections from your address; try again later'));
      callback();
    },

    onClose(session) {
      clients.release(session);
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
        // The chunks stay reachable from this session's listeners; hand over a copy of the list and empty it.
        const received = chunks.splice(0, chunks.length);
        const message: ReceivedMessage = {
          chunks: received,
          size: bytes,
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
