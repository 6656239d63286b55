/**
 * The edge's own certificate from an ACME CA (issue 21 §1, docs/acme.md): `svc edge --acme`.
 *
 * - Challenge: HTTP-01 only. The edge answers `/.well-known/acme-challenge/<token>` itself on
 *   port 80 (`--acme-http-port`), so a VPS needs nothing but that port open: no DNS provider
 *   credentials on the edge (DNS-01) and no TLS-ALPN listener beside SMTP's own ports.
 * - Files, in `<data>/acme/` (mode 0600, the directory 0700): `account.key` (the ACME account),
 *   `key.pem` and `cert.pem` (the certificate and its chain). A stored certificate for the same
 *   names, valid for longer than the renewal margin, is used as it is.
 * - Renewal: when a third of the certificate's lifetime is left (as certbot and Caddy do), so a
 *   90-day certificate renews at 30 days left and a 6-day one at 2. When the CA offers ACME
 *   Renewal Information (RFC 9773, `renewalInfo` in its directory), its suggested window wins: a
 *   random time inside it, asked again after its Retry-After. Checked every tenth of the lifetime
 *   (at most 12 hours, at least a second), and exactly at the renewal time. A renewal gets a new
 *   key, and `onRenewed` hands it to the listeners, which take it for new connections (open SMTP
 *   sessions keep theirs: nothing is dropped, nothing restarts). A failed renewal logs
 *   `edge.warning` and is tried again at the next check, while the current certificate is served.
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
  /** Test override: renew when less than this is left, instead of a third of the lifetime. */
  renewBeforeMs: number | null;
  /** Test override: check this often, instead of a tenth of the lifetime (at most 12 hours). */
  checkEveryMs: number | null;
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
  notBefore: Date;
}

export const LETS_ENCRYPT_DIRECTORY = 'https://acme-v02.api.letsencrypt.org/directory';
/** Renew when this share of the lifetime is left. */
export const RENEW_WITH_LEFT = 1 / 3;
/** Checks run every this share of the lifetime, within the bounds below. */
const CHECK_SHARE = 1 / 10;
export const MAX_CHECK_EVERY_MS = 12 * 60 * 60 * 1000;
const MIN_CHECK_EVERY_MS = 1_000;
/** A CA's Retry-After for renewal information is obeyed within these bounds (RFC 9773 §4.3.3 suggests 1 min .. 1 day). */
const ARI_RETRY_MIN_MS = 1_000;
const ARI_RETRY_MAX_MS = 24 * 60 * 60 * 1000;
const ARI_RETRY_DEFAULT_MS = 6 * 60 * 60 * 1000;
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
  #stopped = false;
  /** The CA's renewal information for the current certificate: when to renew, and when to ask again. */
  #ari: { certId: string; renewAt: number | null; askAfter: number } | null = null;
  /** The directory's `renewalInfo` URL; undefined until read, null when the CA has none. */
  #renewalInfo: string | null | undefined = undefined;
  /** The directory could not be read for it: asked again at the next regular check, not every second. */
  #directoryFailed = false;
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
    this.#schedule();
    return this.#current;
  }

  /** When the current certificate is due: the CA's window when it gave one, else a third of its lifetime left. */
  renewalTime(c: EdgeCertificate): number {
    if (this.#ari && this.#ari.renewAt !== null && this.#ari.certId === certIdOf(c.cert)) return this.#ari.renewAt;
    if (this.options.renewBeforeMs !== null) return c.notAfter.getTime() - this.options.renewBeforeMs;
    const lifetime = c.notAfter.getTime() - c.notBefore.getTime();
    return c.notAfter.getTime() - lifetime * RENEW_WITH_LEFT;
  }

  #checkEvery(c: EdgeCertificate | null): number {
    if (this.options.checkEveryMs !== null) return this.options.checkEveryMs;
    const lifetime = c ? c.notAfter.getTime() - c.notBefore.getTime() : MAX_CHECK_EVERY_MS;
    return Math.min(MAX_CHECK_EVERY_MS, Math.max(MIN_CHECK_EVERY_MS, lifetime * CHECK_SHARE));
  }

  /** The next check: after the check interval, or at the renewal time when that comes first. */
  #schedule(): void {
    if (this.#stopped) return;
    const current = this.#current;
    const every = this.#checkEvery(current);
    const due = current ? this.renewalTime(current) - Date.now() : every;
    // The CA's renewal information is asked for soon after start, then when its Retry-After says.
    const ask = this.#renewalInfo === undefined ? (this.#directoryFailed ? every : 0) : this.#renewalInfo !== null && this.#ari ? this.#ari.askAfter - Date.now() : every;
    const wait = Math.max(MIN_CHECK_EVERY_MS, Math.min(every, due, ask));
    this.#timer = setTimeout(() => {
      void this.#check().finally(() => this.#schedule());
    }, wait);
    this.#timer.unref();
  }

  /** One check: the CA's renewal information when it offers it (never fatal), then the renewal if due. */
  async #check(): Promise<void> {
    await this.#askRenewalInfo().catch(() => undefined);
    await this.renewIfDue();
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
          fix: `The current one serves until ${current?.notAfter.toISOString() ?? 'it expires'}; svc tries again in ${inWords(this.#checkEvery(current))}. Check that port ${this.options.http.port} is reachable from the internet as http://${this.options.names[0]}/.`,
        });
      })
      .finally(() => {
        this.#renewing = null;
      });
    return this.#renewing;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
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
    return this.renewalTime(c) > Date.now();
  }

  /**
   * ACME Renewal Information (RFC 9773): GET `<renewalInfo>/<certID>`; the answer's
   * `suggestedWindow` sets the renewal time (a random moment inside it, kept until the window
   * changes) and its Retry-After when to ask again. Nothing happens when the CA has no
   * `renewalInfo`; a failed request is asked again at the next check.
   */
  async #askRenewalInfo(): Promise<void> {
    const current = this.#current;
    if (!current) return;
    const certId = certIdOf(current.cert);
    if (certId === null) return;
    if (this.#ari && this.#ari.certId === certId && Date.now() < this.#ari.askAfter) return;
    if (this.#renewalInfo === undefined) {
      this.#directoryFailed = true;
      const directory = (await getJson(this.options.directoryUrl, this.options.directoryCa)).body as { renewalInfo?: unknown } | null;
      this.#directoryFailed = false;
      const url = directory?.renewalInfo;
      this.#renewalInfo = typeof url === 'string' && /^https:\/\/[^\s]+$/.test(url) ? url.replace(/\/+$/, '') : null;
    }
    if (this.#renewalInfo === null) return;
    const answer = await getJson(`${this.#renewalInfo}/${certId}`, this.options.directoryCa);
    const retryAfter = retryAfterMs(answer.retryAfter);
    const previous = this.#ari?.certId === certId ? this.#ari : null;
    const window = (answer.body as { suggestedWindow?: { start?: unknown; end?: unknown } } | null)?.suggestedWindow;
    const start = typeof window?.start === 'string' ? Date.parse(window.start) : NaN;
    const end = typeof window?.end === 'string' ? Date.parse(window.end) : NaN;
    let renewAt = previous?.renewAt ?? null;
    if (answer.status === 200 && Number.isFinite(start) && Number.isFinite(end) && start < end) {
      // A time already chosen inside the same window stays; a new window gets a new random time.
      if (renewAt === null || renewAt < start || renewAt > end) renewAt = start + Math.random() * (end - start);
    }
    this.#ari = { certId, renewAt, askAfter: Date.now() + retryAfter };
  }

  #stored(): EdgeCertificate | null {
    try {
      const key = fs.readFileSync(path.join(this.dir, 'key.pem'));
      const cert = fs.readFileSync(path.join(this.dir, 'cert.pem'));
      // A pair a crash left half-replaced, or one for other names, is not used: a new one is ordered.
      return { key, cert, ...usable(key, cert, this.options.names) };
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
    const validity = usable(key, cert, this.options.names);
    writePrivate(path.join(this.dir, 'key.pem'), key);
    writePrivate(path.join(this.dir, 'cert.pem'), cert);
    return { key, cert, ...validity };
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
 * Node builds a TLS context from them. Returns the leaf's validity; throws AcmeFailed saying what is wrong.
 */
export function usable(key: Buffer, chain: Buffer, names: readonly string[], now = Date.now()): { notBefore: Date; notAfter: Date } {
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
  return { notBefore: new Date(leaf.validFrom), notAfter: new Date(leaf.validTo) };
}

const inWords = (ms: number) => (ms < 120_000 ? `${Math.round(ms / 1000)} seconds` : `${Math.round(ms / 60_000)} minutes`);

// ---- ACME Renewal Information (RFC 9773) ----

/** One DER element at `at`: its tag, where its content starts and ends. Throws on a malformed length. */
function derElement(der: Buffer, at: number): { tag: number; start: number; end: number } {
  const tag = der[at];
  let len = der[at + 1];
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4) throw new Error('DER length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + der[start + i];
    start += n;
  }
  if (tag === undefined || start + len > der.length) throw new Error('DER overrun');
  return { tag, start, end: start + len };
}

/**
 * The RFC 9773 certificate identifier of the chain's leaf: base64url(the Authority Key
 * Identifier's keyIdentifier) "." base64url(the serial number's DER content bytes). Null when the
 * certificate has no keyIdentifier (then the CA cannot offer renewal information for it).
 */
export function certIdOf(chain: Buffer): string | null {
  const pem = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]{1,65536}?)-----END CERTIFICATE-----/.exec(chain.toString('latin1'));
  if (!pem) return null;
  try {
    const der = Buffer.from(pem[1].replace(/\s+/g, ''), 'base64');
    const cert = derElement(der, 0);
    const tbs = derElement(der, cert.start);
    let at = tbs.start;
    let field = derElement(der, at);
    if (field.tag === 0xa0) {
      at = field.end;
      field = derElement(der, at);
    }
    if (field.tag !== 0x02) return null;
    const serial = der.subarray(field.start, field.end);
    // The extensions are the [3] element of the TBSCertificate; the AKI is OID 2.5.29.35.
    const aki = Buffer.from([0x06, 0x03, 0x55, 0x1d, 0x23]);
    const found = der.subarray(tbs.start, tbs.end).indexOf(aki);
    if (found < 0) return null;
    let ext = tbs.start + found + aki.length;
    let next = derElement(der, ext);
    if (next.tag === 0x01) {
      ext = next.end;
      next = derElement(der, ext);
    }
    if (next.tag !== 0x04) return null;
    const seq = derElement(der, next.start);
    if (seq.tag !== 0x30) return null;
    const keyId = derElement(der, seq.start);
    if (keyId.tag !== 0x80 || keyId.end > seq.end) return null;
    return `${der.subarray(keyId.start, keyId.end).toString('base64url')}.${serial.toString('base64url')}`;
  } catch {
    return null;
  }
}

/** A Retry-After header (seconds or an HTTP date) as ms, within the bounds svc obeys. */
function retryAfterMs(header: string | null): number {
  let ms = ARI_RETRY_DEFAULT_MS;
  if (header !== null && /^\d{1,10}$/.test(header.trim())) ms = Number(header.trim()) * 1000;
  else if (header !== null && Number.isFinite(Date.parse(header))) ms = Date.parse(header) - Date.now();
  return Math.min(ARI_RETRY_MAX_MS, Math.max(ARI_RETRY_MIN_MS, ms));
}

/** One bounded GET of a JSON document from the CA (https, its extra CA trusted): status, body (null if not JSON) and Retry-After. */
function getJson(url: string, ca: Buffer | null): Promise<{ status: number; body: unknown; retryAfter: string | null }> {
  return new Promise((resolve, reject) => {
    if (!url.startsWith('https://')) return reject(new Error('not https'));
    const req = https.get(url, { ...(ca ? { ca } : {}), timeout: REQUEST_TIMEOUT_MS, headers: { accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (d: Buffer) => {
        size += d.length;
        if (size > MAX_ANSWER_BYTES) req.destroy(new Error('answer too large'));
        else chunks.push(d);
      });
      res.on('end', () => {
        let body: unknown = null;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = null;
        }
        const retry = res.headers['retry-after'];
        resolve({ status: res.statusCode ?? 0, body, retryAfter: typeof retry === 'string' ? retry : null });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
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
