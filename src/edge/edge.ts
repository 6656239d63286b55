/**
 * The built-in edge (ARCHITECTURE §6): an SMTP receiver that seals each accepted message to the
 * home's public key and stores it durably before answering 250, and an API the home pulls from.
 * Runs standalone (`svc edge`) or inside `svc serve --local-edge`; the same code either way.
 */
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { SMTPServer } from 'smtp-server';
import type { MessagePort } from 'node:worker_threads';
import { buildEdgeApi } from './api.js';
import { serveLocalHandover } from './local-handover.js';
import { dnsResolver, evaluateAuth, type DNSResolver } from './auth.js';
import { cachingResolver } from './dns-cache.js';
import { SealedBuffer } from './buffer.js';
import { ensurePrivateDir } from './durable-files.js';
import { API_DRAIN_MS, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_RETRY_SCHEDULE_MS, MIN_API_TOKEN_LENGTH } from './limits.js';
import { OutboundStore } from './outbound-store.js';
import { OutboundRelay, type SmartHost } from './relay.js';
import { ReportLog } from './reports.js';
import { RoutingCorrupt, RoutingTable, type ReportAddressPolicy } from './routing.js';
import { COLLECT_AFTER_BYTES, collectGarbageSoon } from '../core/gc.js';
import { sealInbound, sealInboundInPlace, type InboundAuth, type InboundMeta, type SpamVerdict } from './sealed.js';
import { createSmtpReceiver, SmtpReply, wholeMessage, type ReceivedMessage, type TlsFiles } from './smtp.js';
import { checkSpam } from './spam.js';
import { deriveEdgeKey } from './verp.js';
import { MAX_PUBLIC_ADDRESSES, resolvePublicAddresses, type EdgeIdentity } from './identity.js';

export interface ListenAddress {
  host: string;
  /** 0 picks a free port; `start()` reports the one bound. */
  port: number;
}

export interface EdgeOptions {
  /** Holds routing.json, objects/, queue/ (created 0700). */
  dataDir: string;
  smtp: ListenAddress;
  api: ListenAddress;
  /** Bearer token every edge API request must present. */
  apiToken: string;
  /** This edge's host name: SMTP greeting and the `mta` in authentication results. */
  hostname: string;
  maxMessageBytes?: number;
  /** DNS for SPF/DKIM/DMARC/ARC; default: the system's name servers with a per-query timeout. */
  resolver?: DNSResolver;
  /** rspamd base URL (e.g. http://127.0.0.1:11333); without it no spam verdict is made. */
  spam?: string;
  /** Certificate for SMTP STARTTLS and HTTPS on the API (production); omitted → cleartext. */
  tls?: TlsFiles;
  /** Extra recipients on routed domains (issue 5: VERP return path and feedback addresses). */
  reportAddress?: ReportAddressPolicy;
  /** Operational lines (never content, addresses or credentials), e.g. storage failures. */
  log?: (line: Record<string, unknown>) => void;
  /** Port of remote MX hosts for outbound mail (default 25; tests point it at a loopback sink). */
  deliveryPort?: number;
  /** Send all outbound mail not hosted here through this host instead of the recipients' MX. */
  smartHost?: SmartHost;
  /** Waits after the 1st, 2nd, … temporary failure of a recipient; then it bounces. Default ≈ 2 days. */
  retryScheduleMs?: readonly number[];
  /** This edge's public addresses (`--public-ip`); those `hostname` resolves to are added at start. */
  publicAddresses?: string[];
  /** Name servers for resolving `hostname` (`--dns`); default: the system's. */
  dnsServers?: string[];
  /** The SPF mechanism the smart host's provider requires (`--smart-host-spf`), for the home's plan. */
  smartHostSpf?: string;
}

export interface EdgeAddresses {
  smtp: { host: string; port: number };
  api: { host: string; port: number; url: string };
}

/** Why the edge could not start, in the CLI's code/message/fix form. */
export class EdgeStartError extends Error {
  constructor(
    readonly code: 'service_unavailable' | 'action_required',
    message: string,
    readonly fix: string,
  ) {
    super(message);
  }
}

export class Edge {
  private readonly routing: RoutingTable;
  private readonly buffer: SealedBuffer;
  private readonly resolver: DNSResolver;
  private readonly maxMessageBytes: number;
  private readonly outbound: OutboundStore;
  private readonly reports: ReportLog;
  private readonly relay: OutboundRelay;
  private smtp: SMTPServer | null = null;
  private api: FastifyInstance | null = null;
  private stopping = false;
  private resolvedAddresses: string[] = [];
  private handovers: { close(): void }[] = [];

  constructor(private readonly options: EdgeOptions) {
    // A short or empty token would make the whole buffer guessable; refuse it outright.
    if (options.apiToken.length < MIN_API_TOKEN_LENGTH || /\s/.test(options.apiToken)) {
      throw new Error(`The edge API token must be at least ${MIN_API_TOKEN_LENGTH} characters without spaces.`);
    }
    this.routing = new RoutingTable(options.dataDir, options.reportAddress);
    this.buffer = new SealedBuffer(options.dataDir);
    // One cache per edge (src/edge/dns-cache.ts): authentication and relaying share it.
    this.resolver = cachingResolver(options.resolver ?? dnsResolver());
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    const outboundDir = path.join(options.dataDir, 'outbound');
    // Queued outbound mail is sealed under a key derived from the token, never kept in plaintext.
    this.outbound = new OutboundStore(outboundDir, deriveEdgeKey(options.apiToken, 'outbound-mime'));
    this.reports = new ReportLog(outboundDir);
    this.relay = new OutboundRelay({
      store: this.outbound,
      reports: this.reports,
      hostname: options.hostname,
      resolver: this.resolver,
      deliveryPort: options.deliveryPort ?? 25,
      smartHost: options.smartHost,
      retryScheduleMs: options.retryScheduleMs ?? DEFAULT_RETRY_SCHEDULE_MS,
      local: {
        kindOf: (address) => this.routing.kindOf(address),
        routesDomainOf: (address) => this.routing.routesDomainOf(address),
        reserveKey: () => this.buffer.reserveKey(),
        deliver: (input) => this.deliverLocally(input),
      },
      verpKey: deriveEdgeKey(options.apiToken, 'verp-tag'),
      log: options.log,
    });
    // Mail held for a new inbox's routing goes out as soon as the home pushes it.
    this.routing.onChange(() => this.relay.routingChanged());
  }

  async start(): Promise<EdgeAddresses> {
    const { dataDir } = this.options;
    try {
      ensurePrivateDir(dataDir);
      this.buffer.open();
      this.outbound.open();
      this.reports.open();
    } catch {
      throw new EdgeStartError('service_unavailable', `The edge data directory ${dataDir} cannot be created or written.`, 'Choose a writable directory with --data, or fix its permissions and free disk space.');
    }
    try {
      await this.routing.load();
    } catch (err) {
      if (err instanceof RoutingCorrupt) {
        throw new EdgeStartError('action_required', `${dataDir}/routing.json is damaged.`, 'Delete routing.json and let the home push its routing again (it does so every 10 seconds).');
      }
      throw new EdgeStartError('service_unavailable', `The routing file in ${dataDir} cannot be read.`, 'Fix the permissions of the edge data directory.');
    }
    try {
      const smtp = await this.listenSmtp();
      const api = await this.listenApi();
      this.relay.start();
      // In the background: a name that does not resolve (yet) must not hold the edge's start.
      void resolvePublicAddresses(this.options.hostname, this.options.dnsServers).then((found) => (this.resolvedAddresses = found));
      return { smtp, api };
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  /**
   * Takes a renewed certificate (src/edge/acme.ts) for new connections: SMTP STARTTLS and the
   * HTTPS API. Open sessions keep the one they started with; nothing restarts.
   */
  updateTls(tls: TlsFiles): void {
    this.options.tls = tls;
    this.smtp?.updateSecureContext({ key: tls.key, cert: tls.cert });
    const server = this.api?.server as { setSecureContext?: (o: { key: Buffer | string; cert: Buffer | string }) => void } | undefined;
    server?.setSecureContext?.({ key: tls.key, cert: tls.cert });
  }

  /** What the home's domain plan needs to know of this edge (src/edge/identity.ts). */
  identity(): EdgeIdentity {
    const smart = this.options.smartHost;
    return {
      hostname: this.options.hostname,
      public_addresses: [...new Set([...(this.options.publicAddresses ?? []), ...this.resolvedAddresses])].slice(0, MAX_PUBLIC_ADDRESSES),
      smart_host: smart ? { host: smart.host, spf: this.options.smartHostSpf ?? null } : null,
      managed_mx: null,
    };
  }

  /**
   * Serves the home of the same process on `port` (src/edge/local-handover.ts): the inbound
   * objects without the loopback API. Call after `start`.
   */
  handOverTo(port: MessagePort): void {
    this.handovers.push(serveLocalHandover(port, this.buffer));
  }

  /** Stops taking mail, answers pending long-polls, lets in-flight work finish. Safe to call twice. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.buffer.releaseWaiters();
    for (const handover of this.handovers.splice(0)) handover.close();
    const smtp = this.smtp;
    const api = this.api;
    this.smtp = null;
    this.api = null;
    await Promise.all([
      smtp ? new Promise<void>((resolve) => smtp.close(() => resolve())) : undefined,
      api ? closeApi(api) : undefined,
      this.relay.stop(),
    ]);
    await Promise.all([this.buffer.settle(), this.reports.settle(), this.outbound.settle()]);
  }

  private async listenSmtp(): Promise<EdgeAddresses['smtp']> {
    const { host, port } = this.options.smtp;
    const smtp = createSmtpReceiver({
      hostname: this.options.hostname,
      maxMessageBytes: this.maxMessageBytes,
      routing: this.routing,
      tls: this.options.tls,
      accept: (message) => this.accept(message),
      stopping: () => this.stopping,
    });
    // A client that drops mid-session is routine for an MX; it must never take the edge down.
    smtp.on('error', () => undefined);
    this.smtp = smtp;
    await new Promise<void>((resolve, reject) => {
      const onError = () => reject(listenFailed('SMTP', host, port, '--smtp-port'));
      smtp.server.once('error', onError);
      smtp.listen(port, host, () => {
        smtp.server.off('error', onError);
        resolve();
      });
    });
    return { host, port: (smtp.server.address() as AddressInfo).port };
  }

  private async listenApi(): Promise<EdgeAddresses['api']> {
    const { host, port } = this.options.api;
    const api = await buildEdgeApi({
      buffer: this.buffer,
      routing: this.routing,
      apiToken: this.options.apiToken,
      tls: this.options.tls,
      identity: () => this.identity(),
      outbound: { store: this.outbound, reports: this.reports, relay: this.relay, maxMessageBytes: this.maxMessageBytes },
    });
    this.api = api;
    try {
      await api.listen({ host, port });
    } catch {
      throw listenFailed('API', host, port, '--api-port');
    }
    const bound = (api.server.address() as AddressInfo).port;
    const scheme = this.options.tls ? 'https' : 'http';
    return { host, port: bound, url: `${scheme}://${host.includes(':') ? `[${host}]` : host}:${bound}` };
  }

  /**
   * Reports (mail to the VERP return path or the feedback address) go to the relay; the rest is
   * auth → spam → seal → durable commit. Only then may the receiver answer 250.
   */
  private async accept(message: ReceivedMessage): Promise<string> {
    if (!this.routing.sealingKey) throw new SmtpReply(451, 'This edge has no routing yet; try again later');
    const reportTo = message.recipients.filter((r) => this.routing.kindOf(r) === 'report');
    if (reportTo.length > 0) {
      try {
        await this.relay.takeReportMail(wholeMessage(message), reportTo);
      } catch (err) {
        this.options.log?.({ event: 'edge.store_failed', code: (err as NodeJS.ErrnoException).code ?? 'unknown', message: 'A delivery report could not be stored; the sender was told to retry (451).' });
        throw new SmtpReply(451, 'Temporary storage problem; please try again later');
      }
      if (reportTo.length === message.recipients.length) return 'report';
    }
    const mail = reportTo.length > 0 ? { ...message, recipients: message.recipients.filter((r) => !reportTo.includes(r)) } : message;
    const facts = { clientIp: mail.clientIp, helo: mail.helo, mailFrom: mail.mailFrom };
    const [auth, spam] = await Promise.all([
      // mailauth reads a stream: the chunks are not joined for it.
      evaluateAuth(Readable.from(mail.chunks, { objectMode: false }), { ...facts, hostname: this.options.hostname }, this.resolver),
      this.options.spam ? checkSpam(this.options.spam, wholeMessage(mail), { ...facts, recipients: mail.recipients }) : Promise.resolve(null),
    ]);
    return this.store(mail, auth, spam, { owned: true });
  }

  /**
   * Seals one message with its verdicts and commits it (under `key` when given: idempotent).
   * `owned`: nothing reads the message's chunks afterwards (a message received over SMTP), so a
   * large one is encrypted where it lies instead of into a second buffer of its size.
   */
  private async store(message: ReceivedMessage, auth: InboundAuth, spam: SpamVerdict, opts: { key?: string; owned?: boolean } = {}): Promise<string> {
    const sealing = this.routing.sealingKey;
    if (!sealing) throw new SmtpReply(451, 'This edge has no routing yet; try again later');
    const receivedAt = message.receivedAt.toISOString();
    const meta: Omit<InboundMeta, 'version'> = {
      envelope: { mail_from: message.mailFrom, rcpt_to: message.recipients, client_ip: message.clientIp, helo: message.helo, received_at: receivedAt },
      auth,
      spam,
    };
    // Sealed from the bytes into bytes: no base64 or JSON string of the message; a large one as
    // binary v2, so the object is the message's size (issue 16, finding 9).
    const jwe = opts.owned ? await sealInboundInPlace(meta, message.chunks, sealing) : await sealInbound(meta, message.chunks, sealing);
    // The message and its sealed copy are dead once the reply is written; V8 frees buffers
    // this large only at a full collection, which an idle edge may not run for a long time.
    if (message.size >= COLLECT_AFTER_BYTES) collectGarbageSoon();
    try {
      return await this.buffer.commit(jwe, { receivedAt, recipients: message.recipients, keyId: sealing.keyId, key: opts.key });
    } catch (err) {
      this.options.log?.({ event: 'edge.store_failed', code: (err as NodeJS.ErrnoException).code ?? 'unknown', message: 'A message could not be stored; the sender was told to retry (451).' });
      throw new SmtpReply(451, 'Temporary storage problem; please try again later');
    }
  }

  /**
   * The relay's delivery to a recipient this edge hosts: stored exactly like mail received over
   * SMTP, under the key the relay reserved. The home handed it over with its token, so the
   * verdict is an internal pass rather than a DNS check of the edge's own address.
   */
  private async deliverLocally(input: { raw: Buffer; mailFrom: string; recipient: string; key: string }): Promise<void> {
    const message: ReceivedMessage = {
      chunks: [input.raw],
      size: input.raw.length,
      clientIp: '127.0.0.1',
      helo: this.options.hostname,
      mailFrom: input.mailFrom,
      recipients: [input.recipient],
      receivedAt: new Date(),
    };
    // The relay's bytes go to its other recipients too: sealed into a buffer of their own.
    await this.store(message, localAuth(input.mailFrom), null, { key: input.key });
  }
}

/** The verdict of mail the home itself handed to this edge for a local recipient. */
function localAuth(mailFrom: string): InboundAuth {
  const domain = mailFrom.includes('@') ? mailFrom.slice(mailFrom.lastIndexOf('@') + 1).toLowerCase() : null;
  return {
    spf: { result: 'pass', domain },
    dkim: { result: 'none', signatures: [] },
    dmarc: { result: 'pass', policy: null, domain },
    arc: { result: 'none' },
  };
}

function listenFailed(what: string, host: string, port: number, flag: string): EdgeStartError {
  return new EdgeStartError('service_unavailable', `The edge could not listen for ${what} on ${host}:${port}.`, `Choose another port with ${flag}, stop the program that uses it, or run with the rights to bind low ports.`);
}

async function closeApi(api: FastifyInstance): Promise<void> {
  const timer = setTimeout(() => api.server.closeAllConnections(), API_DRAIN_MS);
  await api.close().catch(() => undefined);
  clearTimeout(timer);
}
