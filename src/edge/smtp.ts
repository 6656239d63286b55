/**
 * The SMTP receiver: inbound only (no AUTH), RCPT limited to the routing table, size enforced by
 * SIZE and by counting DATA bytes, and no `250` until `accept` has the message on disk.
 *
 * Replies (enhanced status codes on): unrouted recipient 550 5.1.1; no routing yet 451 4.3.0;
 * too many recipients 452 4.5.3; oversized 552; storage or processing failure 451 4.3.0; a
 * connection past its client's or its network's share, or past the shared slots when its network
 * already has one open, 421 at connect (ConnectionSlots).
 */
import net from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import {
  MAX_RECIPIENTS_PER_MESSAGE,
  MAX_SMTP_CLIENTS,
  MAX_SMTP_CONNECTIONS_PER_CLIENT,
  MAX_SMTP_CONNECTIONS_PER_NETWORK,
  MAX_SMTP_SOCKETS,
  SMTP_CLOSE_GRACE_MS,
  SMTP_SLOTS_FOR_NEW_NETWORKS,
  SMTP_SOCKET_TIMEOUT_MS,
} from './limits.js';
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

/**
 * The network a connection also counts against: the IPv4 /24, or the IPv6 /48 (a site's usual
 * allocation), so one operator's many addresses share one allowance.
 */
export function networkKey(remoteAddress: string): string {
  const address = plainAddress(remoteAddress);
  if (net.isIPv6(address)) return `${expandIPv6(address).slice(0, 3).join(':')}::/48`;
  return `${address.split('.').slice(0, 3).join('.')}.0/24`;
}

function expandIPv6(address: string): string[] {
  const [head, tail] = address.split('::');
  const part = (s: string | undefined) => (s ? s.split(':') : []);
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  const groups = [...left, ...Array.from({ length: Math.max(0, 8 - left.length - right.length) }, () => '0'), ...right];
  return groups.map((g) => (g.includes('.') ? g : parseInt(g || '0', 16).toString(16)));
}

/** Why a connection was turned away, as its 421 text. */
const REFUSALS = {
  client: 'Too many connections from your address; try again later',
  network: 'Too many connections from your network; try again later',
  busy: 'Too many connections; try again later',
} as const;

/**
 * Open sessions per client and per network, so no one address, no one network and no handful of
 * networks can take every slot of MAX_SMTP_CLIENTS (docs/edge.md "SMTP"): each is capped, and the
 * last SMTP_SLOTS_FOR_NEW_NETWORKS slots go one per network that has nothing open.
 */
class ConnectionSlots {
  private open = 0;
  private readonly perClient = new Map<string, number>();
  private readonly perNetwork = new Map<string, number>();
  private readonly counted = new Map<string, { client: string; network: string }>();

  /** Counts the session in, or says why not (and does not count it). */
  admit(session: SMTPServerSession): keyof typeof REFUSALS | null {
    const client = clientKey(session.remoteAddress);
    const network = networkKey(session.remoteAddress);
    const ofClient = this.perClient.get(client) ?? 0;
    const ofNetwork = this.perNetwork.get(network) ?? 0;
    if (ofClient >= MAX_SMTP_CONNECTIONS_PER_CLIENT) return 'client';
    if (ofNetwork >= MAX_SMTP_CONNECTIONS_PER_NETWORK) return 'network';
    if (this.open >= MAX_SMTP_CLIENTS) return 'busy';
    if (this.open >= MAX_SMTP_CLIENTS - SMTP_SLOTS_FOR_NEW_NETWORKS && ofNetwork > 0) return 'busy';
    this.open++;
    this.perClient.set(client, ofClient + 1);
    this.perNetwork.set(network, ofNetwork + 1);
    this.counted.set(session.id, { client, network });
    return null;
  }

  release(session: SMTPServerSession): void {
    const keys = this.counted.get(session.id);
    if (keys === undefined) return;
    this.counted.delete(session.id);
    this.open--;
    decrement(this.perClient, keys.client);
    decrement(this.perNetwork, keys.network);
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

export function createSmtpReceiver(ctx: ReceiverContext): SMTPServer {
  const slots = new ConnectionSlots();
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
    // ConnectionSlots admits at most MAX_SMTP_CLIENTS sessions; this bounds sockets, refused ones included.
    maxClients: MAX_SMTP_SOCKETS,
    socketTimeout: SMTP_SOCKET_TIMEOUT_MS,
    closeTimeout: SMTP_CLOSE_GRACE_MS,
    logger: false,
    ...(ctx.tls ? { key: ctx.tls.key, cert: ctx.tls.cert } : {}),

    onConnect(session, callback) {
      if (ctx.stopping()) return callback(new SmtpReply(421, 'Shutting down; try again later'));
      const refused = slots.admit(session);
      if (refused) return callback(new SmtpReply(421, REFUSALS[refused]));
      callback();
    },

    onClose(session) {
      slots.release(session);
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
