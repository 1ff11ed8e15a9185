import type { TransportLike } from "../adapters/types.js";
import type { Message } from "../wire/messages.js";
import { decorateTransport } from "../wire/decorate.js";
import { arrivedAt } from "./json-lines.js";

/** Who an event on the timeline came from. */
export type Party = "client" | "server" | "probe";

/**
 * What a timeline event is:
 * - `message`: a JSON-RPC message as it crossed the wire;
 * - `invalid`: output from the server that is not JSON-RPC (the text as it came is in `text`);
 * - `http`: an HTTP exchange (`text` says what, `status` the response status);
 * - `closed`: the connection closed (`text` says how);
 * - `error`: the transport reported an error;
 * - `mark`: the probe's own marker (a phase starting, the cancel moment).
 */
export type EventKind = "message" | "invalid" | "http" | "closed" | "error" | "mark";

/** One event on the timeline. */
export interface WireEvent {
  /** Sequence number, from 0, in the order events were recorded. */
  seq: number;
  /** Monotonic time since the recorder started, in ms. */
  at: number;
  from: Party;
  kind: EventKind;
  /** The JSON-RPC message (`kind: "message"`). */
  message?: Message;
  /** A human line (every kind but `message`). */
  text?: string;
  /** The HTTP status (`kind: "http"`). */
  status?: number;
}

/** The most events one run keeps; later ones are counted, not stored (a flooding server cannot exhaust memory). */
export const MAX_EVENTS = 20_000;

type Listener = (event: WireEvent) => void;

/**
 * Records the wire traffic of one connection with monotonic timestamps: every message the client
 * side sends (`send`) and every message the server side delivers (`onmessage`), plus closes and
 * errors. `wrap()` returns a decorator that forwards everything else of the transport unchanged,
 * so it can sit under the library's wire decorator and see what the wire later drops.
 */
export class Recorder {
  readonly events: WireEvent[] = [];
  /** Events not stored because `MAX_EVENTS` was reached. */
  dropped = 0;
  readonly #origin: number;
  /** The time of the last event recorded (events stay in order of time). */
  #lastAt = 0;
  readonly #listeners = new Set<Listener>();

  constructor(origin: number = performance.now()) {
    this.#origin = origin;
  }

  /** Monotonic ms since the recorder started. */
  now(): number {
    return performance.now() - this.#origin;
  }

  /** Records one event and tells the waiters. */
  add(event: Omit<WireEvent, "seq" | "at">, at: number = this.now()): WireEvent {
    const full: WireEvent = { seq: this.events.length + this.dropped, at, ...event };
    this.#lastAt = Math.max(this.#lastAt, at);
    if (this.events.length < MAX_EVENTS) this.events.push(full);
    else this.dropped++;
    for (const listener of [...this.#listeners]) listener(full);
    return full;
  }

  /** Records a marker of the probe's own. */
  mark(text: string): WireEvent {
    return this.add({ from: "probe", kind: "mark", text });
  }

  /**
   * Resolves with the first event (from now on) that matches, or `undefined` after `ms`
   * milliseconds. Never rejects.
   */
  waitFor(match: (event: WireEvent) => boolean, ms: number): Promise<WireEvent | undefined> {
    return new Promise((resolve) => {
      const listener: Listener = (event) => {
        if (!match(event)) return;
        done(event);
      };
      const timer = setTimeout(() => done(undefined), Math.max(0, ms));
      const done = (event: WireEvent | undefined): void => {
        clearTimeout(timer);
        this.#listeners.delete(listener);
        resolve(event);
      };
      this.#listeners.add(listener);
    });
  }

  /**
   * Decorates a transport: `send` and the inbound `onmessage`, `onclose`, `onerror` are
   * recorded; everything else is forwarded to the transport unchanged (properties, methods,
   * `sessionId`, `setProtocolVersion`, ...). Handlers set on the decorator are called after
   * the event is recorded.
   */
  wrap<T extends TransportLike>(transport: T): T {
    const send = (message: Message, options?: unknown): Promise<void> => {
      this.add({ from: "client", kind: "message", message });
      return (transport.send as (message: Message, options?: unknown) => Promise<void>).call(transport, message, options);
    };
    const { view, up } = decorateTransport(transport, {
      methods: { send },
      callbacks: {
        onmessage: (message: Message, extra?: unknown): void => {
          // Timed by its arrival (a stdio line: when it had come in whole), not by when the
          // probe was done reading what came before it (a 120 MB result takes a while to parse).
          const arrived = typeof message === "object" && message !== null ? arrivedAt(message) : undefined;
          const now = this.now();
          const at = arrived === undefined ? now : Math.min(now, Math.max(this.#lastAt, arrived - this.#origin));
          this.add({ from: "server", kind: "message", message }, at);
          (up.onmessage as ((message: Message, extra?: unknown) => void) | undefined)?.(message, extra);
        },
        onclose: (): void => {
          this.add({ from: "server", kind: "closed", text: "connection closed" });
          (up.onclose as (() => void) | undefined)?.();
        },
        onerror: (error: Error): void => {
          this.add({ from: "server", kind: "error", text: error.message });
          (up.onerror as ((error: Error) => void) | undefined)?.(error);
        },
      },
      overrides: "refuse",
    });
    return view;
  }
}
