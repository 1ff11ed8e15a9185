// What an adapter is to the wire decorator: defined here, at the wire's layer, so the wire never
// imports the adapters above it (adapters/types.ts re-exports these for adapter code).
import type { CancelDelivery, CancelMechanism } from "../types/record.js";
import type { RequestId } from "../core/cancellable-call.js";
import type { CancelledNotification, Message } from "./messages.js";

/**
 * The SDK's `Transport` interface as both SDK lines (v1 `@modelcontextprotocol/sdk`, v2
 * `@modelcontextprotocol/client`) define it; only the members the library touches.
 */
export interface TransportLike {
  start(): Promise<void>;
  send(message: never, options?: never): Promise<void>;
  close(): Promise<void>;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: never, extra?: never) => void) | undefined;
}

/** One cancel to put on the wire. */
export interface CancelRequest {
  /** The id of the request being cancelled. */
  readonly requestId: RequestId;
  /** The readable reason (at most 1,000 characters). */
  readonly reason: string;
  /** The `notifications/cancelled {requestId, reason}` message for it (rule 2). */
  readonly notification: CancelledNotification;
  /**
   * Set for a task-augmented request whose task id is not known yet (rules 2, 35, 36): such a
   * request is never cancelled with `notifications/cancelled`; its `CreateTaskResult` is awaited
   * instead, and the task it names gets `tasks/cancel`, once. The value is how long it is awaited,
   * in ms (the task's `watchMs`): an adapter sends nothing, and one whose request has a stream of
   * its own (Streamable HTTP) keeps that stream open at most this long so the response can
   * arrive, then closes it. Absent otherwise.
   */
  readonly awaitsTask?: number;
  /**
   * `true` when a timer fired the cancel (the call's idle or maximum total timeout, or a caller's
   * signal that timed out). Node runs due timers before it reads input, so after any busy stretch
   * of the event loop the server's answer may already be waiting unread. An adapter whose cancel
   * is a line on the same stream as the answers (stdio) reads what waits first, and sends nothing
   * for an answered request (rule 7).
   */
  readonly byTimer?: boolean;
  /** Sends a message on the wrapped transport, bypassing the decorator. */
  send(message: Message): Promise<void>;
  /** Reports a failed cancel send to the transport's `onerror`. */
  reportError(error: unknown): void;
  /**
   * Tells the call's record, after `cancel` returned, what really went out when that differs
   * from the mechanism returned (a notification that failed, a request that never reached the
   * server). Optional to call; a no-op for requests the SDK made on its own.
   */
  delivery(report: CancelDelivery): void;
}

/**
 * How cancels go on the wire for one transport. `withCancellation` calls `cancel` exactly once
 * per cancelled request, never for `initialize`, and never waits for it.
 */
export interface CancellationAdapter<T extends TransportLike = TransportLike> {
  /** The SDK transport being wrapped. */
  readonly transport: T;
  /**
   * Puts the cancel of one request on the wire without waiting; returns the mechanism used.
   * Must not throw.
   */
  cancel(request: CancelRequest): CancelMechanism;
  /** True for an error the transport reports because of one of our own cancels (it is swallowed). */
  isOwnCancelError?(error: Error): boolean;
  /** Called once by the wire decorator with the hooks the adapter may call back. */
  attach?(wire: WireHooks): void;
  /**
   * Called by the wire decorator right before the transport's `close()`: put every cancel still
   * waiting (for example behind stdin backpressure) on the wire now. Must not throw or wait.
   */
  flush?(): void;
}

/**
 * What an entry point takes as its transport: a cancellation adapter of any transport
 * (`stdioCancellation(...)`, `streamableHttpCancellation(...)`, your own), or a plain transport
 * (it gets `notifications/cancelled`). A union of adapters chosen at run time
 * (`url ? streamableHttpCancellation(...) : stdioCancellation(...)`) is one of these too.
 */
export type AdapterOrTransport = CancellationAdapter<TransportLike> | TransportLike;

/**
 * The SDK transport under an adapter or transport type: `T` for a `CancellationAdapter<T>`, the
 * type itself for a plain transport, distributed over a union (`TransportOf<StreamableHttpAdapter<H>
 * | CancellationAdapter<S>>` is `H | S`).
 */
export type TransportOf<A> = A extends CancellationAdapter<infer T> ? T : A extends TransportLike ? A : never;

/** What an adapter may tell the wire decorator. */
export interface WireHooks {
  /**
   * The stream carrying this request ended without its response (for example the server
   * dropped the connection). A pending call settles as `connection-closed`; nothing is sent.
   * `neverSent`: the request provably never reached the wire (the connection was refused, the
   * host name did not resolve): its record says `never sent` instead of `outcome unverified`.
   */
  streamLost(requestId: RequestId, cause?: unknown, neverSent?: boolean): void;
}
