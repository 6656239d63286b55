/**
 * The stand-in tunnel connector (test/fixtures/tunnel-proxy.mjs) as tests use it: the connector
 * command that runs it on a loopback port (pick one with `freePort`, check it with `answers`). Requests
 * through it reach the tunnel listener with the public hostname as `Host`, as a real tunnel's do
 * (the tunnel listener serves no other Host).
 */
import path from 'node:path';
import { repoRoot } from './svc.js';

export const TUNNEL_PROXY = path.join(repoRoot, 'test', 'fixtures', 'tunnel-proxy.mjs');

// No `exec`: the shell stays the connector's pid and the proxy its child, so killing the
// connector's process group (not just the pid) is what keeps the proxy from outliving it.
export const tunnelProxyCommand = (port: number) => `"${process.execPath}" "${TUNNEL_PROXY}" ${port}`;
