/**
 * The event WebSocket hub (spec §6.4): one per process, holding every `/v0/ws` connection.
 *
 * The log is the queue of record. Each connection reads forward from its own cursor, so a resume,
 * the events since the socket opened and the live stream are one ordered read with no gaps and no
 * duplicates. The hub only says "there may be new rows": on a bus `{kind:'event'}` and, because
 * writers in other processes (and tests) never post on this bus, whenever a poll of the log head
 * every 500 ms finds it moved.
 *
 * Pacing: a connection reads from the log only while less than LOW_WATER_BYTES waits for the
 * client, so a long replay to a client that keeps reading never trips the 1 MiB limit. A live
 * client whose socket is already backed up when new events arrive is not keeping up: those events
 * are read into the connection's queue without waiting for it to drain (one log read per
 * event-loop turn, as for every connection), and when the socket's `bufferedAmount` plus that
 * queue passes 1 MiB the connection closes with 1013.
 */
import type { RawData, WebSocket } from 'ws';
import { Type, type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import type { Db } from '../db/open.js';
import type { Bus } from '../supervisor/bus.js';
import type { Principal } from '../auth/principal.js';
import { refreshPrincipal } from '../auth/credentials.js';
import { normalizeInboxId } from '../auth/access.js';
import { deliveredPayload, latestSeq, seqOfEventId, storedEventsAfter } from './log.js';
import { EVENT_TYPES, canReadEventStream, isEventVisible, type EventAddress } from './visibility.js';

/** WebSocket close codes used by the protocol (RFC 6455 §7.4, spec §6.4 table). */
export const CLOSE_CODE = {
  goingAway: 1001,
  policyViolation: 1008,
  messageTooBig: 1009,
  tryAgainLater: 1013,
} as const;

/** Client frames are at most this many characters (spec §8). */
export const MAX_CLIENT_FRAME_CHARS = 8_192;
/** More than this waiting for a client closes it with 1013 (spec §8). */
export const MAX_PENDING_BYTES = 1024 * 1024;
/** Below this much waiting, a connection reads more from the log. */
const LOW_WATER_BYTES = 256 * 1024;
const READ_BATCH = 100;
/** Safety-net poll of the log head, for writers that do not post on the bus. */
const POLL_MS = 500;
/** On shutdown, sockets that have not finished the close handshake by then are cut. */
const SHUTDOWN_GRACE_MS = 1_000;

export interface EventStreamTiming {
  /** The server pings this often (spec: 20 s). */
  pingMs: number;
  /** No pong for this long closes the connection with 1001 (spec: 60 s). */
  pongTimeoutMs: number;
}

export const SPEC_EVENT_STREAM_TIMING: EventStreamTiming = { pingMs: 20_000, pongTimeoutMs: 60_000 };

/**
 * The spec's timings, unless the test-only variables SVC_TEST_WS_PING_MS and
 * SVC_TEST_WS_PONG_TIMEOUT_MS shorten them (docs/websocket.md), so tests need no minute-long sleeps.
 */
export function eventStreamTiming(env: NodeJS.ProcessEnv): EventStreamTiming {
  const fromEnv = (name: string, fallback: number) => {
    const value = Number(env[name]);
    return Number.isSafeInteger(value) && value > 0 ? value : fallback;
  };
  return {
    pingMs: fromEnv('SVC_TEST_WS_PING_MS', SPEC_EVENT_STREAM_TIMING.pingMs),
    pongTimeoutMs: fromEnv('SVC_TEST_WS_PONG_TIMEOUT_MS', SPEC_EVENT_STREAM_TIMING.pongTimeoutMs),
  };
}

export const SubscribeFrame = Type.Object(
  {
    type: Type.Literal('subscribe'),
    event_types: Type.Optional(Type.Array(Type.Enum(EVENT_TYPES))),
    inbox_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 320 }))),
    last_event_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: false },
);
export type SubscribeFrame = Static<typeof SubscribeFrame>;

export const PongFrame = Type.Object({ type: Type.Literal('pong') }, { additionalProperties: false });

/**
 * Which protocol a socket speaks (docs/websocket.md): svc's own on `/v0/ws`, or the AgentMail
 * SDK's on `/v0` — the same events and filters, with AgentMail's `pod_ids` and event names, its
 * `{type:"error"}` frame before a refusal, and WebSocket ping frames (which every client answers
 * by itself) instead of JSON pings the SDK has no way to answer.
 */
export type StreamDialect = 'svc' | 'agentmail';

/** AgentMail's event names svc never emits; subscribing to them is allowed and matches nothing. */
export const AGENTMAIL_ONLY_EVENT_TYPES = ['message.opened'] as const;

export const AgentMailSubscribeFrame = Type.Object(
  {
    type: Type.Literal('subscribe'),
    event_types: Type.Optional(Type.Array(Type.Union([Type.Enum(EVENT_TYPES), Type.Enum(AGENTMAIL_ONLY_EVENT_TYPES)]))),
    inbox_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 320 }))),
    pod_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 128 }))),
    last_event_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: false },
);
export type AgentMailSubscribeFrame = Static<typeof AgentMailSubscribeFrame>;

const subscribeFrame = Compile(SubscribeFrame);
const agentMailSubscribeFrame = Compile(AgentMailSubscribeFrame);
const pongFrame = Compile(PongFrame);

/** A resume point given as `?last_event_id=` and already checked to exist. */
export interface UrlResume {
  eventId: string;
  seq: number;
}

interface LogRow extends EventAddress {
  seq: number;
  /** The pod of the event's inbox (docs/pods.md); null for owner-only events. */
  pod_id: string | null;
  /**
   * The event object as JSON, sent as it is: read once, when the first connection queues it, so
   * rows a connection reads but has no room for yet cost no message read (src/events/log.ts).
   */
  payload(): string;
}

interface QueuedEvent {
  text: string;
  bytes: number;
  address: EventAddress;
}

/** What a connection needs from its hub. */
interface HubServices {
  db: Db;
  timing: EventStreamTiming;
  readAfter(seq: number): LogRow[];
  /**
   * The event-loop turn now, as a number that grows once per turn. A connection reads the log at
   * most once per turn: a client that takes everything at once (its socket never backs up, and
   * each send's callback asks for more) while the log keeps growing would otherwise hold the
   * service's thread for as long as writers keep up, starving every other connection, the log
   * poll and the HTTP API.
   */
  turn(): number;
  forget(connection: EventConnection): void;
}

export class EventHub {
  readonly #services: HubServices;
  readonly #connections = new Set<EventConnection>();
  /** Every accepted socket until its TCP connection is gone, including ones already closing. */
  readonly #sockets = new Set<WebSocket>();
  readonly #unsubscribe: () => void;
  #pollTimer: NodeJS.Timeout | null = null;
  #knownHead: number;
  #closing = false;
  /** The last log read of this event-loop turn, and the head known when it was made (`#readAfter`). */
  #shared: { after: number; head: number; rows: LogRow[] } | null = null;
  #turn = 0;
  #turnEnds = false;

  constructor(db: Db, bus: Bus, timing: EventStreamTiming) {
    this.#services = {
      db,
      timing,
      readAfter: (seq) => this.#readAfter(seq),
      turn: () => this.#currentTurn(),
      forget: (connection) => this.#forget(connection),
    };
    this.#knownHead = latestSeq(db);
    this.#unsubscribe = bus.subscribe('event', ({ seq }) => this.#headMoved(seq));
  }

  /** Takes over an upgraded socket whose principal passed the pre-upgrade checks. */
  accept(socket: WebSocket, principal: Principal, urlResume: UrlResume | null, headAtOpen: number, dialect: StreamDialect = 'svc'): void {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
    if (this.#closing) {
      socket.close(CLOSE_CODE.goingAway, 'svc is stopping');
      return;
    }
    // Without a resume point the stream starts after the last event that existed at open (read before the upgrade answered).
    const connection = new EventConnection(this.#services, socket, principal, headAtOpen, urlResume, dialect);
    this.#connections.add(connection);
    this.#pollTimer ??= setInterval(() => this.#poll(), POLL_MS).unref();
  }

  /** Closes every socket with 1001 and waits for them to go (cutting stragglers), so the HTTP server can stop. */
  async close(): Promise<void> {
    this.#closing = true;
    this.#unsubscribe();
    this.#stopPolling();
    for (const connection of [...this.#connections]) connection.close(CLOSE_CODE.goingAway, 'svc is stopping');
    await Promise.all([...this.#sockets].map((socket) => closeWithin(socket, SHUTDOWN_GRACE_MS)));
  }

  /**
   * The log after `seq`. Every connection at the head asks for the same rows when the head
   * moves; they are read once per event-loop turn and shared, then forgotten at the end of the
   * turn, so no connection is sent rows older than a read made in its own turn (a deleted
   * message's redaction is seen as before). A loop committing meanwhile only means a connection
   * gets the newer rows at the next notice.
   */
  #readAfter(seq: number): LogRow[] {
    // The turn's end forgets the shared read (#currentTurn).
    this.#currentTurn();
    const shared = this.#shared;
    // A head that moved since the shared read was made (a bus notice or a poll in the same turn)
    // means rows it cannot hold: the connection that heard of them reads again.
    if (shared?.after === seq && shared.head === this.#knownHead) return shared.rows;
    const db = this.#services.db;
    const rows = storedEventsAfter(db, seq, READ_BATCH).map((row): LogRow => {
      let text: string | undefined;
      return { seq: row.seq, event_type: row.event_type, inbox_id: row.inbox_id, pod_id: row.pod_id, payload: () => (text ??= deliveredPayload(db, row)) };
    });
    this.#shared = { after: seq, head: this.#knownHead, rows };
    return rows;
  }

  /** See HubServices.turn: advanced by an immediate, so a turn ends where the event loop's check phase runs. */
  #currentTurn(): number {
    if (!this.#turnEnds) {
      this.#turnEnds = true;
      setImmediate(() => {
        this.#turn++;
        this.#turnEnds = false;
        this.#shared = null;
      });
    }
    return this.#turn;
  }

  #poll(): void {
    this.#headMoved(latestSeq(this.#services.db));
  }

  #headMoved(seq: number): void {
    if (seq <= this.#knownHead) return;
    this.#knownHead = seq;
    for (const connection of this.#connections) connection.newEvents();
  }

  #forget(connection: EventConnection): void {
    this.#connections.delete(connection);
    if (this.#connections.size === 0) this.#stopPolling();
  }

  #stopPolling(): void {
    if (this.#pollTimer) clearInterval(this.#pollTimer);
    this.#pollTimer = null;
  }
}

/** Resolves once the socket is closed; a peer that does not answer the close handshake is cut. */
function closeWithin(socket: WebSocket, graceMs: number): Promise<void> {
  if (socket.readyState === socket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    const cut = setTimeout(() => socket.terminate(), graceMs);
    socket.once('close', () => {
      clearTimeout(cut);
      resolve();
    });
    if (socket.readyState === socket.OPEN) socket.close(CLOSE_CODE.goingAway, 'svc is stopping');
  });
}

type ConnectionState = 'awaiting_subscribe' | 'streaming' | 'closed';

/** One `/v0/ws` client: its subscription, its cursor into the log, its ping and pong clock. */
class EventConnection {
  #state: ConnectionState = 'awaiting_subscribe';
  #principal: Principal;
  /** seq of the last log row read (sent, queued or filtered out). */
  #cursor: number;
  #eventTypes: ReadonlySet<string> | null = null;
  #inboxIds: ReadonlySet<string> | null = null;
  /** AgentMail's `pod_ids` filter: only events of inboxes in these pods (docs/pods.md). */
  #podIds: ReadonlySet<string> | null = null;
  /** Until a read first finds the end of the log, the backlog is read only as fast as the client takes it. */
  #replaying = true;
  /** Rows may exist after #cursor. */
  #logAhead = true;
  #queue: QueuedEvent[] = [];
  #queuedBytes = 0;
  #pumping = false;
  /** A continuation of #pump is waiting for the next turn (HubServices.turn). */
  #pumpLater: NodeJS.Immediate | null = null;
  /** The turn of this connection's last log read. */
  #readTurn = -1;
  #laterReadsEverything = false;
  readonly #pingTimer: NodeJS.Timeout;
  readonly #pongDeadline: NodeJS.Timeout;
  readonly #afterSend = (err?: Error | null) => {
    if (!err) this.#pump(false);
  };

  constructor(
    private readonly hub: HubServices,
    private readonly socket: WebSocket,
    principal: Principal,
    openedAtSeq: number,
    private readonly urlResume: UrlResume | null,
    private readonly dialect: StreamDialect,
  ) {
    this.#principal = principal;
    this.#cursor = openedAtSeq;
    // Ticks start at open so a credential revoked before the subscribe frame still ends the
    // connection; pings themselves wait for the subscribe frame (nothing is sent before it).
    this.#pingTimer = setInterval(() => this.#tick(), hub.timing.pingMs);
    // A client that never subscribes, or stops answering pings, is gone.
    this.#pongDeadline = setTimeout(() => this.close(CLOSE_CODE.goingAway, 'no pong received in time'), hub.timing.pongTimeoutMs);
    socket.on('message', (data, isBinary) => this.#onFrame(data, isBinary));
    if (dialect === 'agentmail') socket.on('pong', () => this.#pongDeadline.refresh());
    socket.once('close', () => this.#stop());
  }

  /** The hub saw the log grow. */
  newEvents(): void {
    if (this.#state === 'streaming') this.#pump(true);
  }

  close(code: number, reason: string): void {
    if (this.#state === 'closed') return;
    this.#stop();
    this.socket.close(code, reason);
  }

  #stop(): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    clearInterval(this.#pingTimer);
    clearTimeout(this.#pongDeadline);
    if (this.#pumpLater) clearImmediate(this.#pumpLater);
    this.#pumpLater = null;
    this.#queue = [];
    this.#queuedBytes = 0;
    this.hub.forget(this);
  }

  #onFrame(data: RawData, isBinary: boolean): void {
    if (this.#state === 'closed') return;
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    const text = isBinary ? null : bytes.toString('utf8');
    const size = text === null ? bytes.length : characterCount(text);
    if (size > MAX_CLIENT_FRAME_CHARS) return this.#refuse(CLOSE_CODE.messageTooBig, `frames are limited to ${MAX_CLIENT_FRAME_CHARS} characters`);
    if (text === null) return this.#refuse(CLOSE_CODE.policyViolation, 'frames must be JSON text');
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      return this.#refuse(CLOSE_CODE.policyViolation, 'the frame is not JSON');
    }
    if (pongFrame.Check(frame)) {
      this.#pongDeadline.refresh();
      return;
    }
    const subscribe = this.dialect === 'svc' ? (subscribeFrame.Check(frame) ? frame : null) : agentMailSubscribeFrame.Check(frame) ? frame : null;
    if (subscribe) {
      if (this.#state !== 'awaiting_subscribe') return this.#refuse(CLOSE_CODE.policyViolation, 'only one subscribe frame is allowed');
      return this.#subscribe(subscribe);
    }
    this.#refuse(CLOSE_CODE.policyViolation, 'invalid frame: expected subscribe or pong with the documented fields');
  }

  /** A client mistake: AgentMail's clients are told in an `error` frame first (their close events carry no reason). */
  #refuse(code: number, reason: string): void {
    if (this.dialect === 'agentmail' && this.socket.readyState === this.socket.OPEN) {
      this.socket.send(JSON.stringify({ type: 'error', name: code === CLOSE_CODE.messageTooBig ? 'FrameTooLargeError' : 'ValidationError', message: reason }));
    }
    this.close(code, reason);
  }

  #subscribe(frame: SubscribeFrame | AgentMailSubscribeFrame): void {
    let resumeSeq = this.urlResume?.seq ?? null;
    const resumeId = frame.last_event_id ?? this.urlResume?.eventId;
    if (frame.last_event_id !== undefined) {
      if (this.urlResume && this.urlResume.eventId !== frame.last_event_id) {
        return this.#refuse(CLOSE_CODE.policyViolation, 'last_event_id in the frame differs from the URL');
      }
      resumeSeq = seqOfEventId(this.hub.db, frame.last_event_id);
      if (resumeSeq === null) return this.#refuse(CLOSE_CODE.policyViolation, 'unknown or expired last_event_id');
    }
    if (resumeSeq !== null) this.#cursor = resumeSeq;
    this.#eventTypes = frame.event_types ? new Set(frame.event_types) : null;
    const inboxIds = frame.inbox_ids ? [...new Set(frame.inbox_ids.map(normalizeInboxId))] : undefined;
    this.#inboxIds = inboxIds ? new Set(inboxIds) : null;
    const podIds = 'pod_ids' in frame && frame.pod_ids ? [...new Set(frame.pod_ids)] : undefined;
    this.#podIds = podIds ? new Set(podIds) : null;
    this.#state = 'streaming';
    this.#pongDeadline.refresh();
    this.#send({
      type: 'subscribed',
      ...(frame.event_types ? { event_types: [...this.#eventTypes!] } : {}),
      ...(inboxIds ? { inbox_ids: inboxIds } : {}),
      ...(podIds ? { pod_ids: podIds } : {}),
      ...(resumeId !== undefined ? { last_event_id: resumeId } : {}),
    });
    this.#pump(false);
  }

  /** Every ping interval: recheck the credential, then ping (svc's protocol: once subscribed). */
  #tick(): void {
    if (this.dialect === 'agentmail') return this.#tickWithPingFrame();
    if (!this.#recheckPrincipal() || this.#state !== 'streaming') return;
    if (this.#pendingBytes() > MAX_PENDING_BYTES) return this.close(CLOSE_CODE.tryAgainLater, 'more than 1 MiB is waiting for this client');
    this.#send({ type: 'ping', timestamp: new Date().toISOString() });
  }

  /**
   * The SDK's socket: a ping frame, which is no message, from the upgrade on, so a client that
   * subscribes late is not closed for a silence it could not help.
   */
  #tickWithPingFrame(): void {
    if (!this.#recheckPrincipal()) return;
    if (this.#state === 'streaming' && this.#pendingBytes() > MAX_PENDING_BYTES) return this.close(CLOSE_CODE.tryAgainLater, 'more than 1 MiB is waiting for this client');
    this.socket.ping();
  }

  /**
   * Every frame goes out with the same callback: whatever frees socket buffer may let the
   * queue move, and pings sent to a stalled client count too.
   */
  #send(frame: string | Record<string, unknown>): void {
    this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame), this.#afterSend);
  }

  /** The credential as it stands now (spec §5.2: rechecked at delivery); closes 1008 when it no longer may read. */
  #recheckPrincipal(): boolean {
    const current = refreshPrincipal(this.hub.db, this.#principal);
    if (!current) {
      this.close(CLOSE_CODE.policyViolation, 'the credential was revoked or expired');
      return false;
    }
    if (!canReadEventStream(current)) {
      this.close(CLOSE_CODE.policyViolation, 'the credential no longer has message_read or draft_read');
      return false;
    }
    this.#principal = current;
    return true;
  }

  #pendingBytes(): number {
    return this.socket.bufferedAmount + this.#queuedBytes;
  }

  /**
   * Moves events from the log through the queue to the socket, paced as the module comment says,
   * with at most one log read per turn (HubServices.turn), also when send callbacks call back here
   * within the turn: more waits for the next turn. `readingEverything` carries a slow client's
   * reading over to that turn.
   */
  #pump(newEvents: boolean, readingEverything = false): void {
    if (this.#state !== 'streaming' || this.#pumping) {
      if (newEvents) this.#logAhead = true;
      return;
    }
    this.#pumping = true;
    try {
      if (newEvents) this.#logAhead = true;
      const readEverything = readingEverything || (newEvents && !this.#replaying && this.socket.bufferedAmount > LOW_WATER_BYTES);
      while (this.#state === 'streaming') {
        this.#flush();
        if (!this.#logAhead) return;
        // The send callbacks call back here once the client has taken enough.
        if (!readEverything && this.#pendingBytes() >= LOW_WATER_BYTES) return;
        if (this.#readTurn === this.hub.turn()) return this.#pumpNextTurn(readEverything);
        if (!this.#recheckPrincipal()) return;
        this.#readTurn = this.hub.turn();
        const rows = this.hub.readAfter(this.#cursor);
        let readAll = true;
        for (const row of rows) {
          if (!readEverything && this.#pendingBytes() >= LOW_WATER_BYTES) {
            readAll = false;
            break;
          }
          this.#cursor = row.seq;
          if (!this.#wants(row)) continue;
          if (this.#pendingBytes() > MAX_PENDING_BYTES) return this.close(CLOSE_CODE.tryAgainLater, 'more than 1 MiB is waiting for this client');
          const text = row.payload();
          const bytes = Buffer.byteLength(text);
          this.#queue.push({ text, bytes, address: { event_type: row.event_type, inbox_id: row.inbox_id } });
          this.#queuedBytes += bytes;
        }
        if (readAll && rows.length < READ_BATCH) {
          this.#logAhead = false;
          this.#replaying = false;
        }
      }
    } finally {
      this.#pumping = false;
    }
  }

  #pumpNextTurn(readEverything: boolean): void {
    // A continuation already waiting reads everything if either asked it to.
    this.#laterReadsEverything ||= readEverything;
    if (this.#pumpLater) return;
    this.#pumpLater = setImmediate(() => {
      const everything = this.#laterReadsEverything;
      this.#pumpLater = null;
      this.#laterReadsEverything = false;
      this.#pump(false, everything);
    });
  }

  #flush(): void {
    while (this.#queue.length > 0 && this.socket.bufferedAmount <= LOW_WATER_BYTES && this.#state === 'streaming') {
      const next = this.#queue.shift()!;
      this.#queuedBytes -= next.bytes;
      // Permissions can change while an event waits; the check that counts is the one at sending.
      if (!isEventVisible(this.#principal, next.address)) continue;
      this.#send(next.text);
    }
  }

  #wants(event: LogRow): boolean {
    if (this.#podIds && (event.pod_id === null || !this.#podIds.has(event.pod_id))) return false;
    if (this.#eventTypes && !this.#eventTypes.has(event.event_type)) return false;
    if (this.#inboxIds && (event.inbox_id === null || !this.#inboxIds.has(event.inbox_id))) return false;
    return isEventVisible(this.#principal, event);
  }
}

/** Characters as code points, so a frame of emoji is measured like a frame of letters. */
function characterCount(text: string): number {
  if (text.length <= MAX_CLIENT_FRAME_CHARS) return text.length;
  let count = 0;
  for (const _ of text) count++;
  return count;
}
