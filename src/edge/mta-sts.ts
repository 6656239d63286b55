/**
 * MTA-STS (RFC 8461) for the domains the edge takes mail for (issue 21 §1, docs/acme.md):
 * `svc edge --acme --mta-sts example.com` serves `https://mta-sts.example.com/.well-known/mta-sts.txt`
 * with the ACME certificate (which then names `mta-sts.example.com` too). The policy says the
 * domain's mail goes to this edge's hostname over verified TLS. The home's domain plan publishes
 * the matching `_mta-sts` and `_smtp._tls` records (src/domains/plan.ts).
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export type MtaStsMode = 'enforce' | 'testing';
export const MTA_STS_MAX_AGE_S = 604_800;
const POLICY_PATH = '/.well-known/mta-sts.txt';

export interface MtaStsOptions {
  domains: readonly string[];
  /** The MX the policy names: the edge's hostname. */
  mx: string;
  mode: MtaStsMode;
  host: string;
  port: number;
}

/** The policy file (RFC 8461 §3.2). */
export function mtaStsPolicy(mx: string, mode: MtaStsMode, maxAge = MTA_STS_MAX_AGE_S): string {
  return `version: STSv1\r\nmode: ${mode}\r\nmx: ${mx}\r\nmax_age: ${maxAge}\r\n`;
}

export class MtaStsServer {
  #server: https.Server | null = null;
  readonly #hosts: Set<string>;
  readonly #policy: string;

  constructor(private readonly options: MtaStsOptions) {
    this.#hosts = new Set(options.domains.map((d) => `mta-sts.${d.toLowerCase()}`));
    this.#policy = mtaStsPolicy(options.mx, options.mode);
  }

  /** Listens with this certificate; answers only the policy path of the configured hosts (anything else 404). */
  async start(tls: { key: Buffer; cert: Buffer }): Promise<number> {
    const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
      const host = (req.headers.host ?? '').toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
      const path = (req.url ?? '').split('?')[0];
      if ((req.method === 'GET' || req.method === 'HEAD') && path === POLICY_PATH && this.#hosts.has(host)) {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'max-age=3600' }).end(req.method === 'HEAD' ? undefined : this.#policy);
        return;
      }
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    });
    server.headersTimeout = 10_000;
    server.requestTimeout = 10_000;
    server.maxHeadersCount = 50;
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', () => undefined);
    this.#server = server;
    return (server.address() as AddressInfo).port;
  }

  /** A renewed certificate, for new connections. */
  updateTls(tls: { key: Buffer; cert: Buffer }): void {
    this.#server?.setSecureContext({ key: tls.key, cert: tls.cert });
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
