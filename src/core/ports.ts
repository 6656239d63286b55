/**
 * The fixed local ports (issue 21 §3, docs/ports.md): `svc serve` listens on 127.0.0.1:8733 and
 * the built-in edge takes SMTP on 127.0.0.1:2733 unless told otherwise, so the owner's URL stays
 * the same across restarts and matches `svc service install`'s default. A taken port stops a
 * production start with an error naming it; a development home moves to the next free port and
 * says so.
 */
import net from 'node:net';

export const DEFAULT_SERVICE_PORT = 8733;
export const DEFAULT_LOCAL_SMTP_PORT = 2733;
/** Ports after the default a development start tries. */
export const DEV_PORT_TRIES = 20;

/** Whether nothing listens on host:port right now (a probe: listen, then close). */
function isFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/** The first free port from `start` on, trying `tries` of them; `start` itself when none is free (the listen then says so). */
export async function firstFreePort(host: string, start: number, tries: number): Promise<number> {
  for (let port = start; port < start + tries && port <= 65535; port++) if (await isFree(host, port)) return port;
  return start;
}

/** Whether a listen failed because the address is taken. */
export const isAddressInUse = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code === 'EADDRINUSE';
