/** The in-process message bus: loop workers and route handlers post; the WS hub and loop wake-ups listen. */
import { EventEmitter } from 'node:events';

export type BusMessage =
  | { kind: 'event'; seq: number }
  | { kind: 'wake'; loop: string };

export class Bus {
  readonly #emitter = new EventEmitter().setMaxListeners(0);

  publish(message: BusMessage): void {
    this.#emitter.emit(message.kind, message);
  }

  subscribe<K extends BusMessage['kind']>(kind: K, listener: (message: Extract<BusMessage, { kind: K }>) => void): () => void {
    this.#emitter.on(kind, listener as (m: BusMessage) => void);
    return () => this.#emitter.off(kind, listener as (m: BusMessage) => void);
  }
}
