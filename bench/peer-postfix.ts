/**
 * The ingest peer: Debian's Postfix, a private instance on a loopback port delivering to a Maildir,
 * driven by the ingest benchmark's own SMTP client (`blast` from ingest.ts: same message size, same
 * connection count, same recipient) in the same run. "Stored" = the message's file appeared in the
 * Maildir's new/ directory (Postfix's virtual agent writes to tmp/, fsyncs, then renames into new/).
 *
 * The instance lives in a temporary directory (`postfix -c <dir>/etc start`): its own main.cf and
 * master.cf, queue and data directories; /etc/postfix is only read for the package's file list and
 * never configured, and nothing listens on port 25. See PEER_CONFIG for what is configured.
 * Needs root (Postfix's master runs as root and drops to the `postfix` user); otherwise, or when
 * the package cannot be installed, the peer is reported as skipped with the reason.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { blast } from './ingest.js';
import { percentile, pssMiB, round, root, sampleMemory } from './util.js';

const DOMAIN = 'ingest.test';
const MAILBOX = 'bench';
const TIMEOUT_MS = 120_000;
/** The uid/gid the virtual delivery agent writes the Maildir as. */
const NOBODY = 65534;

/** How the peer is configured, for the report (the main.cf settings that matter). */
export const PEER_CONFIG = [
  'Debian `postfix` 3.7 package, installed by `scripts/ensure-postfix.sh` with debconf "No configuration" (no system instance)',
  'private instance: `postfix -c <tmp>/etc start`, own queue_directory and data_directory under the temporary directory',
  'master.cf: one `smtpd` on `127.0.0.1:<port>` (no chroot), plus cleanup, qmgr, trivial-rewrite, bounce, virtual, anvil, postlogd',
  `virtual_mailbox_domains = ${DOMAIN}; virtual_mailbox_maps = static:${MAILBOX}/ (trailing slash = Maildir); virtual_uid/gid_maps = static:${NOBODY}`,
  'mynetworks = 127.0.0.0/8 (relay checks pass), smtpd_peername_lookup = no, smtp_dns_support_level = disabled, no TLS, no milters, no content filter',
  'logging to a file through postlogd (maillog_file), like a default install logging to syslog',
  'everything else at Postfix defaults (no tuning): the queue file is made durable before the 250, as Postfix always does',
];

function uidOf(user: string): number | null {
  const line = fs.readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${user}:`));
  return line ? Number(line.split(':')[2]) : null;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((r) => server.close(r));
  return port;
}

async function waitListening(port: number, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`postfix did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The master process and its children (smtpd, cleanup, qmgr, virtual, ...). */
function processTree(masterPid: number): number[] {
  const pids = [masterPid];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      if (ppid === masterPid) pids.push(Number(entry));
    } catch {
      // The process ended between readdir and read.
    }
  }
  return pids;
}

/** CPU ms of the whole instance: the master with its reaped children, plus the children alive now. */
function treeCpuMs(masterPid: number): number {
  let ticks = 0;
  for (const pid of processTree(masterPid)) {
    try {
      const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(f[11]) + Number(f[12]) + (pid === masterPid ? Number(f[13]) + Number(f[14]) : 0);
    } catch {
      // Gone: its time is now in the master's cutime/cstime.
    }
  }
  return (ticks * 1000) / 100;
}

function postfix(etc: string, command: 'start' | 'stop'): { ok: boolean; output: string } {
  const r = spawnSync('/usr/sbin/postfix', ['-c', etc, command], { encoding: 'utf8', timeout: 30_000 });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

export type PeerFigures = Record<string, number | null> | { skipped: string };

/** Installs (if needed) and runs Postfix, sends the ingest load into it, and measures it. */
export async function benchPostfix(): Promise<PeerFigures> {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return { skipped: 'Postfix needs root on Linux to start its master' };
  const ensure = spawnSync(path.join(root, 'scripts', 'ensure-postfix.sh'), { stdio: ['ignore', 'inherit', 'inherit'], timeout: 600_000 });
  if (ensure.status !== 0) return { skipped: 'scripts/ensure-postfix.sh could not install the postfix package' };
  const postfixUid = uidOf('postfix');
  if (postfixUid === null) return { skipped: 'the postfix user does not exist after the install' };

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-postfix-'));
  fs.chmodSync(dir, 0o755);
  const etc = path.join(dir, 'etc');
  const queue = path.join(dir, 'queue');
  const data = path.join(dir, 'data');
  const mail = path.join(dir, 'mail');
  const newDir = path.join(mail, MAILBOX, 'new');
  for (const d of [etc, queue, data, path.join(mail, MAILBOX, 'tmp'), newDir, path.join(mail, MAILBOX, 'cur')]) fs.mkdirSync(d, { recursive: true, mode: 0o755 });
  fs.chownSync(data, postfixUid, -1);
  for (const d of [mail, path.join(mail, MAILBOX), path.join(mail, MAILBOX, 'tmp'), newDir, path.join(mail, MAILBOX, 'cur')]) fs.chownSync(d, NOBODY, NOBODY);
  const port = await freePort();
  fs.writeFileSync(
    path.join(etc, 'main.cf'),
    `compatibility_level = 3.6
queue_directory = ${queue}
data_directory = ${data}
command_directory = /usr/sbin
daemon_directory = /usr/lib/postfix/sbin
shlib_directory = /usr/lib/postfix
meta_directory = /etc/postfix
mail_owner = postfix
setgid_group = postdrop
myhostname = peer.localhost
mydomain = localhost
myorigin = $myhostname
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
relay_domains =
smtpd_relay_restrictions = permit_mynetworks, reject
smtpd_recipient_restrictions = permit_mynetworks, reject
virtual_mailbox_domains = ${DOMAIN}
virtual_mailbox_base = ${mail}
virtual_mailbox_maps = static:${MAILBOX}/
virtual_uid_maps = static:${NOBODY}
virtual_gid_maps = static:${NOBODY}
alias_maps =
alias_database =
local_recipient_maps =
biff = no
smtputf8_enable = no
smtpd_peername_lookup = no
smtp_dns_support_level = disabled
maillog_file_prefixes = ${dir}
maillog_file = ${dir}/maillog
`,
  );
  fs.writeFileSync(
    path.join(etc, 'master.cf'),
    `127.0.0.1:${port} inet n - n - - smtpd
cleanup   unix  n - n - 0 cleanup
qmgr      unix  n - n 300 1 qmgr
rewrite   unix  - - n - - trivial-rewrite
bounce    unix  - - n - 0 bounce
defer     unix  - - n - 0 bounce
trace     unix  - - n - 0 bounce
verify    unix  - - n - 1 verify
proxymap  unix  - - n - - proxymap
showq     unix  n - n - - showq
error     unix  - - n - - error
retry     unix  - - n - - error
discard   unix  - - n - - discard
virtual   unix  - n n - - virtual
anvil     unix  - - n - 1 anvil
scache    unix  - - n - 1 scache
postlog   unix-dgram n - n - 1 postlogd
`,
  );
  const maillog = () => {
    try {
      return fs.readFileSync(path.join(dir, 'maillog'), 'utf8').split('\n').slice(-5).join(' | ');
    } catch {
      return '';
    }
  };
  const started = postfix(etc, 'start');
  if (!started.ok) {
    const reason = `postfix start failed: ${started.output || maillog() || 'no output'}`;
    fs.rmSync(dir, { recursive: true, force: true });
    return { skipped: reason };
  }
  try {
    await waitListening(port);
    const masterPid = Number(fs.readFileSync(path.join(queue, 'pid', 'master.pid'), 'utf8').trim());

    const stored = new Map<string, number>();
    const seen = new Set<string>();
    const take = (name: string, at: number) => {
      if (seen.has(name)) return;
      try {
        const head = fs.readFileSync(path.join(newDir, name), 'latin1');
        const subject = /^Subject: (.*)$/m.exec(head)?.[1]?.trim();
        seen.add(name);
        if (subject) stored.set(subject, at);
      } catch {
        // Not there (yet): a later event or the final sweep takes it.
      }
    };
    const watcher = fs.watch(newDir, (_event, name) => name && take(String(name), performance.now()));

    // Warm-up: the first message starts smtpd, cleanup, trivial-rewrite and virtual.
    const probe = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
    await probe.sendMail({ from: 'load@sender.test', to: `${MAILBOX}@${DOMAIN}`, subject: 'warm-up', text: 'hi' });
    probe.close();
    for (const until = Date.now() + 30_000; !stored.has('warm-up'); await new Promise((r) => setTimeout(r, 50))) {
      if (Date.now() > until) throw new Error(`postfix did not deliver the warm-up message: ${maillog()}`);
    }

    const memory = sampleMemory(() => processTree(masterPid).reduce((sum, pid) => sum + (pssMiB(pid) ?? 0), 0));
    const cpuBefore = treeCpuMs(masterPid);
    const t0 = performance.now();
    const { accepted, seconds } = await blast(port);
    const until = Date.now() + TIMEOUT_MS;
    while (stored.size - 1 < accepted.size && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    // A sweep for anything the watcher missed (counted as stored now, so never flattering).
    for (const name of fs.readdirSync(newDir)) take(name, performance.now());
    const cpuMs = treeCpuMs(masterPid) - cpuBefore;
    const pss = memory.stop();
    watcher.close();

    const latencies: number[] = [];
    let last = t0;
    for (const [subject, at] of accepted) {
      const s = stored.get(subject);
      if (s === undefined) continue;
      latencies.push(s - at);
      last = Math.max(last, s);
    }
    return {
      messages: accepted.size,
      stored: latencies.length,
      accept_msgs_per_s: round(accepted.size / seconds, 0),
      stored_msgs_per_s: round(latencies.length / ((last - t0) / 1000), 0),
      accept_to_stored_p50_ms: round(percentile(latencies, 50)),
      accept_to_stored_p99_ms: round(percentile(latencies, 99)),
      cpu_ms_per_msg: round(cpuMs / Math.max(1, latencies.length)),
      peak_pss_mib: pss.peak,
    };
  } finally {
    postfix(etc, 'stop');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
