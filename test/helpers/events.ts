/** A real WebSocket event-stream client (spec §6.4) that collects events for assertions. */
import WebSocket from 'ws';
import { until } from './until.js';

export interface EventStream {
  events: Record<string, unknown>[];
  /** The first collected event of this type matching `where`, waiting up to `ms`. */
  next(eventType: string, where?: (e: Record<string, unknown>) => boolean, ms?: number): Promise<Record<string, unknown>>;
  /** Every collected event of this type. */
  all(eventType: string): Record<string, unknown>[];
  close(): void;
}

export async function subscribe(url: string, token: string, frame: Record<string, unknown> = {}): Promise<EventStream> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v0/ws`, { headers: { authorization: `Bearer ${token}` } });
  const events: Record<string, unknown>[] = [];
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => {
      ws.send(JSON.stringify({ type: 'subscribe', ...frame }));
      ws.on('message', (data) => {
        const msg = JSON.parse(String(data)) as Record<string, unknown>;
        if (msg.type === 'subscribed') resolve();
        else if (msg.type === 'ping') ws.send(JSON.stringify({ type: 'pong' }));
        else if (msg.type === 'event') events.push(msg);
      });
    });
  });
  const matching = (type: string, where?: (e: Record<string, unknown>) => boolean) => events.filter((e) => e.event_type === type && (!where || where(e)));
  return {
    events,
    all: (type) => matching(type),
    next: (type, where, ms) =>
      until(
        () => `a ${type} event; saw ${events.map((e) => e.event_type).join(', ')}`,
        () => matching(type, where)[0],
        ms,
      ),
    close: () => ws.close(),
  };
}
