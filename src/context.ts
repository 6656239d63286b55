/**
 * The service context: what every request operation, route plugin and MCP tool is given (the
 * database, the event bus, the CPU pool, the owner account and the listener it serves). Decorated
 * onto each fastify instance as `app.svc` by src/http/app.ts.
 */
import type { Listener } from './auth/principal.js';
import type { OwnerAccount } from './owner/owner-account.js';
import type { Db } from './db/open.js';
import type { Bus } from './supervisor/bus.js';
import type { CpuPool } from './supervisor/pool.js';
import type { Readers } from './supervisor/readers.js';
import type { MessageWaits } from './events/waits.js';
import type { RemoteAccess } from './remote/remote-access.js';
import type { BackupService } from './backup/service.js';
import type { LoopHealth } from './supervisor/loop-table.js';

/** What `svc doctor` reads beyond the database: the home on disk and the loops' heartbeats. */
export interface HealthSources {
  home: string;
  loops(): LoopHealth[];
}

/** Everything route plugins need, decorated onto the instance as `app.svc`. */
export interface AppContext {
  db: Db;
  bus: Bus;
  pool: CpuPool;
  /** Reader threads: mail reads and search run there, never on the request thread. */
  reads: Readers;
  /** Requests waiting for the next message (GET …/messages/wait, MCP wait_for_message). */
  waits: MessageWaits;
  owner: OwnerAccount;
  /** The listener's own origin, e.g. http://127.0.0.1:8733; set once listening. */
  origin: () => string;
  /** Which listener this app serves: loopback (everything) or the tunnel (agent routes only). */
  listener: Listener;
  /** Remote access (tunnel listener and settings); given to the loopback listener only. */
  remote?: RemoteAccess;
  /** Backups and the recovery code (src/backup/service.ts); given to the loopback listener only. */
  backups?: BackupService;
  /** What `svc doctor` reads beyond the database (the home, the loops' heartbeats); the loopback listener only. */
  health?: HealthSources;
}
