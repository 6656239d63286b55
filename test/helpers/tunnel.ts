/**
 * The stand-in tunnel connector (test/fixtures/tunnel-proxy.mjs) as tests use it: a free loopback
 * port for it, the connector command that runs it there, and a check that it answers. Requests
 * through it reach the tunnel listener with the public hostname as `Host`, as a real tunnel's do
 * (the tunnel listener serves no other Host).
 */
import net from 'node:net';
import path from 'node:path';
import { repoRoot } from './svc.js';

export const TUNNEL_PROXY = path.join(repoRoot, 'test', 'fixtures', 'tunnel-proxy.mjs');

// No `exec`: the shell stays the connector's pid and the proxy its child, so killing the
// connector's process group (not just the pid) is what keeps the proxy from outliving it.
export const tunnelProxyCommand = (port: number) => `"${process.execPath}" "${TUNNEL_PROXY}" ${port}`;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Whether anything accepts TCP connections on the loopback port. */
export function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
