/**
 * Live updates over `/v0/ws` (spec §6.4): the browser authenticates with the session cookie, its
 * own origin and the subprotocols `svc.events` + `csrf.<token>`. One socket for the whole app;
 * pages subscribe to the events they care about. The server never reconnects, so this does, with
 * `last_event_id` set to the last event seen so nothing is missed in between.
 *
 * A subscription without a resume point starts at the log's head when the socket opens, so an
 * event committed after a page loaded its data but before that moment is never sent: when such a
 * subscription is confirmed, every handler is called with `null` ("you may have missed events")
 * and reloads.
 */
import { useEffect, useState } from 'preact/hooks';
import { csrf, markConnectionLost, verifyServer } from './api';

export interface LiveEvent {
  type: 'event';
  event_type: string;
  event_id: string;
  [payload: string]: unknown;
}

/** `impostor`: something other than svc answers at this origin; the page sends nothing to it. */
export type LiveState = 'off' | 'connecting' | 'live' | 'retrying' | 'impostor';

const handlers = new Set<(e: LiveEvent) => void>();
const resyncs = new Set<() => void>();
const stateListeners = new Set<(s: LiveState) => void>();
let socket: WebSocket | null = null;
let state: LiveState = 'off';
let lastEventId: string | null = null;
let retryTimer: number | undefined;
let retryDelay = 1000;
const RETRY_MAX_MS = 30_000;

function setState(next: LiveState): void {
  state = next;
  for (const l of stateListeners) l(next);
}

export function startLive(): void {
  if (socket || !csrf()) return;
  clearTimeout(retryTimer);
  setState('connecting');
  const scheme = window.location.protocol === 'https:' ? 'wss' : 'ws';
  const ws = new WebSocket(`${scheme}://${window.location.host}/v0/ws`, ['svc.events', `csrf.${csrf()}`]);
  socket = ws;
  let fresh = true;
  ws.onopen = () => {
    const frame: Record<string, unknown> = { type: 'subscribe' };
    if (lastEventId) frame.last_event_id = lastEventId;
    fresh = !lastEventId;
    ws.send(JSON.stringify(frame));
  };
  ws.onmessage = (msg) => {
    let data: { type?: string } & Record<string, unknown>;
    try {
      data = JSON.parse(String(msg.data));
    } catch {
      return;
    }
    if (data.type === 'subscribed') {
      retryDelay = 1000;
      setState('live');
      if (fresh) for (const r of resyncs) r();
    } else if (data.type === 'ping') ws.send(JSON.stringify({ type: 'pong' }));
    else if (data.type === 'event') {
      const event = data as LiveEvent;
      lastEventId = event.event_id;
      for (const h of handlers) h(event);
    }
  };
  ws.onclose = (ev) => {
    if (socket !== ws) return;
    socket = null;
    if (!csrf()) return setState('off');
    // 1008 with a resume id that expired: start fresh rather than failing forever.
    if (ev.code === 1008) lastEventId = null;
    markConnectionLost();
    setState('retrying');
    scheduleReconnect();
  };
}

/**
 * Reconnects only to svc itself: whatever answers at this origin must first prove it holds the
 * session's server key (api.ts `verifyServer`), so a process squatting on the port while svc is
 * down never receives the token in the `csrf.` subprotocol.
 */
function scheduleReconnect(): void {
  clearTimeout(retryTimer);
  retryTimer = window.setTimeout(() => {
    void verifyServer().then((check) => {
      if (check === 'ok') return startLive();
      if (check === 'signed_out' || !csrf()) return setState('off');
      setState(check === 'impostor' ? 'impostor' : 'retrying');
      scheduleReconnect();
    });
  }, retryDelay);
  retryDelay = Math.min(retryDelay * 2, RETRY_MAX_MS);
}

export function stopLive(): void {
  clearTimeout(retryTimer);
  const ws = socket;
  socket = null;
  lastEventId = null;
  ws?.close(1000);
  setState('off');
}

/**
 * Calls `handler` for each live event whose type starts with one of `prefixes`, and with `null`
 * when events may have been missed (a subscription started afresh): then it should reload.
 */
export function useLiveEvents(prefixes: string[], handler: (e: LiveEvent | null) => void, deps: unknown[] = []): void {
  useEffect(() => {
    const h = (e: LiveEvent) => {
      if (prefixes.some((p) => e.event_type.startsWith(p))) handler(e);
    };
    const r = () => handler(null);
    handlers.add(h);
    resyncs.add(r);
    return () => {
      handlers.delete(h);
      resyncs.delete(r);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
}

export function useLiveState(): LiveState {
  const [s, setS] = useState(state);
  useEffect(() => {
    stateListeners.add(setS);
    setS(state);
    return () => stateListeners.delete(setS);
  }, []);
  return s;
}
