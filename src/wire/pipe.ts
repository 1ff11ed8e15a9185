// `pipe(transport, layers)`: a connection's message pipeline, built in one call that states the
// order of its layers (bottom first: the layer right above the transport comes first). The SDK
// transport's untyped shape enters at the two edges made here, and only here: the bottom port
// (which calls the transport and sits in its callbacks) and the top view (what the SDK client is
// connected through). Between them every layer speaks the typed port of ./port.ts.
import type { CancelMechanism } from "../types/record.js";
import { DeferredCancels, leftLate } from "./deferred-cancels.js";
import { unserialisable } from "./messages.js";
import type { Message } from "./messages.js";
import type { LayerFactory, MessageExtra, Port, SendOptions, Up } from "./port.js";
import type { CancelRequest, TransportLike } from "./types.js";
import { textOf } from "../utils/hooks.js";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import { CARRIER, THIS_COPY_VIEW } from "../utils/copies.js";

/** The SDK `Transport` as the two edges touch it: the members both SDK lines define. */
interface SdkTransport {
  start(): Promise<void>;
  send(message: Message, options?: SendOptions): Promise<void>;
  close(): Promise<void>;
  setProtocolVersion?(version: string): void;
  onmessage?: ((message: Message, extra?: MessageExtra) => void) | undefined;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
}

/** The one place an outside transport's shape is taken as the SDK's (both lines share it). */
function sdkShape(transport: TransportLike): SdkTransport {
  return transport as unknown as SdkTransport;
}

/** The transport's own `send`, typed (for an adapter used outside a pipeline). */
export function sendOf(transport: TransportLike): Port["send"] {
  const shaped = sdkShape(transport);
  return (message, options) => shaped.send(message, options);
}

/** How a pipe is made. */
export interface PipeOptions {
  /**
   * The transport's own `send`, when the transport's `send` member is about to be replaced by the
   * view's (attaching to a connected client): the bottom keeps calling this one. Default: the
   * transport's `send` as it is when each message goes out (so a wrapper put on it later sees
   * every message).
   */
  readonly send?: ((message: Message, options?: SendOptions) => Promise<void>) | undefined;
  /**
   * The transport's own `close`, when its `close` member is about to be replaced by the view's
   * (attaching to a connected client: the SDK's `client.close()` then closes through the layers,
   * which send the cancels still waiting first). Default: the transport's `close`.
   */
  readonly close?: (() => Promise<void>) | undefined;
  /**
   * No layer sits on the transport (a plain transport: its own cancel is the bottom port's
   * notification): the bottom port reports a request whose `send` the transport refused (threw,
   * or rejected) as never sent (`ended` `refused`), as the stdio queue does for its transport.
   */
  readonly plain?: boolean | undefined;
  /** The transport is started already (attaching to a connected client): its pipeline is in use from the start. */
  readonly started?: boolean | undefined;
}

/** A built pipeline: the top port (the layer the SDK talks to), and the view to connect the SDK client through. */
export interface Pipeline<T extends TransportLike> {
  /** The topmost layer's port. */
  readonly top: Port;
  /** What the SDK client is connected through: the transport's own members, with the pipeline in its path. */
  readonly view: T;
}

/**
 * Builds a connection's pipeline: the bottom port over `transport`, each layer in `layers` made
 * over the one before it (the first sits right on the transport), and the view over the last.
 * The transport's callbacks are taken over now; what the SDK had set on them before (a client
 * that is already connected) becomes the view's, so nothing it sees changes.
 */
export function pipe<T extends TransportLike>(transport: T, layers: readonly LayerFactory[], options: PipeOptions = {}): Pipeline<T> {
  // One pipeline in use per SDK transport: a second would take its callbacks, and with them the
  // first one's answers (an outside tester's: a second withCancellation over the same adapter
  // left the first client's calls unanswered until their timeout, recorded unverified).
  const before = pipedIn.get(transport);
  if (before?.inUse === true) {
    throw new InvalidOptionError(
      "transport",
      "this transport is in use by another client's wrapper (connected, not closed): a second over it would take the first " +
        "one's messages. An SDK transport serves one client, once: give each client (and each reconnect) its own SDK transport",
    );
  }
  const bottom = new TransportPort(sdkShape(transport), options.send, options.close, options.plain === true);
  if (options.started === true) bottom.inUse = true;
  // The pipeline made before over it (not in use: never started, or closed) lets go of it.
  if (before !== undefined) before.takenOver = true;
  pipedIn.set(transport, bottom);
  let top: Port = bottom;
  for (const make of layers) top = make(top);
  const view = sdkView(transport, top, bottom);
  return { top, view };
}

/**
 * The bottom of every pipeline: calls the transport and sits in its callbacks. Its own cancel is
 * the plain mechanism (rule 6: `notifications/cancelled` through the transport's `send`), for a
 * transport no layer above took the cancel for.
 */
/** The newest pipeline over each SDK transport (its bottom port). */
const pipedIn = new WeakMap<object, TransportPort>();

/** Another wrapper was made over the transport after this one, before either connected: it holds the transport now. */
function takenOver(): InvalidOptionError {
  return new InvalidOptionError(
    "transport",
    "this transport was given to another client's wrapper after this one, which took it: give each client its own SDK transport",
  );
}

class TransportPort implements Port {
  #up: Up | undefined;
  /** Started through this pipeline (or attached started) and not closed since: no other may take the transport. */
  inUse = false;
  /** A newer pipeline was made over the transport (this one was not in use then): nothing of this one goes out on it. */
  takenOver = false;
  /**
   * Where a value that is not a JSON-RPC message object (`null`, a number, a string, an array)
   * goes: past every layer, straight to the SDK, which reports it as it always does.
   */
  stray: ((value: unknown, extra?: MessageExtra) => void) | undefined;
  readonly #transport: SdkTransport;
  readonly #send: PipeOptions["send"];
  readonly #close: PipeOptions["close"];
  /** The transport's handlers from before the pipe (a connected client's). */
  readonly previous: Pick<SdkTransport, "onmessage" | "onclose" | "onerror">;

  /** See `PipeOptions.plain`. */
  readonly #plain: boolean;
  /** Its own cancels whose `send` has not settled yet (see `notify`): a close waits for them. */
  readonly #sending = new Set<SendingCancel>();

  constructor(transport: SdkTransport, send: PipeOptions["send"], close: PipeOptions["close"], plain: boolean) {
    this.#transport = transport;
    this.#send = send;
    this.#close = close;
    this.#plain = plain;
    this.previous = { onmessage: transport.onmessage, onclose: transport.onclose, onerror: transport.onerror };
    transport.onmessage = (message, extra) => {
      if (typeof message === "object" && message !== null && !Array.isArray(message)) {
        this.#deferred.answered(message);
        this.#up?.message(message, extra);
      } else this.stray?.(message, extra);
    };
    // The SDK transport reports no facts of its own: the layers above it observe them.
    transport.onclose = () => {
      this.inUse = false;
      this.#deferred.drop("not sent: the connection closed before the notification was sent");
      // A send that completed before the close has its settling queued already (its promise was
      // resolved): what is still pending after those is one the closed transport never completed.
      if (this.#sending.size > 0)
        queueMicrotask(() => this.#giveUp("not sent: the connection closed before the transport's send of it completed"));
      this.#up?.closed();
    };
    transport.onerror = (error) => this.#up?.error(error);
  }

  connect(up: Up): void {
    this.#up = up;
  }

  send(message: Message, options?: SendOptions): Promise<void> {
    // Another wrapper took the transport (its client connected through it): nothing of this
    // pipeline's goes out on it, whose answers would reach that client under its own ids (an
    // outside tester's: the refused client's SDK still sent, and another call resolved with its answer).
    if (this.takenOver) return Promise.reject(takenOver());
    // Timer-fired notifications still waiting go before it (deferred-cancels.ts).
    this.#deferred.beforeSend();
    let sending: Promise<void>;
    try {
      sending = this.#sendNow(message, options);
    } catch (error) {
      sending = Promise.reject(error);
    }
    // A plain transport that refuses a request: it never left (its SDK fails the call too). A
    // message that cannot be serialised is its own fault, not the connection's: the SDK fails the
    // call with the serialiser's error (an outside tester's: it said the connection had failed).
    const id = this.#plain && message.method !== undefined ? message.id : undefined;
    if (id !== undefined && id !== null) {
      sending.then(undefined, (error: unknown) =>
        this.#up?.fact(
          id,
          unserialisable(message) ? { kind: "unsendable" } : { kind: "ended", how: "refused", cause: error, at: performance.now() },
        ),
      );
    }
    return sending;
  }

  /** The transport's send (or the one given); a synchronous throw is the caller's. */
  #sendNow(message: Message, options?: SendOptions): Promise<void> {
    return this.#send !== undefined ? this.#send(message, options) : this.#transport.send(message, options);
  }

  readonly #sendPort: Pick<Port, "send"> = { send: (message, options) => this.#sendNow(message, options) };

  start(): Promise<void> {
    if (this.takenOver) return Promise.reject(takenOver());
    this.inUse = true;
    return this.#transport.start().catch((error: unknown) => {
      this.inUse = false; // it never started (a stdio command not found): nothing holds the transport
      throw error;
    });
  }

  close(): Promise<void> {
    // Taken over by a newer pipeline: the transport is that one's, and this close (its client's)
    // must not end it (a client whose connect was refused, closed afterwards).
    if (this.takenOver) return Promise.resolve();
    this.inUse = false;
    // The client is closing: the cancels still waiting go out before the transport ends, and
    // those whose send is under way get at most CLOSE_FLUSH_MS to complete (an asynchronous
    // transport's write): the rest are recorded as not sent.
    this.#deferred.flush();
    if (this.#sending.size === 0) return this.#closeTransport();
    return this.#flushed().then(() => this.#closeTransport());
  }

  #closeTransport(): Promise<void> {
    return this.#close !== undefined ? this.#close() : this.#transport.close();
  }

  async #flushed(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.allSettled([...this.#sending].map((entry) => entry.sending)),
      new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_FLUSH_MS))),
    ]);
    clearTimeout(timer);
    this.#giveUp(`not sent: the transport's send of it had not completed when the client closed the connection (${CLOSE_FLUSH_MS} ms)`);
  }

  /** Its own cancels whose send has not settled are recorded as not sent, with `error`. */
  #giveUp(error: string): void {
    if (this.#sending.size === 0) return;
    const left = [...this.#sending];
    this.#sending.clear();
    for (const { request } of left) request.delivery({ sent: "none", failed: { mechanism: "notification", error } });
  }

  setProtocolVersion(version: string): void {
    this.#transport.setProtocolVersion?.(version);
  }

  cancel(request: CancelRequest): CancelMechanism {
    // A task-augmented request awaiting its CreateTaskResult gets no notification (rules 2, 35, 36).
    if (request.awaitsTask !== undefined) return "none";
    if (request.byTimer !== true) {
      // At once, after the timer-fired notifications still waiting (decided first).
      this.#deferred.beforeSend();
      return notify(this.#sendPort, request, undefined, this.#sending);
    }
    // A timer fired it: the notification goes after the settling under way (deferred-cancels.ts);
    // a lone timeout's goes in this same task, right after its settle.
    return this.#deferred.defer(request);
  }

  /** Timer-fired cancels not sent yet (see `cancel`). */
  readonly #deferred = new DeferredCancels({
    send: (request, since) => notify(this.#sendPort, request, since, this.#sending),
  });
}

/** A cancel of the bottom port's own whose `send` has not settled yet. */
interface SendingCancel {
  readonly request: CancelRequest;
  readonly sending: Promise<void>;
}

/** How long a client's close waits for the sends of cancels under way, ms (a 2025-era HTTP delivery's `flushTimeoutMs` default). */
const CLOSE_FLUSH_MS = 250;

/**
 * The plain cancel: `notifications/cancelled {requestId, reason}` sent down `port`, not waited
 * for (rules 6, 31). Its record says what the send did: a send that throws is `none` at once (told
 * during the cancel: its first record says so); one that rejects is recorded undelivered. `sentAt`
 * is when `send` was called (a microtask's wait for its promise is not a delay): `since`, for a
 * cancel that could have gone earlier (`processClock`, ms; a timer-fired one behind other
 * settles), revises it when that was 1 ms or more before. `pending`: where a send under way is
 * kept until it settles (a close waits for them, and records those that never complete). Never
 * reported to `onerror`: it is the library's own delivery, not a fault of the server.
 */
export function notify(port: Pick<Port, "send">, request: CancelRequest, since?: number, pending?: Set<SendingCancel>): CancelMechanism {
  const leftAt = leftLate(since); // read before the send (see `leftLate`)
  let sending: Promise<void>;
  try {
    sending = Promise.resolve(port.send(request.notification));
  } catch (error) {
    request.delivery({ sent: "none", failed: { mechanism: "notification", error: textOf(error) } });
    return "none";
  }
  if (leftAt !== undefined) request.delivery({ sent: "notification", failed: null, sentWall: leftAt });
  const entry: SendingCancel | undefined = pending === undefined ? undefined : { request, sending };
  if (entry !== undefined) pending!.add(entry);
  sending.then(
    () => {
      if (entry !== undefined) pending!.delete(entry);
    },
    (error: unknown) => {
      if (entry !== undefined && !pending!.delete(entry)) return; // given up already
      request.delivery({ sent: "none", failed: { mechanism: "notification", error: textOf(error) } });
    },
  );
  return "notification";
}

type Fn = (...args: never[]) => unknown;

/** The members of the view that are the pipeline's; every other member is the transport's own. */
const PIPE_METHODS = new Set(["send", "start", "close", "setProtocolVersion"]);
const CALLBACKS = new Set(["onmessage", "onclose", "onerror"]);

/**
 * The view the SDK client is connected through (why a Proxy: an SDK transport has members the
 * library does not know, v1 and v2 differ, frameworks read their own, some on `#private` fields
 * only the transport may touch; a Proxy forwards each of them unchanged, bound to the transport).
 * `send`, `start`, `close` and `setProtocolVersion` go to the top port; the SDK's `onmessage`,
 * `onclose` and `onerror` are what the top port calls. The SDK may replace `send`, `start` or
 * `close` on it (the v2 client's version probe wraps `start` once): the replacement is kept on
 * the view, so the pipeline stays in the path. It is read once per request, not per message.
 */
function sdkView<T extends TransportLike>(transport: T, top: Port, bottom: TransportPort): T {
  const handlers: Record<string, Fn | undefined> = { ...bottom.previous };
  bottom.stray = (value, extra) => (handlers.onmessage as ((value: unknown, extra?: MessageExtra) => void) | undefined)?.(value, extra);
  const up: Up = {
    message: (message, extra) => (handlers.onmessage as SdkTransport["onmessage"])?.(message, extra),
    fact: () => {},
    closed: () => (handlers.onclose as SdkTransport["onclose"])?.(),
    error: (error) => (handlers.onerror as SdkTransport["onerror"])?.(error),
  };
  top.connect(up);
  const methods: Record<string, Fn> = {
    send: (message: Message, options?: SendOptions) => top.send(message, options),
    start: () => top.start(),
    close: () => top.close(),
    setProtocolVersion: (version: string) => top.setProtocolVersion(version),
  };
  const bound = new Map<PropertyKey, { target: unknown; fn: unknown }>();
  return new Proxy(transport, {
    get(target, property) {
      if (typeof property === "string") {
        if (PIPE_METHODS.has(property)) return methods[property];
        if (CALLBACKS.has(property)) return handlers[property];
      } else if (property === CARRIER) return THIS_COPY_VIEW; // the library is in its path: never wrapped again
      const value: unknown = Reflect.get(target, property, target);
      // Methods (on the prototype) are bound, so they run on the transport and its `#private`
      // fields; an own function-valued field (`_fetch`, a handler) is returned as it is, so its
      // identity and marks (`isCancellableFetch`) survive the view.
      if (typeof value !== "function" || Object.hasOwn(target, property)) return value;
      const cached = bound.get(property);
      if (cached?.target === value) return cached.fn;
      const fn = (value as (...args: unknown[]) => unknown).bind(target);
      bound.set(property, { target: value, fn });
      return fn;
    },
    set(target, property, value: unknown) {
      if (typeof property === "string") {
        if (CALLBACKS.has(property)) {
          handlers[property] = value as Fn | undefined;
          return true;
        }
        if (PIPE_METHODS.has(property)) {
          methods[property] = value as Fn;
          return true;
        }
      }
      return Reflect.set(target, property, value, target);
    },
  });
}
