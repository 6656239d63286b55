/**
 * `svc edge`: runs the built-in edge on its own (e.g. on a VPS with public port 25). Prints one
 * JSON line `edge.ready` on stdout and, on stderr, how to pair it with a home. Runs until
 * SIGINT/SIGTERM.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { resolveHome, type Flavor } from '../keys/home.js';
import { ApiTokenUnreadable, loadOrCreateApiToken } from '../edge/api-token.js';
import { dnsResolver } from '../edge/auth.js';
import { Edge, EdgeStartError, type EdgeOptions } from '../edge/edge.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../edge/limits.js';
import { isPublicAddress } from '../core/public-address.js';
import { MAX_PUBLIC_ADDRESSES } from '../edge/identity.js';
import { SPF_MECHANISM_HELP, spfMechanism } from '../domains/spf.js';
import { parseArgs, parsePort, type FlagValue } from './args.js';
import { CliError, reportCliError } from './exit-codes.js';
import { isSourceCheckout } from './package-root.js';
import { limitHeapGrowth } from '../core/heap-limits.js';
import { LETS_ENCRYPT_DIRECTORY, type AcmeCertificates, type AcmeOptions } from '../edge/acme.js';
import type { MtaStsOptions, MtaStsServer } from '../edge/mta-sts.js';

export const DEFAULT_EDGE_SMTP_PORT = 2733;
export const DEFAULT_EDGE_API_PORT = 8790;
const LOOPBACK = '127.0.0.1';
const MIN_MESSAGE_BYTES = 1024;

/** The smart host password comes from the environment only: flags are visible in process lists. */
export const SMART_HOST_PASSWORD_ENV = 'SVC_EDGE_SMART_HOST_PASSWORD';

const USAGE = `svc edge [--data DIR | --home DIR] [--host IP] [--smtp-port N] [--api-port N] [--api-host IP]
         [--hostname NAME] [--max-message-bytes N] [--spam-url URL] [--dns HOST[:PORT],...]
         [--tls-key FILE --tls-cert FILE | --acme [--acme-directory URL] [--acme-email ADDR] [--acme-http-port N] [--acme-ca FILE]
                                            [--mta-sts DOMAIN ...] [--mta-sts-port N] [--mta-sts-mode enforce|testing]]
         [--public-ip IP ...] [--relay-port N] [--smart-host HOST:PORT [--smart-host-user NAME] [--smart-host-spf MECHANISM]]
         [--flavor development|production] [--json]
The smart host password is read from the environment variable ${SMART_HOST_PASSWORD_ENV}.`;

const FLAGS = {
  data: 'string',
  home: 'string',
  flavor: 'string',
  host: 'string',
  'api-host': 'string',
  'smtp-port': 'string',
  'api-port': 'string',
  hostname: 'string',
  'max-message-bytes': 'string',
  'spam-url': 'string',
  dns: 'string',
  'tls-key': 'string',
  'tls-cert': 'string',
  acme: 'boolean',
  'acme-directory': 'string',
  'acme-email': 'string',
  'acme-http-port': 'string',
  'acme-ca': 'string',
  'mta-sts': 'list',
  'mta-sts-port': 'string',
  'mta-sts-mode': 'string',
  'relay-port': 'string',
  'smart-host': 'string',
  'smart-host-user': 'string',
  'smart-host-spf': 'string',
  'public-ip': 'list',
  json: 'boolean',
} as const;

const line = (stream: NodeJS.WriteStream, data: Record<string, unknown>) => stream.write(JSON.stringify(data) + '\n');

function invalid(message: string): CliError {
  return new CliError('validation_error', message, `Usage: ${USAGE}`);
}

function stringFlag(flags: Record<string, FlagValue>, name: keyof typeof FLAGS): string | undefined {
  const value = flags[name];
  if (value === '') throw invalid(`--${name} must not be empty.`);
  return typeof value === 'string' ? value : undefined;
}

function ipFlag(value: string | undefined, name: string, fallback: string): string {
  if (value === undefined) return fallback;
  if (net.isIP(value) === 0) throw invalid(`--${name} must be an IP address (e.g. 127.0.0.1, or 0.0.0.0 for every interface).`);
  return value;
}

function portFlag(value: string | undefined, name: string, fallback: number, allowZero = true): number {
  try {
    return parsePort(value, fallback, allowZero);
  } catch {
    throw invalid(`--${name} must be an integer from ${allowZero ? 0 : 1} to 65535.`);
  }
}

/** `--smart-host HOST:PORT` (`[v6]:PORT`); port 465 is implicit TLS. The password only from the environment. */
function readSmartHost(value: string | undefined, user: string | undefined, env: NodeJS.ProcessEnv): EdgeOptions['smartHost'] {
  if (value === undefined) {
    if (user !== undefined) throw invalid('--smart-host-user needs --smart-host.');
    return undefined;
  }
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\s\[\]]+)):(\d+)$/.exec(value);
  if (!match) throw invalid('--smart-host must be HOST:PORT, e.g. smtp.example.com:587 or [::1]:25.');
  const port = portFlag(match[3], 'smart-host port', 0, false);
  const password = env[SMART_HOST_PASSWORD_ENV];
  if (user !== undefined && !password) throw invalid(`--smart-host-user needs the password in the environment variable ${SMART_HOST_PASSWORD_ENV}.`);
  return {
    host: match[1] ?? match[2],
    port,
    secure: port === 465,
    ...(user !== undefined ? { username: user, password } : {}),
  };
}

/** `--public-ip`: the addresses the internet reaches this edge at (repeated or comma-separated), for the home's A/AAAA and PTR. */
function readPublicIps(flags: Record<string, FlagValue>): string[] {
  const ips = ((flags['public-ip'] as string[] | undefined) ?? []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
  if (ips.length > MAX_PUBLIC_ADDRESSES) throw invalid(`--public-ip takes at most ${MAX_PUBLIC_ADDRESSES} addresses.`);
  for (const ip of ips) {
    if (net.isIP(ip) === 0) throw invalid(`--public-ip ${JSON.stringify(ip.slice(0, 60))} is not an IP address.`);
    if (!isPublicAddress(ip)) throw invalid(`--public-ip ${ip} is not a public address (loopback, private, link-local and shared ranges never go into DNS); give the address the internet reaches this host at.`);
  }
  return [...new Set(ips.map((ip) => ip.toLowerCase()))];
}

/** `--smart-host-spf`: the SPF mechanism the smart host's provider requires. */
function readSmartHostSpf(value: string | undefined, smartHost: EdgeOptions['smartHost']): string | undefined {
  if (value === undefined) return undefined;
  if (!smartHost) throw invalid('--smart-host-spf needs --smart-host.');
  const mechanism = spfMechanism(value);
  if (mechanism === null) throw invalid(`--smart-host-spf must be ${SPF_MECHANISM_HELP}.`);
  return mechanism;
}

function readTls(keyFile: string | undefined, certFile: string | undefined): EdgeOptions['tls'] {
  if (keyFile === undefined && certFile === undefined) return undefined;
  if (keyFile === undefined || certFile === undefined) throw invalid('--tls-key and --tls-cert go together.');
  try {
    return { key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile) };
  } catch {
    throw invalid('The --tls-key or --tls-cert file cannot be read.');
  }
}

/** The default data directory: `<home>/edge`, next to the home's own files. */
export function defaultEdgeDataDir(home: string): string {
  return path.join(home, 'edge');
}

interface EdgeCommand {
  options: Omit<EdgeOptions, 'apiToken'>;
  json: boolean;
  /** `--acme`: the certificate comes from an ACME CA (src/edge/acme.ts); the log function is added at start. */
  acme: Omit<AcmeOptions, 'log'> | null;
  /** `--mta-sts`: the policy server for these domains (src/edge/mta-sts.ts), with the ACME certificate. */
  mtaSts: MtaStsOptions | null;
}

/** The MTA-STS options, or null; the domains' `mta-sts.` names join the ACME certificate. */
function readMtaSts(flags: Record<string, FlagValue>, acme: EdgeCommand['acme'], host: string): MtaStsOptions | null {
  const domains = ((flags['mta-sts'] as string[] | undefined) ?? []).flatMap((d) => d.split(',')).map((d) => d.trim().toLowerCase()).filter(Boolean);
  const used = ['mta-sts-port', 'mta-sts-mode'].filter((n) => flags[n] !== undefined);
  if (domains.length === 0) {
    if (used.length) throw invalid(`--${used[0]} goes with --mta-sts.`);
    return null;
  }
  if (!acme) throw invalid('--mta-sts needs --acme: the policy is served with the certificate the edge obtains for mta-sts.<domain>.');
  if (domains.length > 20) throw invalid('--mta-sts takes at most 20 domains.');
  for (const d of domains) if (!/^(?=.{1,245}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/.test(d)) throw invalid(`--mta-sts ${JSON.stringify(d.slice(0, 60))} is not a domain name.`);
  const mode = stringFlag(flags, 'mta-sts-mode') ?? 'enforce';
  if (mode !== 'enforce' && mode !== 'testing') throw invalid('--mta-sts-mode must be enforce or testing.');
  acme.names.push(...domains.map((d) => `mta-sts.${d}`).filter((n) => !acme.names.includes(n)));
  return { domains, mx: acme.names[0], mode, host, port: portFlag(stringFlag(flags, 'mta-sts-port'), 'mta-sts-port', 443) };
}

/** Test-only (docs/testing.md): renewal margin and check interval in ms, to renew within a test. */
const ACME_RENEW_BEFORE_ENV = 'SVC_TEST_ACME_RENEW_BEFORE_MS';
const ACME_CHECK_ENV = 'SVC_TEST_ACME_CHECK_MS';
/** Test-only: retries of an unanswered request to the CA (default 5, 5 s × the attempt apart). */
const ACME_RETRY_ENV = 'SVC_TEST_ACME_RETRIES';

/** The ACME options of `--acme`, or null; checked before anything starts. */
function readAcme(flags: Record<string, FlagValue>, hostname: string | undefined, dataDir: string, host: string, env: NodeJS.ProcessEnv): EdgeCommand['acme'] {
  const used = ['acme-directory', 'acme-email', 'acme-http-port', 'acme-ca'].filter((n) => flags[n] !== undefined);
  if (flags.acme !== true) {
    if (used.length) throw invalid(`--${used[0]} goes with --acme.`);
    return null;
  }
  if (flags['tls-key'] !== undefined || flags['tls-cert'] !== undefined) throw invalid('Give --acme or --tls-key/--tls-cert, not both.');
  if (hostname === undefined || !/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i.test(hostname)) {
    throw invalid('--acme needs --hostname: the public DNS name of this edge (its MX), e.g. mx.example.com.');
  }
  const directory = stringFlag(flags, 'acme-directory') ?? LETS_ENCRYPT_DIRECTORY;
  if (!/^https:\/\/[^\s]+$/.test(directory)) throw invalid('--acme-directory must be the https:// URL of an ACME directory.');
  const email = stringFlag(flags, 'acme-email') ?? null;
  if (email !== null && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw invalid('--acme-email must be an email address.');
  const caFile = stringFlag(flags, 'acme-ca');
  let directoryCa: Buffer | null = null;
  if (caFile !== undefined) {
    try {
      directoryCa = fs.readFileSync(caFile);
    } catch {
      throw invalid('The --acme-ca file cannot be read.');
    }
  }
  const ms = <T extends number | null>(name: string, fallback: T): number | T => {
    const v = env[name];
    return v !== undefined && /^\d+$/.test(v) ? Number(v) : fallback;
  };
  const checkEvery = ms(ACME_CHECK_ENV, null);
  return {
    directoryUrl: directory,
    email,
    names: [hostname.toLowerCase()],
    dataDir,
    http: { host, port: portFlag(stringFlag(flags, 'acme-http-port'), 'acme-http-port', 80) },
    directoryCa,
    renewBeforeMs: ms(ACME_RENEW_BEFORE_ENV, null),
    checkEveryMs: checkEvery === null ? null : Math.max(100, checkEvery),
    ...(env[ACME_RETRY_ENV] !== undefined ? { retry: { attempts: ms(ACME_RETRY_ENV, 5), delaySeconds: 1 } } : {}),
  };
}

function parseEdgeArgs(args: string[], env: NodeJS.ProcessEnv = process.env): EdgeCommand {
  const { flags, positionals } = parseArgs(args, FLAGS);
  if (positionals.length > 0) throw invalid(`Unexpected argument "${positionals[0]}".`);
  const flavor = stringFlag(flags, 'flavor');
  if (flavor !== undefined && flavor !== 'development' && flavor !== 'production') throw invalid('--flavor must be development or production.');
  const data = stringFlag(flags, 'data');
  const home = stringFlag(flags, 'home');
  if (data !== undefined && home !== undefined) throw invalid('Give --data or --home, not both.');
  const dataDir = path.resolve(
    data ?? defaultEdgeDataDir(resolveHome({ home, flavor: (flavor as Flavor | undefined) ?? (isSourceCheckout() ? 'development' : 'production') })),
  );
  const host = ipFlag(stringFlag(flags, 'host'), 'host', LOOPBACK);
  const apiHost = ipFlag(stringFlag(flags, 'api-host'), 'api-host', host);
  const maxText = stringFlag(flags, 'max-message-bytes');
  const maxMessageBytes = maxText === undefined ? DEFAULT_MAX_MESSAGE_BYTES : Number(maxText);
  if (!/^\d+$/.test(maxText ?? '0') || !Number.isSafeInteger(maxMessageBytes) || maxMessageBytes < MIN_MESSAGE_BYTES) {
    throw invalid(`--max-message-bytes must be an integer of at least ${MIN_MESSAGE_BYTES}.`);
  }
  const spam = stringFlag(flags, 'spam-url');
  if (spam !== undefined && !/^https?:\/\/[^\s]+$/.test(spam)) throw invalid('--spam-url must be an http(s) URL of the rspamd controller, e.g. http://127.0.0.1:11333.');
  const dns = stringFlag(flags, 'dns');
  const acme = readAcme(flags, stringFlag(flags, 'hostname'), dataDir, host, env);
  const mtaSts = readMtaSts(flags, acme, host);
  const smartHost = readSmartHost(stringFlag(flags, 'smart-host'), stringFlag(flags, 'smart-host-user'), env);
  const dnsServers = dns?.split(',').map((s) => s.trim()).filter(Boolean);
  return {
    json: flags.json === true,
    acme,
    mtaSts,
    options: {
      dataDir,
      smtp: { host, port: portFlag(stringFlag(flags, 'smtp-port'), 'smtp-port', DEFAULT_EDGE_SMTP_PORT) },
      api: { host: apiHost, port: portFlag(stringFlag(flags, 'api-port'), 'api-port', DEFAULT_EDGE_API_PORT) },
      hostname: stringFlag(flags, 'hostname') ?? os.hostname(),
      maxMessageBytes,
      spam,
      resolver: dnsServers === undefined ? undefined : dnsResolver(dnsServers),
      ...(dnsServers !== undefined ? { dnsServers } : {}),
      publicAddresses: readPublicIps(flags),
      tls: readTls(stringFlag(flags, 'tls-key'), stringFlag(flags, 'tls-cert')),
      deliveryPort: portFlag(stringFlag(flags, 'relay-port'), 'relay-port', 25, false),
      smartHost,
      smartHostSpf: readSmartHostSpf(stringFlag(flags, 'smart-host-spf'), smartHost),
    },
  };
}

const isWildcard = (host: string) => host === '0.0.0.0' || host === '::';
const isLoopback = (host: string) => host === '127.0.0.1' || host === '::1' || host.startsWith('127.');

/** Runs `svc edge <args>` until a stop signal; returns the exit code. */
export async function runEdgeCommand(args: string[]): Promise<number> {
  let command: EdgeCommand;
  try {
    command = parseEdgeArgs(args);
  } catch (err) {
    return reportCliError(err, args.includes('--json'));
  }
  const { options } = command;
  limitHeapGrowth();
  // Everything the edge writes (sealed objects, routing, token) is private to this user.
  process.umask(0o077);
  let edge: Edge | null = null;
  let certificates: AcmeCertificates | null = null;
  let policy: MtaStsServer | null = null;
  try {
    if (command.acme) {
      // Before the listeners: the edge serves its own certificate from the first connection.
      const { AcmeCertificates, AcmeFailed } = await import('../edge/acme.js');
      certificates = new AcmeCertificates({ ...command.acme, log: (data) => line(process.stderr, data) });
      try {
        const first = await certificates.start();
        options.tls = { key: first.key, cert: first.cert };
        line(process.stderr, { event: 'edge.certificate', names: command.acme.names, not_after: first.notAfter.toISOString() });
      } catch (err) {
        const reason = err instanceof AcmeFailed ? err.message : 'the ACME exchange failed';
        throw new EdgeStartError(
          'service_unavailable',
          `No certificate for ${command.acme.names[0]} from ${command.acme.directoryUrl}: ${reason}`,
          `Check that ${command.acme.names[0]} resolves to this host and that port ${command.acme.http.port} is reachable from the internet (HTTP-01), or run without --acme and pass --tls-key and --tls-cert.`,
        );
      }
    }
    let token: ReturnType<typeof loadOrCreateApiToken>;
    try {
      token = loadOrCreateApiToken(options.dataDir);
    } catch (err) {
      if (err instanceof ApiTokenUnreadable) throw new EdgeStartError('action_required', err.message, 'Delete the api-token file to make a new token, then pair the home again with the new one.');
      throw new EdgeStartError('service_unavailable', `The edge data directory ${options.dataDir} cannot be created or written.`, 'Choose a writable directory with --data, or fix its permissions.');
    }
    edge = new Edge({ ...options, apiToken: token.token, log: (data) => line(process.stderr, data) });
    const bound = await edge.start();
    const started = edge;
    certificates?.onRenewed((c) => started.updateTls({ key: c.key, cert: c.cert }));
    if (command.mtaSts && certificates?.current) {
      const { MtaStsServer } = await import('../edge/mta-sts.js');
      const server = new MtaStsServer(command.mtaSts);
      try {
        const port = await server.start(certificates.current);
        policy = server;
        line(process.stderr, { event: 'edge.mta_sts', port, urls: command.mtaSts.domains.map((d) => `https://mta-sts.${d}/.well-known/mta-sts.txt`), mode: command.mtaSts.mode });
      } catch {
        throw new EdgeStartError('service_unavailable', `The edge could not listen for MTA-STS on ${command.mtaSts.host}:${command.mtaSts.port}.`, 'Choose another port with --mta-sts-port (senders fetch the policy on 443: forward it), or run with the rights to bind low ports.');
      }
      certificates.onRenewed((c) => server.updateTls({ key: c.key, cert: c.cert }));
    }
    const publicUrl = isWildcard(bound.api.host) ? bound.api.url.replace(/\/\/[^/]*:/, `//${options.hostname}:`) : bound.api.url;
    line(process.stdout, { event: 'edge.ready', smtp: bound.smtp, api: bound.api, token_file: token.file, data: options.dataDir });
    process.stderr.write(
      `svc edge receives mail on ${bound.smtp.host}:${bound.smtp.port} (SMTP) and serves its API at ${bound.api.url}.\n` +
        `Pair it with a home (on the home's machine, with a copy of ${token.file}): svc transport set --edge-url ${publicUrl} --edge-token-file ${token.file}\n`,
    );
    if (!options.tls && !isLoopback(bound.api.host)) {
      line(process.stderr, {
        event: 'edge.warning',
        message: 'The edge API listens beyond loopback without TLS, so its token travels in cleartext.',
        fix: 'Pass --tls-key and --tls-cert, or keep --api-host 127.0.0.1 and reach it through an SSH tunnel or a TLS reverse proxy.',
      });
    }
  } catch (err) {
    const e = err instanceof EdgeStartError ? err : new EdgeStartError('service_unavailable', 'The edge could not start.', 'Check the data directory and the ports, then start it again.');
    line(process.stderr, { event: 'edge.failed', code: e.code, message: e.message, fix: e.fix });
    await edge?.stop().catch(() => undefined);
    await policy?.stop().catch(() => undefined);
    await certificates?.stop().catch(() => undefined);
    return 1;
  }
  const running = edge;
  const acme = certificates;
  const sts = policy;
  return new Promise<number>((resolve) => {
    const onSignal = () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      Promise.all([running.stop(), acme?.stop(), sts?.stop()]).then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
