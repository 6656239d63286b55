/**
 * A stable local URL (issue 21 §3, docs/ports.md): without --port, `svc serve` listens on
 * 127.0.0.1:8733 and the built-in edge on SMTP 127.0.0.1:2733; a production home whose port is
 * taken stops with service_unavailable naming the port and the option; a development home moves
 * to the next free port and says so; `svc --version` answers. The tests hold the default ports
 * themselves with plain listeners (every other test runs on free ports, test/helpers/svc.ts).
 */
import t from 'tap';
import net from 'node:net';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { failingStart, startSvc, svcBin, tempDir } from '../helpers/svc.js';

/** Holds 127.0.0.1:port until closed; null when someone else already has it. */
function hold(port: number): Promise<net.Server | null> {
  return new Promise((resolve) => {
    const server = net.createServer((s) => s.destroy());
    server.once('error', () => resolve(null));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => resolve(server));
  });
}
const close = (s: net.Server | null) => new Promise<void>((r) => (s ? s.close(() => r()) : r()));

/** Runs `fn` with the default ports held by this test (whoever else may hold them, they are not free for svc). */
async function withPortsTaken(ports: number[], fn: () => Promise<void>): Promise<void> {
  const held = await Promise.all(ports.map(hold));
  try {
    await fn();
  } finally {
    await Promise.all(held.map(close));
  }
}

t.test('production: the default port 8733, taken, is service_unavailable naming it and --port', async (t) => {
  await withPortsTaken([8733], async () => {
    const home = path.join(tempDir('svc-port-'), 'home');
    const run = await failingStart({ home, init: true, args: ['--default-ports', '--flavor', 'production'] });
    t.equal(run.code, 1);
    t.match(run.failure, { code: 'service_unavailable', cause: 'PortInUse', message: /Port 8733 on 127\.0\.0\.1 is already in use/, fix: /--port N/ });
  });
});

t.test('production: the built-in edge on its taken default SMTP port 2733 names the port and --smtp-port', async (t) => {
  await withPortsTaken([2733], async () => {
    const home = path.join(tempDir('svc-port-'), 'home');
    const run = await failingStart({ home, init: true, args: ['--default-ports', '--port', '0', '--local-edge', '--flavor', 'production'] });
    t.equal(run.code, 1);
    t.match(run.failure, { code: 'service_unavailable', cause: 'LocalEdgeFailed', message: /127\.0\.0\.1:2733/, fix: /SMTP port 2733.*--smtp-port/ });
  });
});

t.test('development: taken defaults move to the next free ports, and the start says so', async (t) => {
  await withPortsTaken([8733, 2733], async () => {
    const svc = await startSvc({ args: ['--default-ports', '--flavor', 'development', '--local-edge'] });
    t.teardown(() => svc.stop());
    const moved = svc.stdoutLines.find((l) => l.event === 'server.port_changed');
    t.match(moved, { wanted: 8733, port: Number, message: /8733 is in use/ });
    const port = moved!.port as number;
    t.ok(port > 8733 && port <= 8753, `a port after 8733: ${port}`);
    t.equal(svc.url, `http://127.0.0.1:${port}`);
    const edge = svc.stdoutLines.find((l) => l.event === 'edge.port_changed');
    t.match(edge, { wanted: 2733, port: Number });
    const ready = svc.stdoutLines.find((l) => l.event === 'server.ready');
    t.equal(ready!.smtp, `127.0.0.1:${edge!.port}`);
  });
});

t.test('with the defaults free, svc serve listens on 127.0.0.1:8733 and SMTP on 2733, across restarts', async (t) => {
  const probe = await Promise.all([hold(8733), hold(2733)]);
  await Promise.all(probe.map(close));
  if (probe.some((s) => s === null)) {
    t.fail('a default port is held by another program on this machine; this test needs 8733 and 2733 free');
    return;
  }
  const first = await startSvc({ args: ['--default-ports', '--flavor', 'production', '--local-edge'] });
  t.equal(first.url, 'http://127.0.0.1:8733');
  t.equal(first.stdoutLines.find((l) => l.event === 'server.ready')!.smtp, '127.0.0.1:2733');
  await first.stop();
  const again = await startSvc({ home: first.home, init: false, args: ['--default-ports', '--flavor', 'production', '--local-edge'] });
  t.teardown(() => again.stop());
  t.equal(again.url, 'http://127.0.0.1:8733', 'the same URL after a restart');
});

t.test('svc --version prints the package version', async (t) => {
  const version = (JSON.parse(execFileSync('node', ['-p', 'JSON.stringify(require("./package.json"))'], { encoding: 'utf8' })) as { version: string }).version;
  t.equal(execFileSync(process.execPath, [svcBin, '--version'], { encoding: 'utf8' }), `svc ${version} (Node.js ${process.versions.node})\n`);
  t.same(JSON.parse(execFileSync(process.execPath, [svcBin, 'version', '--json'], { encoding: 'utf8' })), { version, node: process.versions.node });
  t.match(execFileSync(process.execPath, [svcBin, 'edge', '--help'], { encoding: 'utf8' }), /--smtp-port N +SMTP port \(default 2733/);
});
