/**
 * The edge's own certificate from an ACME CA (issue 21 §1, docs/acme.md): `svc edge --acme`.
 *
 * - Challenge: HTTP-01 only. The edge answers `/.well-known/acme-challenge/<token>` itself on
 *   port 80 (`--acme-http-port`), so a VPS needs nothing but that port open: no DNS provider
 *   credentials on the edge (DNS-01) and no TLS-ALPN listener beside SMTP's own ports.
 * - Files, in `<data>/acme/` (mode 0600, the directory 0700): `account.key` (the ACME account),
 *   `key.pem` and `cert.pem` (the certificate and its chain). A stored certificate for the same
 *   names, valid for longer than the renewal margin, is used as it is.
 * - Renewal: checked every `checkEveryMs` (12 hours); a certificate with less than
 *   `renewBeforeMs` (30 days) left is renewed with a new key, and `onRenewed` hands it to the
 *   listeners, which take it for new connections (open SMTP sessions keep theirs: nothing is
 *   dropped, nothing restarts). A failed renewal logs `edge.warning` and is tried again at the
 *   next check, while the current certificate is served.
 * - The ACME library (acme-client) is loaded only when `--acme` is given.
 */
import fs from 'node:fs';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import tls from 'node:tls';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import type { AddressInfo } from 'node:net';

export interface AcmeOptions {
  /** The ACME directory URL (Let's Encrypt by default). */
  directoryUrl: string;
  /** Contact address for the account; optional. */
  email: string | null;
  /** The names on the certificate: the edge's hostname first. */
  names: string[];
  /** The edge data directory; files go in its `acme/` folder. */
  dataDir: string;
  /** Where the HTTP-01 answers are served. */
  http: { host: string; port: number };
  /** Extra CA certificates (PEM) to trust for the ACME directory (a private CA, pebble in tests). */
  directoryCa: Buffer | null;
  renewBeforeMs: number;
  checkEveryMs: number;
  /** Retries of a request the CA did not answer, `delaySeconds` × the attempt apart (5 × 5 s by default; tests 0). */
  retry?: { attempts: number; delaySeconds: number };
  /** One issuance, all requests and retries included, gives up after this (10 minutes by default). */
  issueTimeoutMs?: number;
  log: (data: Record<string, unknown>) => void;
}

export interface EdgeCertificate {
  key: Buffer;
  cert: Buffer;
  notAfter: Date;
}

export const LETS_ENCRYPT_DIRECTORY = 'https://acme-v02.api.letsencrypt.org/directory';
export const DEFAULT_RENEW_BEFORE_MS = 30 * 24 * 60 * 60 * 1000;
export const DEFAULT_CHECK_EVERY_MS = 12 * 60 * 60 * 1000;
/** A request to the CA that takes longer than this failed. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Bytes of one answer of the CA (a certificate chain is a few KiB). */
const MAX_ANSWER_BYTES = 1024 * 1024;
/** One issuance at most: the library obeys a CA's Retry-After without a bound. */
const DEFAULT_ISSUE_TIMEOUT_MS = 10 * 60 * 1000;
/** A stop waits this long for a renewal in flight, then lets it go. */
const STOP_GRACE_MS = 2_000;
/** Characters of a challenge token: base64url, 43 for 256 bits; anything else is not ours. */
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;
const CHALLENGE_PREFIX = '/.well-known/acme-challenge/';

/** Why issuance failed, in words an operator can act on (the CA's own problem detail when it gave one). */
export class AcmeFailed extends Error {}

type AcmeLibrary = typeof import('acme-client');

export class AcmeCertificates {
  #current: EdgeCertificate | null = null;
  #server: http.Server | null = null;
  #timer: NodeJS.Timeout | null = null;
  #answers = new Map<string, string>();
  #renewing: Promise<void> | null = null;
  #listeners: ((c: EdgeCertificate) => void)[] = [];
  #lib: AcmeLibrary | null = null;

  constructor(private readonly options: AcmeOptions) {}

  get dir(): string {
    return path.join(this.options.dataDir, 'acme');
  }

  get current(): EdgeCertificate | null {
    return this.#current;
  }

  /** Called with each renewed certificate, after it is stored. */
  onRenewed(listener: (c: EdgeCertificate) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Starts the HTTP-01 responder, then uses the stored certificate or obtains one. Throws
   * AcmeFailed when none can be had (the edge then does not start: `edge.failed`).
   */
  async start(): Promise<EdgeCertificate> {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    await this.#listen();
    const stored = this.#stored();
    this.#current = stored && this.#fresh(stored) ? stored : await this.#issue();
    this.#timer = setInterval(() => void this.renewIfDue(), this.options.checkEveryMs);
    this.#timer.unref();
    return this.#current;
  }

  /** Renews when the certificate is within the margin; a failure is an `edge.warning`, the current one stays. */
  renewIfDue(): Promise<void> {
    if (this.#renewing) return this.#renewing;
    const current = this.#current;
    if (current && this.#fresh(current)) return Promise.resolve();
    this.#renewing = this.#issue()
      .then((next) => {
        this.#current = next;
        this.options.log({ event: 'edge.certificate_renewed', names: this.options.names, not_after: next.notAfter.toISOString() });
        for (const listener of this.#listeners) {
          try {
            listener(next);
          } catch {
            this.options.log({ event: 'edge.warning', message: 'A renewed certificate could not be put in use; the listeners keep the one they had.', fix: 'Restart svc edge to load the stored certificate.' });
          }
        }
      })
      .catch((err: unknown) => {
        this.options.log({
          event: 'edge.warning',
          message: `The certificate for ${this.options.names[0]} could not be renewed: ${reasonOf(err)}`,
          fix: `The current one serves until ${current?.notAfter.toISOString() ?? 'it expires'}; svc tries again in ${Math.round(this.options.checkEveryMs / 60_000)} minutes. Check that port ${this.options.http.port} is reachable from the internet as http://${this.options.names[0]}/.`,
        });
      })
      .finally(() => {
        this.#renewing = null;
      });
    return this.#renewing;
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    const server = this.#server;
    this.#server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    const renewing = this.#renewing;
    if (renewing) await Promise.race([renewing.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS).unref())]);
  }

  /** The port the HTTP-01 responder listens on (tests bind 0). */
  get httpPort(): number | null {
    const address = this.#server?.address();
    return typeof address === 'object' && address ? (address as AddressInfo).port : null;
  }

  #fresh(c: EdgeCertificate): boolean {
    return c.notAfter.getTime() - Date.now() > this.options.renewBeforeMs;
  }

  #stored(): EdgeCertificate | null {
    try {
      const key = fs.readFileSync(path.join(this.dir, 'key.pem'));
      const cert = fs.readFileSync(path.join(this.dir, 'cert.pem'));
      // A pair a crash left half-replaced, or one for other names, is not used: a new one is ordered.
      return { key, cert, notAfter: usable(key, cert, this.options.names) };
    } catch {
      return null;
    }
  }

  async #listen(): Promise<void> {
    const server = http.createServer((req, res) => {
      const url = req.url ?? '';
      const token = url.startsWith(CHALLENGE_PREFIX) ? url.slice(CHALLENGE_PREFIX.length) : '';
      const answer = req.method === 'GET' && TOKEN.test(token) ? this.#answers.get(token) : undefined;
      if (answer === undefined) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(answer);
    });
    server.headersTimeout = 10_000;
    server.requestTimeout = 10_000;
    server.maxHeadersCount = 50;
    const { host, port } = this.options.http;
    await new Promise<void>((resolve, reject) => {
      server.once('error', () =>
        reject(new AcmeFailed(`the HTTP-01 responder could not listen on ${host}:${port} (choose another with --acme-http-port, or run with the rights to bind port 80)`)),
      );
      server.listen(port, host, () => resolve());
    });
    server.on('error', () => undefined);
    this.#server = server;
  }

  async #library(): Promise<AcmeLibrary> {
    if (this.#lib) return this.#lib;
    const lib = (await import('acme-client')).default as unknown as AcmeLibrary;
    lib.setLogger(() => undefined);
    if (this.options.directoryCa) lib.axios.defaults.httpsAgent = new https.Agent({ ca: this.options.directoryCa, keepAlive: false });
    lib.axios.defaults.timeout = REQUEST_TIMEOUT_MS;
    lib.axios.defaults.maxContentLength = MAX_ANSWER_BYTES;
    lib.axios.defaults.maxBodyLength = MAX_ANSWER_BYTES;
    const settings = (lib.axios.defaults as { acmeSettings?: { retryMaxAttempts: number; retryDefaultDelay: number } }).acmeSettings;
    if (settings && this.options.retry) {
      settings.retryMaxAttempts = this.options.retry.attempts;
      settings.retryDefaultDelay = this.options.retry.delaySeconds;
    }
    this.#lib = lib;
    return lib;
  }

  /** Obtains a certificate for the names (HTTP-01), stores it (0600) and returns it. */
  async #issue(): Promise<EdgeCertificate> {
    const limit = this.options.issueTimeoutMs ?? DEFAULT_ISSUE_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AcmeFailed(`the CA did not finish within ${Math.round(limit / 1000)} s`)), limit);
      timer.unref();
    });
    try {
      return await Promise.race([this.#order(), deadline]);
    } catch (err) {
      throw err instanceof AcmeFailed ? err : new AcmeFailed(reasonOf(err));
    } finally {
      clearTimeout(timer);
    }
  }

  async #order(): Promise<EdgeCertificate> {
    const acme = await this.#library();
    const accountKey = this.#accountKey(await acme.crypto.createPrivateEcdsaKey('P-256'));
    // The account's URL once registered: asking to register again makes acme-client send an
    // empty account update, which strict CAs refuse.
    const accountFile = path.join(this.dir, 'account.json');
    const accountUrl = readAccountUrl(accountFile, this.options.directoryUrl);
    const client = new acme.Client({ directoryUrl: this.options.directoryUrl, accountKey, ...(accountUrl ? { accountUrl } : {}), backoffAttempts: 4, backoffMin: 500, backoffMax: 3_000 });
    const [key, csr] = await acme.crypto.createCsr({ commonName: this.options.names[0], altNames: this.options.names }, await acme.crypto.createPrivateEcdsaKey('P-256'));
    let chain: string;
    try {
      chain = await client.auto({
        csr,
        email: this.options.email ?? undefined,
        termsOfServiceAgreed: true,
        challengePriority: ['http-01'],
        // The CA checks the answer from outside; a check from here would only test our own loopback.
        skipChallengeVerification: true,
        challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
          if (challenge.type !== 'http-01') throw new AcmeFailed(`the CA offered only ${challenge.type}, and svc answers http-01`);
          this.#answers.set(challenge.token, keyAuthorization);
        },
        challengeRemoveFn: async (_authz, challenge) => {
          this.#answers.delete(challenge.token);
        },
      });
    } catch (err) {
      throw new AcmeFailed(reasonOf(err));
    }
    if (!accountUrl) writePrivate(accountFile, Buffer.from(JSON.stringify({ directory: this.options.directoryUrl, url: client.getAccountUrl() })));
    const cert = Buffer.from(chain);
    // Checked before it is stored or served: a certificate that does not fit would break STARTTLS.
    const notAfter = usable(key, cert, this.options.names);
    writePrivate(path.join(this.dir, 'key.pem'), key);
    writePrivate(path.join(this.dir, 'cert.pem'), cert);
    return { key, cert, notAfter };
  }

  /** The stored account key, or `fresh` stored as the account key. */
  #accountKey(fresh: Buffer): Buffer {
    const file = path.join(this.dir, 'account.key');
    try {
      return fs.readFileSync(file);
    } catch {
      writePrivate(file, fresh);
      return fresh;
    }
  }
}

/** Writes a private file atomically (temp file, fsync, rename), readable by this user only. */
function writePrivate(file: string, data: Buffer): void {
  const temp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(temp, 'w', 0o600);
  try {
    fs.writeSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temp, file);
}

/**
 * Checks a key and its certificate chain before they are stored or served: the leaf is for this
 * key, names every one of `names`, is valid now, each certificate is issued by the next, and
 * Node builds a TLS context from them. Returns the leaf's end; throws AcmeFailed saying what is wrong.
 */
export function usable(key: Buffer, chain: Buffer, names: readonly string[], now = Date.now()): Date {
  const pems = chain.toString('latin1').match(/-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]{1,65536}?-----END CERTIFICATE-----/g) ?? [];
  if (pems.length === 0) throw new AcmeFailed('the CA sent no certificate');
  let certs: X509Certificate[];
  try {
    certs = pems.slice(0, 10).map((p) => new X509Certificate(p));
  } catch {
    throw new AcmeFailed('the CA sent a certificate that does not parse');
  }
  const leaf = certs[0];
  let matches = false;
  try {
    matches = leaf.checkPrivateKey(createPrivateKey(key));
  } catch {
    matches = false;
  }
  if (!matches) throw new AcmeFailed('the certificate is not for this key');
  const sans = (leaf.subjectAltName ?? '').split(',').map((s) => s.trim().replace(/^DNS:/, '').toLowerCase());
  const missing = names.find((n) => !sans.includes(n.toLowerCase()));
  if (missing !== undefined) throw new AcmeFailed(`the certificate does not name ${missing}`);
  if (Date.parse(leaf.validFrom) > now + 5 * 60_000 || Date.parse(leaf.validTo) <= now) throw new AcmeFailed('the certificate is not valid now');
  for (let i = 0; i + 1 < certs.length; i++) if (!certs[i].checkIssued(certs[i + 1])) throw new AcmeFailed('the certificate chain is out of order');
  try {
    tls.createSecureContext({ key, cert: chain });
  } catch {
    throw new AcmeFailed('the certificate and key do not make a TLS context');
  }
  return new Date(leaf.validTo);
}

/** The stored account URL for this directory, or null. */
function readAccountUrl(file: string, directory: string): string | null {
  try {
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as { directory?: unknown; url?: unknown };
    return stored.directory === directory && typeof stored.url === 'string' ? stored.url : null;
  } catch {
    return null;
  }
}

/**
 * One line on why the CA refused, at most 300 characters, without anything secret (the library's
 * messages carry the CA's problem detail). A request with no answer at all surfaces from the
 * library as a TypeError about a missing response: said as what it is.
 */
function reasonOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return `the CA did not answer (${code})`;
  if (err instanceof TypeError) return 'the CA did not answer';
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/\s+/g, ' ').slice(0, 300) || 'the CA did not answer';
}
