import type { RequestId } from "../../core/cancellable-call.js";
import type { CancelMechanism } from "../../types/record.js";
import { z } from "zod";
import { InvalidOptionError } from "../../errors/InvalidOptionError.js";
import { fnOption, msOption, parseOptions } from "../../options/schemas.js";
import type { CancellationAdapter, CancelRequest, TransportLike, WireHooks } from "../types.js";
import type { Message } from "../../wire/messages.js";
import { decorateTransport } from "../../wire/decorate.js";
import type { DecoratedTransport } from "../../wire/decorate.js";
import {
  hasPerRequestStream,
  isStdioTransport,
  isStreamableHttpTransport,
  replaceTransportFetch,
  transportFetch,
} from "../../sdk/private.js";
import { bindFetch, isCancellableFetch, isCancelSendFailure, link, markCancelFailures, observesBody, unbindFetch } from "./fetch.js";
import type { FetchLike, FetchPort } from "./fetch.js";

/** How long a 2025-era cancel waits for its notification's answer before closing the stream anyway, in ms. */
export const DEFAULT_FLUSH_TIMEOUT_MS = 250;

/** The first protocol revision whose Streamable HTTP cancel is closing the stream (rules 6, 28). */
export const STREAM_CLOSE_PROTOCOL_VERSION = "2026-07-28";

/** At most this many resume tokens of closed streams are remembered to refuse their resume. */
const MAX_BLOCKED_TOKENS = 1_024;

/** Options of `streamableHttpCancellation`. */
export interface StreamableHttpCancellationOptions {
  /**
   * In ms, 0 to 10_000. On a 2025-era connection (2025-03-26 to 2025-11-25, rule 40) the cancel
   * POSTs `notifications/cancelled` once the request is known to have reached the server (with
   * `cancellableFetch()`'s default fetch: its body fully written, and the notification then goes on
   * a connection of its own; else its response headers arrived), or after this long; then closes the request's
   * stream once the server answered the notification (202), or after this long, whichever
   * comes first. A `close()` of the transport right after a cancel waits at most this long for
   * those notifications before closing. On a 2026-07-28 connection, the stream of a task-augmented
   * request cancelled before its task id was known stays open at most this long (or until its
   * response arrives), so its `CreateTaskResult` is not lost and the task gets its `tasks/cancel`;
   * 0 closes it at once. The caller of the cancelled call never waits for any of it.
   * @default 250 (`DEFAULT_FLUSH_TIMEOUT_MS`)
   */
  flushTimeoutMs?: number;
  /**
   * For a v1 `StreamableHTTPClientTransport`: the `cancellableFetch()` it was created with. Found
   * on the transport by itself; needed only when the transport wraps its fetch (v1
   * `redirectPolicy: 'follow'`). Ignored for a v2 transport, which takes a per-request signal.
   */
  fetch?: FetchLike;
}

/** Counts of what the adapter holds: all 0 when no request is in flight (for tests and diagnostics). */
export interface StreamableHttpStats {
  /** Requests whose response stream is tracked. */
  streams: number;
  /** Requests whose send has not settled yet. */
  sending: number;
  /** 2025-era cancels whose notification is not delivered yet (waiting for the request to reach the server, or for the answer). */
  flushing: number;
  /** Stream ends waiting one macrotask for the SDK to read what preceded them. */
  checks: number;
  /** Streams that ended without their response and wait for the SDK's resume (`Last-Event-ID`). */
  resuming: number;
  /** Resume tokens of closed streams kept to refuse their resume (at most 1,024). */
  blockedTokens: number;
  /** Resumes (`GET` with `Last-Event-ID`) of closed streams refused so far (cumulative). */
  resumesRefused: number;
  /**
   * 2026-07-28: streams of cancelled task-augmented requests kept open (at most `flushTimeoutMs`)
   * so a `CreateTaskResult` already on its way is not lost with them.
   */
  holding: number;
}

/** The Streamable HTTP adapter: a `CancellationAdapter` plus read-only counts. */
export interface StreamableHttpAdapter<T extends TransportLike> extends CancellationAdapter<T> {
  /** `"modern"` on a 2026-07-28 connection (the stream close is the cancel), else `"legacy"`. */
  readonly era: "modern" | "legacy";
  /** What the adapter holds right now; every count but `resumesRefused` is 0 when idle. */
  stats(): StreamableHttpStats;
}

/** One request's response stream. */
interface Stream {
  readonly id: RequestId;
  /** Aborting it closes the request's POST (and a resumed GET): the TCP connection closes. */
  readonly controller: AbortController;
  /** Removes the link from the SDK's own per-request signal (v2), if any. */
  unlink: () => void;
  /** The last SSE event id the SDK read on it (what it would resume from). */
  lastEventId: string | undefined;
  /** Set while the stream waits for the SDK to resume it with this token. */
  resumeToken: string | undefined;
  /** We closed it on purpose. */
  cancelled: boolean;
  /**
   * Whether the request reached the server: `yes` once its body was fully written on the
   * connection (undici's `onRequestSent`, with `cancellableFetch()`'s default fetch) or its send
   * completed (the response headers), whichever comes first; `failed` when its send failed before.
   */
  reached: "pending" | "yes" | "failed";
  /** Why the send failed (`reached` is `failed`). */
  failure?: unknown;
  /** Its response arrived (the stream was already cancelled): a notification not yet sent is dropped (rule 7). */
  responded?: boolean;
  /** Called once when `reached` leaves `pending`. */
  onReached: (() => void) | undefined;
  /** The one-macrotask look after its body ended (cleared when the response removes the stream). */
  check?: ReturnType<typeof setTimeout> | undefined;
  /** 2026-07-28: cancelled but kept open for its `CreateTaskResult` until this timer closes it. */
  hold?: { timer: ReturnType<typeof setTimeout>; request: CancelRequest } | undefined;
}

/** One 2025-era notification on its way: its current bounded wait, and its promise (for `close()`). */
interface Delivery {
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Ends the current wait at once (the transport closed). */
  wake: (() => void) | undefined;
  done: Promise<void>;
}

const TIMED_OUT = Symbol("timed out");

/** Prefix of the abort reasons of our own cancels: their echoes in `onerror` are swallowed. */
const OWN_ABORT = "mcp-cancellable: cancelled request";
const OWN_SSE_ERROR = `SSE stream disconnected: AbortError: ${OWN_ABORT}`;
/** The v1 SDK's report of a failed resume (`GET` with `Last-Event-ID`): ours when it failed by our abort. */
const RECONNECT_FAILED = "Failed to reconnect SSE stream: ";

/**
 * The Streamable HTTP adapter (`mcp-cancellable/streamable-http`): cancelling a call closes
 * that request's own response stream, so the server sees its connection close; other requests
 * in flight are untouched. Era-aware:
 *
 * - 2026-07-28 (v2 SDK): the stream close is the cancel; no `notifications/cancelled` is sent
 *   (rules 6, 28). Record mechanism `stream-close`.
 * - 2025-03-26 to 2025-11-25: `notifications/cancelled` is POSTed first (with the session and
 *   protocol-version headers), and the stream is closed once the server answered it, at most
 *   `flushTimeoutMs` later (rule 40). Record mechanism `notification+stream-close`.
 *
 * Nothing undoes the cancel: the SDK's automatic resume (`GET` with `Last-Event-ID`) of a stream
 * closed on purpose is refused (a 405 the SDK takes silently), our own abort never reaches
 * `onerror`, and a stream that ends or breaks without its response settles its call as
 * `connection-closed` (a server drop fires no `onclose` on HTTP).
 *
 * @param transport the SDK's `StreamableHTTPClientTransport`: v2 (`@modelcontextprotocol/client`)
 *   as it is; v1 (`@modelcontextprotocol/sdk`) created with `{ fetch: cancellableFetch() }`.
 * @returns the adapter for `withCancellation`; its `.transport` forwards everything to `transport`.
 * @throws {InvalidOptionError} a v1 transport created without `cancellableFetch()`, a fetch
 *   already bound to another transport, or `flushTimeoutMs` out of range.
 */
export function streamableHttpCancellation<T extends TransportLike>(
  transport: T,
  options: StreamableHttpCancellationOptions = {},
): StreamableHttpAdapter<T> {
  return new StreamableHttpAdapterImpl(transport, options);
}

const adapterOptionsSchema = z.strictObject({ flushTimeoutMs: msOption(0, 10_000, false), fetch: fnOption }).partial();

class StreamableHttpAdapterImpl<T extends TransportLike> implements StreamableHttpAdapter<T> {
  readonly transport: T;
  readonly #inner: T;
  /** v2 transports take a per-request `requestSignal` and close the POST themselves. */
  readonly #v2: boolean;
  readonly #fetch: unknown;
  /** The fetch reports each request's body fully written: a send that failed before that never reached the server. */
  readonly #observesBody: boolean;
  readonly #flushTimeoutMs: number;
  readonly #streams = new Map<RequestId, Stream>();
  /** v1: each request's signal until its send settles, so a cancel before the fetch started still reaches it. */
  readonly #sending = new Map<RequestId, AbortSignal>();
  readonly #resuming = new Map<string, Stream>();
  readonly #blocked = new Map<string, RequestId>();
  /** 2025-era: notifications on their way, each with its current `flushTimeoutMs` timer. */
  readonly #deliveries = new Set<Delivery>();
  /** 2026-07-28: cancelled streams kept open for their `CreateTaskResult` (see `#hold`). */
  readonly #holds = new Set<Stream>();
  /** Set once `close()` was called: echoes of the close's own aborts are not errors. */
  #closing = false;
  /** The inner transport closed (onclose): no retry any more. */
  #closed = false;
  readonly #checks = new Set<ReturnType<typeof setTimeout>>();
  /** Requests whose notification the server answered with an HTTP error (the status), until the delivery reads it. */
  readonly #refusals = new Map<RequestId, number>();
  #resumesRefused = 0;
  #version: string | undefined;
  #wire: WireHooks | undefined;
  /** What the wire set as `onmessage` / `onclose` on the adapter's transport. */
  readonly #up: DecoratedTransport<T>["up"];

  constructor(transport: T, options: StreamableHttpCancellationOptions) {
    if (typeof transport !== "object" || transport === null || typeof transport.send !== "function") {
      throw new InvalidOptionError("transport", "streamableHttpCancellation: transport must be a StreamableHTTPClientTransport");
    }
    parseOptions(adapterOptionsSchema, options, "streamableHttpCancellation options");
    this.#flushTimeoutMs = options.flushTimeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS;
    this.#inner = transport;
    // The transport's private `_fetch` and the v2 marker: src/sdk/private.ts.
    const ownFetch = transportFetch(transport);
    this.#v2 = hasPerRequestStream(transport);
    this.#fetch = options.fetch ?? ownFetch;
    this.#observesBody = observesBody(this.#fetch);
    if (!this.#v2) {
      let bound: boolean;
      try {
        bound = bindFetch(this.#fetch, this, this.#port);
      } catch (error) {
        throw new InvalidOptionError("fetch", `streamableHttpCancellation: ${(error as Error).message}`);
      }
      if (!bound && !isStreamableHttpTransport(transport)) {
        // A stdio (or other) transport handed to the HTTP adapter: the v1 fetch advice does not apply.
        throw new InvalidOptionError(
          "transport",
          `streamableHttpCancellation: this is not a Streamable HTTP transport (a StreamableHTTPClientTransport)${
            isStdioTransport(transport) ? ": it is a stdio transport, so use stdioCancellation(transport) from mcp-cancellable/stdio" : ""
          }`,
        );
      }
      if (!bound) {
        throw new InvalidOptionError(
          "transport",
          "streamableHttpCancellation: this transport cannot close one request's stream. For the v1 SDK create it with " +
            "new StreamableHTTPClientTransport(url, { fetch: cancellableFetch() }) (with redirectPolicy 'follow', also pass " +
            "that fetch here: streamableHttpCancellation(transport, { fetch })); a v2 transport needs nothing",
        );
      }
    } else if (options.fetch !== undefined || ownFetch !== undefined) {
      // A v2 transport may use cancellableFetch() for its timeouts; its streams close through requestSignal.
      try {
        bindFetch(this.#fetch, this, this.#passivePort);
      } catch (error) {
        throw new InvalidOptionError("fetch", `streamableHttpCancellation: ${(error as Error).message}`);
      }
    }
    // v2 with its own fetch: mark the failures of our notification POSTs, as cancellableFetch
    // does, so the SDK's echo of them in onerror is known for ours (2025-era).
    if (this.#v2 && !isCancellableFetch(ownFetch) && typeof transport.send === "function") {
      replaceTransportFetch(transport, (current) => markCancelFailures(current as FetchLike | undefined, this.#refused));
    }
    // The transport handed to the wire: `send`, `setProtocolVersion` and `close` are the
    // adapter's, it sits in `onmessage` and `onclose`; every other member (`sessionId`,
    // `hasPerRequestStream`, `protocolVersion`, `terminateSession`, ...) is the transport's own.
    const { view, up } = decorateTransport(transport, {
      methods: { send: this.send, setProtocolVersion: this.setProtocolVersion, close: this.close },
      callbacks: { onmessage: this.#onmessage, onclose: this.#onclose },
    });
    this.#up = up;
    this.transport = view;
  }

  get era(): "modern" | "legacy" {
    const version = this.#version ?? (this.#inner as { protocolVersion?: unknown }).protocolVersion;
    return this.#v2 && typeof version === "string" && version >= STREAM_CLOSE_PROTOCOL_VERSION ? "modern" : "legacy";
  }

  stats(): StreamableHttpStats {
    return {
      streams: this.#streams.size,
      sending: this.#sending.size,
      flushing: this.#deliveries.size,
      checks: this.#checks.size,
      resuming: this.#resuming.size,
      blockedTokens: this.#blocked.size,
      resumesRefused: this.#resumesRefused,
      holding: this.#holds.size,
    };
  }

  attach(wire: WireHooks): void {
    this.#wire = wire;
  }

  cancel(request: CancelRequest): CancelMechanism {
    const stream = this.#streams.get(request.requestId);
    if (stream !== undefined) stream.cancelled = true;
    if (this.era === "modern") {
      // Rules 6, 28: the stream close is the cancel; nothing else is sent.
      if (stream === undefined) return "none";
      if (request.awaitsTask === true && this.#flushTimeoutMs > 0) this.#hold(stream, request);
      else this.#close(stream);
      return "stream-close";
    }
    // Rule 40: the notification (the transport adds the session and protocol-version headers),
    // once the request reached the server, then the stream closes. Nothing here holds the caller.
    const delivery: Delivery = { timer: undefined, wake: undefined, done: Promise.resolve() };
    this.#deliveries.add(delivery);
    delivery.done = this.#deliver(request, stream, delivery).finally(() => {
      clearTimeout(delivery.timer);
      this.#deliveries.delete(delivery);
    });
    return stream === undefined ? "notification" : "notification+stream-close";
  }

  /**
   * 2026-07-28, a task-augmented request cancelled before its task id was known: closing its
   * stream now would lose a `CreateTaskResult` already on it, and with it the only way to the
   * task, which runs on (issue 20). The stream stays open at most `flushTimeoutMs`: a response
   * in that time is handed on as any late response (a `CreateTaskResult` then gets its one
   * `tasks/cancel` from the wire, rules 35, 36) and the stream is not closed; otherwise it closes
   * as for any cancel. The caller was released already; nothing else is held.
   */
  #hold(stream: Stream, request: CancelRequest): void {
    const timer = setTimeout(() => {
      this.#unhold(stream);
      if (this.#streams.get(stream.id) === stream) this.#close(stream);
    }, this.#flushTimeoutMs);
    stream.hold = { timer, request };
    this.#holds.add(stream);
  }

  #unhold(stream: Stream): CancelRequest | undefined {
    const hold = stream.hold;
    if (hold === undefined) return undefined;
    clearTimeout(hold.timer);
    stream.hold = undefined;
    this.#holds.delete(stream);
    return hold.request;
  }

  /** The response of a held stream arrived: it is not closed; the record says nothing of the close went out. */
  #heldAnswered(stream: Stream): void {
    const request = this.#unhold(stream);
    if (request === undefined) return;
    this.#forgetStream(stream);
    request.delivery({ sent: "none", failed: { mechanism: "stream-close", error: "not closed: the response arrived first (rule 7)" } });
  }

  /**
   * One 2025-era cancel, in order: (1) wait until the request reached the server (its send
   * completed), at most flushTimeoutMs, so the notification never overtakes its request on
   * another connection; a request whose send failed reached nothing and needs no notification;
   * (2) POST the notification, retried once after a connection-level failure (a duplicate is
   * harmless, rule 10); (3) close the request's stream once the notification was answered, or
   * after flushTimeoutMs. A notification that still failed is recorded on the call, and reaches
   * `onerror` only when the server refused it with an HTTP error (a network failure is not news).
   */
  async #deliver(request: CancelRequest, stream: Stream | undefined, delivery: Delivery): Promise<void> {
    if (stream !== undefined && stream.reached === "pending") {
      await this.#bounded(delivery, new Promise<void>((resolve) => (stream.onReached = resolve)));
      stream.onReached = undefined;
    }
    // A request that provably never reached the server: nothing to cancel. Its body was never
    // fully written (a fetch that reports it), or its connection was never made.
    if (stream?.reached === "failed" && (this.#observesBody || neverLeft(stream.failure))) {
      this.#close(stream);
      request.delivery({ sent: "none", failed: null });
      return;
    }
    // Rule 7: its response arrived while the notification waited; the request is no longer in
    // progress, so nothing is POSTed (the wire discards the response as late).
    if (stream?.responded === true) {
      this.#close(stream);
      request.delivery({ sent: "none", failed: { mechanism: "notification", error: "not sent: the response arrived first (rule 7)" } });
      return;
    }
    const sending = this.#sendNotification(request);
    if (stream !== undefined) {
      await this.#bounded(delivery, sending);
      this.#close(stream);
    }
    const failure = await sending;
    if (failure === undefined) return;
    // Recorded once, on the call; never reported to onerror (the SDK's echo of it is swallowed too).
    const error = failure instanceof Error ? failure : new Error(String(failure));
    request.delivery({ sent: stream === undefined ? "none" : "stream-close", failed: { mechanism: "notification", error: error.message } });
  }

  /** Sends the notification; resolves `undefined` once the server answered it, else the failure. Never rejects. */
  async #sendNotification(request: CancelRequest): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      try {
        this.#refusals.delete(request.requestId);
        await request.send(request.notification);
        const status = this.#refusals.get(request.requestId);
        if (status === undefined) return undefined;
        this.#refusals.delete(request.requestId);
        // The server read it and said no: not retried (a duplicate would be refused too).
        return new Error(`the server refused the notification: HTTP ${status}`);
      } catch (error) {
        // Retry once on a connection-level failure (fetch failed, other side closed), never after the close.
        if (attempt === 1 && isCancelSendFailure(error) && isNetworkError(error) && !this.#closed) continue;
        return error ?? new Error("the notification could not be sent");
      }
    }
  }

  /** Waits for `promise`, at most flushTimeoutMs (the timer is the delivery's, cleared with it). */
  #bounded(delivery: Delivery, promise: Promise<unknown>): Promise<unknown> {
    if (this.#closed) return Promise.resolve(TIMED_OUT);
    return new Promise((resolve) => {
      delivery.timer = setTimeout(resolve, this.#flushTimeoutMs, TIMED_OUT);
      delivery.wake = () => resolve(TIMED_OUT);
      promise.then(resolve, resolve);
    }).finally(() => {
      clearTimeout(delivery.timer);
      delivery.timer = undefined;
      delivery.wake = undefined;
    });
  }

  /**
   * The decorated `close()`: a cancel made just before it still reaches the server. The
   * notifications on their way are given at most flushTimeoutMs to be answered, then the
   * transport closes (aborting whatever is left, which is then recorded as undelivered).
   */
  readonly close = async (): Promise<void> => {
    this.#closing = true;
    if (this.#deliveries.size > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.all([...this.#deliveries].map((delivery) => delivery.done)),
        new Promise((resolve) => (timer = setTimeout(resolve, this.#flushTimeoutMs))),
      ]);
      clearTimeout(timer);
    }
    return this.#inner.close();
  };

  isOwnCancelError(error: Error): boolean {
    // A notification POST that failed at the fetch: recorded on the call (and retried), not news.
    if (isCancelSendFailure(error)) return true;
    const full = typeof error?.message === "string" ? error.message : "";
    // The SDK's failed resume of a stream we closed reports our abort once more, prefixed.
    const message = full.startsWith(RECONNECT_FAILED) ? full.slice(RECONNECT_FAILED.length) : full;
    if (message.startsWith(OWN_ABORT) || message.startsWith(OWN_SSE_ERROR)) return true;
    // After close(): the SDK reports its own aborted streams ("SSE stream disconnected: AbortError")
    // and the resumes it had scheduled (v1 clears only the last one at close), which the closed
    // transport's signal aborts, until it gives up on them.
    return (
      (this.#closing || this.#closed) &&
      (error?.name === "AbortError" ||
        /^SSE stream disconnected: AbortError|^This operation was aborted|^AbortError|^Maximum reconnection attempts/.test(message))
    );
  }

  // --- the transport's side -------------------------------------------------------------

  /** The decorated `send`: every request gets its own stream (controller) before it goes out. */
  readonly send = (message: Message, options?: SendOptions): Promise<void> => {
    const id = message?.id;
    const method = message?.method;
    if (
      typeof method !== "string" ||
      (typeof id !== "string" && typeof id !== "number") ||
      method === "initialize" ||
      method === "server/discover"
    ) {
      return this.#innerSend(message, options);
    }
    // A request going out: the transport is open (again, if it was closed and started anew).
    this.#closed = false;
    this.#closing = false;
    const controller = new AbortController();
    const stream: Stream = {
      id,
      controller,
      unlink: link(options?.requestSignal, controller), // v2, 2026-07-28: the SDK's own per-request signal
      lastEventId: undefined,
      resumeToken: undefined,
      cancelled: false,
      reached: "pending",
      onReached: undefined,
    };
    this.#forgetStream(this.#streams.get(id));
    this.#streams.set(id, stream);
    if (typeof options?.resumptionToken === "string") this.#awaitResume(stream, options.resumptionToken);
    const next: SendOptions = {
      ...options,
      requestSignal: controller.signal,
      onresumptiontoken: (token: string) => {
        stream.lastEventId = token;
        if (stream.cancelled && !this.#v2) this.#block(token, id);
        options?.onresumptiontoken?.(token);
      },
      onRequestStreamEnd: () => {
        options?.onRequestStreamEnd?.();
        // A held stream that ended without its response: nothing more can come on it.
        if (this.#unhold(stream) !== undefined) this.#forgetStream(stream);
        // v2 calls this when the stream ended and it will not resume it (also after the response).
        this.#lost(stream, new Error("The request's response stream ended without its response"));
      },
    };
    if (!this.#v2) this.#sending.set(id, controller.signal);
    const settle = (reached: "yes" | "failed", failure?: unknown): void => {
      if (this.#sending.get(id) === controller.signal) this.#sending.delete(id);
      // A body fully written stays "reached" even when the send fails afterwards.
      if (stream.reached !== "pending") return;
      stream.reached = reached;
      stream.failure = failure;
      stream.onReached?.();
    };
    return this.#innerSend(message, next).then(
      () => settle("yes"),
      (error: unknown) => {
        settle("failed", error);
        if (this.#streams.get(id) === stream && !stream.cancelled) {
          // The request's own POST failed: only a connect-phase failure proves it never left.
          if (isNetworkError(error)) this.#lost(stream, error, neverLeft(error));
          else this.#forgetStream(stream);
        }
        throw error;
      },
    );
  };

  readonly setProtocolVersion = (version: string): void => {
    this.#version = version;
    (this.#inner as { setProtocolVersion?: (version: string) => void }).setProtocolVersion?.(version);
  };

  #innerSend(message: Message, options: SendOptions | undefined): Promise<void> {
    try {
      return (this.#inner.send as (message: Message, options?: SendOptions) => Promise<void>).call(this.#inner, message, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  readonly #onmessage = (message: Message, extra?: unknown): void => {
    // A response: its stream has done its job (rule 7: nothing to cancel any more).
    if (typeof message === "object" && message !== null && message.method === undefined) {
      const id = message.id;
      if (typeof id === "string" || typeof id === "number") {
        const stream = this.#streams.get(id);
        if (stream !== undefined && !stream.cancelled) this.#forgetStream(stream);
        else if (stream?.hold !== undefined)
          this.#heldAnswered(stream); // before the wire's late path sees it
        else if (stream !== undefined) stream.responded = true; // a cancel's notification still waiting is dropped
      }
    }
    (this.#up.onmessage as ((message: Message, extra?: unknown) => void) | undefined)?.(message, extra);
  };

  readonly #onclose = (): void => {
    this.#closed = true;
    for (const stream of this.#streams.values()) {
      this.#unhold(stream);
      stream.unlink();
    }
    this.#streams.clear();
    this.#sending.clear();
    this.#resuming.clear();
    this.#blocked.clear();
    this.#refusals.clear();
    // The transport aborted every fetch: no delivery waits any more (their sends reject).
    for (const delivery of this.#deliveries) {
      clearTimeout(delivery.timer);
      delivery.wake?.();
    }
    for (const timer of this.#checks) clearTimeout(timer);
    this.#checks.clear();
    unbindFetch(this.#fetch, this);
    (this.#up.onclose as (() => void) | undefined)?.();
  };

  /** Closes the stream on purpose: aborts its POST (or resumed GET); its resume is refused. */
  #close(stream: Stream): void {
    stream.cancelled = true;
    this.#forgetStream(stream);
    if (stream.lastEventId !== undefined && !this.#v2) this.#block(stream.lastEventId, stream.id);
    stream.controller.abort(new DOMException(`${OWN_ABORT} ${JSON.stringify(stream.id)}`, "AbortError"));
  }

  /**
   * The stream ended or broke without its response: the call settles as `connection-closed`.
   * `neverSent` only when the request's own first POST failed before any byte left (a resume's
   * failure, or a stream the server had answered on, proves nothing of the kind).
   */
  #lost(stream: Stream, cause: unknown, neverSent = false): void {
    if (this.#streams.get(stream.id) !== stream || stream.cancelled) return;
    this.#forgetStream(stream);
    // The SDK may still try to resume it: refuse, the call is settled.
    if (stream.lastEventId !== undefined && !this.#v2) this.#block(stream.lastEventId, stream.id);
    this.#wire?.streamLost(stream.id, cause, neverSent && stream.reached !== "yes" && stream.lastEventId === undefined);
  }

  #forgetStream(stream: Stream | undefined): void {
    if (stream === undefined) return;
    if (this.#streams.get(stream.id) === stream) this.#streams.delete(stream.id);
    // The response arrived after the body ended (a plain JSON answer): the look is not needed,
    // so nothing stays counted once the call resolved.
    if (stream.check !== undefined) {
      clearTimeout(stream.check);
      this.#checks.delete(stream.check);
      stream.check = undefined;
    }
    if (stream.resumeToken !== undefined) {
      this.#resuming.delete(stream.resumeToken);
      stream.resumeToken = undefined;
    }
    stream.unlink();
    stream.unlink = noop;
  }

  #awaitResume(stream: Stream, token: string): void {
    if (stream.resumeToken !== undefined) this.#resuming.delete(stream.resumeToken);
    stream.resumeToken = token;
    this.#resuming.set(token, stream);
  }

  #block(token: string, id: RequestId): void {
    this.#blocked.delete(token);
    this.#blocked.set(token, id);
    if (this.#blocked.size > MAX_BLOCKED_TOKENS) this.#blocked.delete(this.#blocked.keys().next().value!);
  }

  /** What the v1 `cancellableFetch` asks (the v1 transport has no per-request seam of its own). */
  readonly #port: FetchPort = {
    signalFor: (id) => this.#sending.get(id) ?? this.#streams.get(id)?.controller.signal,
    resume: (token) => {
      if (this.#blocked.delete(token)) {
        this.#resumesRefused++;
        return "block";
      }
      const stream = this.#resuming.get(token);
      if (stream === undefined) return undefined;
      this.#resuming.delete(token);
      stream.resumeToken = undefined;
      return stream.id;
    },
    ended: (id, how, cause, resumed) => {
      const stream = this.#streams.get(id);
      if (stream === undefined || stream.cancelled) return;
      if (how === "failed") {
        this.#lost(stream, cause, !resumed && neverLeft(cause));
        return;
      }
      // The body ended before the SDK's parser read all of it: look once it has (the rest of
      // the pipeline runs in microtasks). By then a response has removed the stream.
      const timer = setTimeout(() => {
        this.#checks.delete(timer);
        stream.check = undefined;
        if (this.#streams.get(id) !== stream || stream.cancelled) return;
        // With a priming event id the v1 SDK resumes the stream (GET Last-Event-ID): wait for it.
        if (stream.lastEventId !== undefined) this.#awaitResume(stream, stream.lastEventId);
        else this.#lost(stream, cause ?? new Error("The request's response stream ended without its response"));
      }, 0);
      stream.check = timer;
      this.#checks.add(timer);
    },
    refused: (id, status) => this.#refused(id, status),
    sent: (id) => this.#bodySent(id),
  };

  /** The request's body was fully written on its connection: the server has it (rule 10 holds for a notification now). */
  readonly #bodySent = (id: RequestId): void => {
    const stream = this.#streams.get(id);
    if (stream === undefined || stream.reached !== "pending") return;
    stream.reached = "yes";
    stream.onReached?.();
  };

  /** The server refused a notification with an HTTP error: the delivery reads it when the send resolves. */
  readonly #refused = (id: RequestId, status: number): void => {
    this.#refusals.set(id, status);
  };

  /** A v2 transport created with cancellableFetch(): the fetch only forwards (and reports refused notifications). */
  readonly #passivePort: FetchPort = {
    signalFor: () => undefined,
    resume: () => undefined,
    ended: noop,
    refused: this.#refused,
    sent: this.#bodySent,
  };
}

/** The SDK's `TransportSendOptions` members the adapter touches (v1 and v2). */
interface SendOptions {
  requestSignal?: AbortSignal;
  resumptionToken?: string;
  onresumptiontoken?: (token: string) => void;
  onRequestStreamEnd?: () => void;
  [key: string]: unknown;
}

/** fetch's network failure (`TypeError: fetch failed`, `terminated`), not an HTTP status or a bug in the message. */
function isNetworkError(error: unknown): boolean {
  return (
    error instanceof TypeError &&
    (error.message === "fetch failed" || error.message === "terminated" || (error as { cause?: unknown }).cause !== undefined)
  );
}

/**
 * Error codes that prove no byte of the request left this process: the connection was never
 * made (refused, no route, connect timeout) or the host name did not resolve.
 */
const NEVER_CONNECTED = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "EAI_FAIL",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/**
 * True when a failed fetch provably sent nothing: its cause chain (undici wraps the socket error
 * in `TypeError("fetch failed")`, an `AggregateError` holds one per address tried) carries only
 * connect-phase error codes. Anything else (a reset, a broken body) may have reached the server.
 * @internal
 */
export function neverLeft(error: unknown): boolean {
  const codes: string[] = [];
  const walk = (value: unknown, depth: number): void => {
    if (typeof value !== "object" || value === null || depth > 4) return;
    const code = (value as { code?: unknown }).code;
    if (typeof code === "string") codes.push(code);
    const inner = (value as { errors?: unknown }).errors;
    if (Array.isArray(inner)) for (const item of inner) walk(item, depth + 1);
    walk((value as { cause?: unknown }).cause, depth + 1);
  };
  walk(error, 0);
  return codes.length > 0 && codes.every((code) => NEVER_CONNECTED.has(code));
}

function noop(): void {}
