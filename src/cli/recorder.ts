import type { Message } from "../wire/messages.js";
import { Layer } from "../wire/port.js";
import type { LayerFactory, MessageExtra, Port, SendOptions } from "../wire/port.js";
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

/**
 * How an `http` event of the client's begins when it closed a POST before the response headers
 * came (`closed the request of POST tools/call #3 before its response headers came`).
 */
export const CLOSED_BEFORE_HEADERS = "closed the request of";

/** The most events one run keeps; later ones are counted, not stored (a flooding server cannot exhaust memory). */
export const MAX_EVENTS = 20_000;

type Listener = (event: WireEvent) => void;

/**
 * Records the wire traffic of one connection with monotonic timestamps: every message the client
 * side sends (`send`) and every message the server side delivers (`onmessage`), plus closes and
 * errors. `layer()` puts it in a connection's pipeline right on the transport, so it sees what
 * the layers above later drop.
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
   * Records a message from the server, timed by its arrival (a stdio line: when it had come in
   * whole), not by when the probe was done reading what came before it (a 120 MB result takes a
   * while to parse).
   */
  incoming(message: Message): void {
    const arrived = typeof message === "object" && message !== null ? arrivedAt(message) : undefined;
    const now = this.now();
    const at = arrived === undefined ? now : Math.min(now, Math.max(this.#lastAt, arrived - this.#origin));
    this.add({ from: "server", kind: "message", message }, at);
  }

  /**
   * The recorder as a layer of a connection's pipeline, right on the transport (under an adapter,
   * `withLayersBelow`): `send` and the inbound messages, the close and errors are recorded as they
   * crossed the transport (also what the layers above later drop); everything passes on unchanged.
   */
  layer(): LayerFactory {
    return (below) => new RecordingLayer(below, this);
  }
}

class RecordingLayer extends Layer {
  readonly #recorder: Recorder;

  constructor(below: Port, recorder: Recorder) {
    super(below);
    this.#recorder = recorder;
  }

  override send(message: Message, options?: SendOptions): Promise<void> {
    this.#recorder.add({ from: "client", kind: "message", message });
    return this.below.send(message, options);
  }

  override message(message: Message, extra?: MessageExtra): void {
    this.#recorder.incoming(message);
    this.up.message(message, extra);
  }

  override closed(): void {
    this.#recorder.add({ from: "server", kind: "closed", text: "connection closed" });
    this.up.closed();
  }

  override error(error: Error): void {
    this.#recorder.add({ from: "server", kind: "error", text: error.message });
    this.up.error(error);
  }
}
