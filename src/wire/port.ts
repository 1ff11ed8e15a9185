// The typed port every layer of a connection's message pipeline speaks (docs/architecture.md,
// "The message pipeline"). A connection is `pipe(transport, layers)`: the SDK transport at the
// bottom, the layers above it in the order given, and at the top the one view the SDK client is
// connected through. Messages go down through `send`; they come up through `message`; the close
// and the transport's errors come up through `closed` and `error`; a cancel goes down through
// `cancel` until the layer that owns the transport's mechanism puts it out; what a layer observes
// of a request on its way (written, answered, its stream ended) comes up through `fact`.
//
// A layer is both: a `Port` for the layer above it, and an `Up` for the layer below it. `Layer`
// passes everything on; a concrete layer overrides only what its one concern needs (undici's
// interceptors and connect-es's interceptors are the models: each one feature in one small file,
// their order stated in one call).
import type { RequestId } from "../core/cancellable-call.js";
import type { CancelMechanism } from "../types/record.js";
import type { CancelRequest } from "./types.js";
import type { Message } from "./messages.js";

/** What the SDK's transports take with a message (`TransportSendOptions` of both SDK lines). */
export interface SendOptions {
  /** The request this message answers or belongs to (the SDK's). */
  readonly relatedRequestId?: RequestId | undefined;
  /** Resume a stream from this SSE event id (v1 and v2 SDK; 2025-era Streamable HTTP). */
  readonly resumptionToken?: string | undefined;
  readonly onresumptiontoken?: ((token: string) => void) | undefined;
  /** v2 SDK: the request's own signal; aborting it closes the request's stream. */
  readonly requestSignal?: AbortSignal | undefined;
  /** v2 SDK: the request's stream ended (with or without its response) and will not be resumed. */
  readonly onRequestStreamEnd?: (() => void) | undefined;
  readonly [key: string]: unknown;
}

/** What the SDK's transports hand up with a message (`MessageExtraInfo`: `authInfo`, `requestInfo`, ...). */
export type MessageExtra = { readonly [key: string | symbol]: unknown };

/**
 * Set (true) on a response's extra by the Streamable HTTP stream tracker when the response's own
 * stream had been closed by its cancel in an earlier turn of the event loop: the response did not
 * come with what was read of that stream before the close (a misbehaving server's answer on
 * another request's stream, or on the standalone GET stream), so the close may well have reached
 * the server first, and the record keeps it (`SettledRecord.late`).
 */
export const AFTER_ITS_CLOSE: unique symbol = Symbol("mcp-cancellable.afterItsClose");

/**
 * One thing a layer observed of a request on its way (times monotonic, ms, `performance.now()`).
 * Records, error wording and delivery decisions read these facts only, never an error's text.
 *
 * - `written`: the request's bytes were handed to the connection: the stdio line to the server's
 *   stdin, or the HTTP body fully written on a connection the server accepted.
 * - `answered`: Streamable HTTP: the response head arrived, with this status and content type
 *   (any status: the server received the request).
 * - `ended`: the request's stream ended, or its send failed, without its response. `how`:
 *   `refused` (the connection was never made: nothing left), `dropped` (it was never handed to
 *   the transport: a stdio line still queued when its call was cancelled), `reset` (the stream or
 *   connection broke), `eof` (the stream ended cleanly without the response).
 * - `unobservable`: this connection cannot observe `written` (a `fetch` that cannot tell: one the
 *   user passed in, a browser's): the record says "unknown", not a guess.
 * - `unsendable`: its send was refused because the message cannot be serialised (a BigInt, a
 *   cycle, a `toJSON` that throws in its params): nothing left, the connection is fine, and the
 *   SDK fails the call with the serialiser's error (its record: `failed`, `not-sent`).
 */
export type WireFact =
  | { readonly kind: "written"; readonly at: number }
  | { readonly kind: "answered"; readonly status: number; readonly contentType: string | null; readonly at: number }
  | { readonly kind: "ended"; readonly how: StreamEnd; readonly cause: unknown; readonly at: number }
  | { readonly kind: "unobservable"; readonly fact: "written" }
  | { readonly kind: "unsendable" };

/** How a request's stream ended without its response (see `WireFact`). */
export type StreamEnd = "refused" | "dropped" | "reset" | "eof";

/** The downward half of a port: what a layer offers the layer above it. */
export interface Port {
  send(message: Message, options?: SendOptions): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
  /**
   * Puts one cancel on the wire without waiting, and returns the mechanism used. Must not throw.
   * The layer that owns the transport's mechanism handles it; the others pass it down.
   */
  cancel(request: CancelRequest): CancelMechanism;
  /** The protocol version the connection negotiated (the SDK's `setProtocolVersion`). */
  setProtocolVersion(version: string): void;
  /** The layer above subscribes to what comes up (once, when it is made). */
  connect(up: Up): void;
}

/** The upward half: what a layer is told by the layer below it. */
export interface Up {
  message(message: Message, extra?: MessageExtra): void;
  /** A fact observed of one request (see `WireFact`); the correlation layer keeps it with the request. */
  fact(requestId: RequestId, fact: WireFact): void;
  closed(): void;
  error(error: Error): void;
}

/** A layer's maker: given the port below, the port it presents above. */
export type LayerFactory = (below: Port) => Port;

/** Nothing above yet: what comes up before a layer above subscribes is dropped. */
const DETACHED: Up = { message() {}, fact() {}, closed() {}, error() {} };

/**
 * The layer that passes everything on: extend it and override only what one concern needs.
 * It subscribes to the port below when it is made.
 */
export class Layer implements Port, Up {
  protected up: Up = DETACHED;
  protected readonly below: Port;

  constructor(below: Port) {
    this.below = below;
    below.connect(this);
  }

  connect(up: Up): void {
    this.up = up;
  }

  send(message: Message, options?: SendOptions): Promise<void> {
    return this.below.send(message, options);
  }

  start(): Promise<void> {
    return this.below.start();
  }

  close(): Promise<void> {
    return this.below.close();
  }

  cancel(request: CancelRequest): CancelMechanism {
    return this.below.cancel(request);
  }

  setProtocolVersion(version: string): void {
    this.below.setProtocolVersion(version);
  }

  message(message: Message, extra?: MessageExtra): void {
    this.up.message(message, extra);
  }

  fact(requestId: RequestId, fact: WireFact): void {
    this.up.fact(requestId, fact);
  }

  closed(): void {
    this.up.closed();
  }

  error(error: Error): void {
    this.up.error(error);
  }
}

/**
 * The key under which the library's own adapters (stdio, Streamable HTTP) give the pipeline the
 * layers that carry their mechanism, bottom first. An adapter without it (one written by a user,
 * `CancellationAdapter` with only `cancel`) gets one layer that calls its `cancel`. @internal
 */
export const ADAPTER_LAYERS: unique symbol = Symbol("mcp-cancellable.adapterLayers");

/**
 * Marks an adapter whose transport starts its server with the connection (stdio: a child
 * process): until the server's first message, the wire holds each request's idle timeout (the
 * server's start is not its silence; see `Wire`'s `#heldForStart`). @internal
 */
export const STARTS_SERVER: unique symbol = Symbol("mcp-cancellable.startsServer");

/** An adapter that brings its own layers (see `ADAPTER_LAYERS`). @internal */
export interface LayeredAdapter {
  readonly [ADAPTER_LAYERS]: () => readonly LayerFactory[];
}
