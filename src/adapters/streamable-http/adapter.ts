import { refuseCarried } from "../notification.js";
import type { CancelMechanism } from "../../types/record.js";
import { z } from "zod";
import { InvalidOptionError } from "../../errors/InvalidOptionError.js";
import { fnOption, msOption, parseOptions } from "../../options/schemas.js";
import type { CancellationAdapter, CancelRequest, TransportLike } from "../types.js";
import { ADAPTER_LAYERS } from "../../wire/port.js";
import type { LayeredAdapter, LayerFactory, Port } from "../../wire/port.js";
import { notify, sendOf } from "../../wire/pipe.js";
import {
  hasAuthProvider,
  hasPerRequestStream,
  isStdioTransport,
  isStreamableHttpTransport,
  replaceTransportFetch,
  transportFetch,
} from "../../sdk/private.js";
import { PER_REQUEST_FETCH, bindFetch, isCancellableFetch, observesBody, perRequestFetch, sendsEachOnce, unbindFetch } from "./fetch.js";
import { anotherCopyMessage, fromAnotherCopy } from "../../utils/copies.js";
import type { FetchLike, FetchPort } from "./fetch.js";
import { defaultFetch } from "./cancellable-fetch.js";
import { STREAM_CLOSE_PROTOCOL_VERSION, StreamTracker, fetchNotTheTransports } from "./streams.js";
import { LegacyDelivery } from "./delivery.js";

export { STREAM_CLOSE_PROTOCOL_VERSION, neverLeft } from "./streams.js";

/** How long a 2025-era cancel waits for a fact that says the server has the request, at most, in ms. */
export const DEFAULT_FLUSH_TIMEOUT_MS = 250;
/** How long a 2025-era `notifications/cancelled` POST waits for its answer by default, in ms (see `notificationTimeoutMs`). */
export const DEFAULT_NOTIFICATION_TIMEOUT_MS = 10_000;

/** Options of `streamableHttpCancellation`. */
export interface StreamableHttpCancellationOptions {
  /**
   * In ms, 0 to 10_000. On a 2025-era connection (2025-03-26 to 2025-11-25, rule 40) the cancel
   * POSTs `notifications/cancelled` once the request is known to have reached the server (its
   * response head arrived; or, on a server that answers in JSON, its body was fully written, which
   * the library's own fetch reports), and closes the request's stream once the server answered it
   * (or its send failed), at most this long after its body was written (the library's own fetch
   * reports it; another fetch: after it was sent). Where neither fact can be observed yet, it waits at
   * most this long for one. A `close()` of the transport right after a cancel waits at most this
   * long for those notifications before closing. This option does not bound the stream of a
   * task-augmented request cancelled before its task id was known (any era): it stays open until
   * its response arrives, at most the task's `watchMs` (10_000 ms by default), so its
   * `CreateTaskResult` is not lost and the task gets its `tasks/cancel` (see
   * `StreamableHttpStats.holding`). The caller of the cancelled call never waits for any of it.
   * @default 250 (`DEFAULT_FLUSH_TIMEOUT_MS`)
   */
  flushTimeoutMs?: number;
  /**
   * In ms, 1 to 120_000. On a 2025-era connection: the longest a POSTed `notifications/cancelled`
   * waits for the server's answer (a 202). Then it is given up: its POST is aborted (its socket
   * released, when the fetch is `cancellableFetch()`'s) and the record's `cancel.undelivered`
   * says `sent (its body written), but no answer came within notificationTimeoutMs (…)` (rule 40:
   * a notification the server never answered is not known to be delivered). The caller of the
   * cancelled call never waits for it.
   * @default 10_000 (`DEFAULT_NOTIFICATION_TIMEOUT_MS`)
   */
  notificationTimeoutMs?: number;
  /**
   * For a v1 `StreamableHTTPClientTransport`: the `cancellableFetch()` it was created with. Found
   * on the transport by itself; needed only when the transport wraps its fetch (v1
   * `redirectPolicy: 'follow'`). A v2 transport needs none: its own fetch (or the global one) is
   * put under the library's per-request fetch when it is wrapped.
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
   * Streams of task-augmented requests cancelled before their task id was known, kept open (at
   * most the task's `watchMs`, or until their response arrives) so a `CreateTaskResult` already
   * on its way is not lost with them.
   */
  holding: number;
  /**
   * What is kept of 2025-era cancels while their notification is on its way: a mark that it may
   * take a pooled connection, the watch of its POST's body, the HTTP error it was refused with.
   * Each goes when its cancel's delivery is over.
   */
  cancelMarks: number;
}

/** The Streamable HTTP adapter: a `CancellationAdapter` plus read-only counts. */
export interface StreamableHttpAdapter<T extends TransportLike> extends CancellationAdapter<T> {
  /** `"modern"` on a 2026-07-28 connection (the stream close is the cancel), else `"legacy"`. */
  readonly era: "modern" | "legacy";
  /** What the adapter holds right now; every count but `resumesRefused` is 0 when idle. */
  stats(): StreamableHttpStats;
}

/**
 * The Streamable HTTP adapter (`mcp-cancellable/streamable-http`): cancelling a call closes
 * that request's own response stream, so the server sees its connection close; other requests
 * in flight are untouched. Era-aware:
 *
 * - 2026-07-28 (v2 SDK): the stream close is the cancel; no `notifications/cancelled` is sent
 *   (rules 6, 28). Record mechanism `stream-close`.
 * - 2025-03-26 to 2025-11-25: `notifications/cancelled` is POSTed (with the session and
 *   protocol-version headers) once the server has the request, and the stream is closed right
 *   after it (rule 40). Record mechanism `notification+stream-close`.
 *
 * In the connection's pipeline it is two layers on the transport: the stream tracker
 * (`streams.ts`: a stream per request, what the fetch observes of it as wire facts, the close,
 * resumes of closed streams refused) and the 2025-era delivery (`delivery.ts`).
 *
 * @param transport the SDK's `StreamableHTTPClientTransport`: v2 (`@modelcontextprotocol/client`)
 *   as it is (its fetch is put under the library's per-request fetch); v1
 *   (`@modelcontextprotocol/sdk`) created with `{ fetch: cancellableFetch() }`.
 * @returns the adapter for `withCancellation`; its `.transport` is `transport` itself.
 * @throws {InvalidOptionError} a v1 transport created without `cancellableFetch()`, a fetch
 *   already bound to another transport, or `flushTimeoutMs` or `notificationTimeoutMs` out of range.
 */
export function streamableHttpCancellation<T extends TransportLike>(
  transport: T,
  options: StreamableHttpCancellationOptions = {},
): StreamableHttpAdapter<T> {
  return new StreamableHttpAdapterImpl(transport, options);
}

const adapterOptionsSchema = z
  .strictObject({ flushTimeoutMs: msOption(0, 10_000, false), notificationTimeoutMs: msOption(1, 120_000, false), fetch: fnOption })
  .partial();

const NO_STATS: StreamableHttpStats = {
  cancelMarks: 0,
  streams: 0,
  sending: 0,
  flushing: 0,
  checks: 0,
  resuming: 0,
  blockedTokens: 0,
  resumesRefused: 0,
  holding: 0,
};

class StreamableHttpAdapterImpl<T extends TransportLike> implements StreamableHttpAdapter<T>, LayeredAdapter {
  readonly transport: T;
  readonly #v2: boolean;
  readonly #fetch: unknown;
  /** The fetch is bound to this adapter (the library's own): it reports each request's dispatch. */
  readonly #bound: boolean;
  /**
   * The first request must go through the bound fetch, else it is not the one the transport sends
   * with (see `TrackerConfig.checksFetch`): always on v1; on v2 when the `fetch` option named
   * another than the transport's own.
   */
  readonly #checksFetch: boolean;
  readonly #flushTimeoutMs: number;
  readonly #notificationTimeoutMs: number;
  /** The layers of the pipeline the adapter is in (the newest, if it is piped again). */
  #tracker: StreamTracker | undefined;
  #delivery: LegacyDelivery | undefined;
  /** Resumes refused by earlier pipelines of this adapter (cumulative). */
  #refusedBefore = 0;

  constructor(transport: T, options: StreamableHttpCancellationOptions) {
    if (typeof transport !== "object" || transport === null || typeof transport.send !== "function") {
      throw new InvalidOptionError("transport", "streamableHttpCancellation: transport must be a StreamableHTTPClientTransport");
    }
    refuseCarried(transport, "streamableHttpCancellation", "passes");
    parseOptions(adapterOptionsSchema, options, "streamableHttpCancellation options");
    // A cancellableFetch() of another copy of the library: its reports go to that copy's tables.
    for (const [option, fetch] of [
      ["fetch", options.fetch],
      ["transport", transportFetch(transport)],
    ] as const) {
      if (fromAnotherCopy(fetch, PER_REQUEST_FETCH)) {
        throw new InvalidOptionError(option, anotherCopyMessage("the transport's cancellableFetch()", "streamableHttpCancellation"));
      }
    }
    this.#flushTimeoutMs = options.flushTimeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS;
    this.#notificationTimeoutMs = options.notificationTimeoutMs ?? DEFAULT_NOTIFICATION_TIMEOUT_MS;
    this.transport = transport;
    // The transport's private `_fetch` and the v2 marker: src/sdk/private.ts.
    this.#v2 = hasPerRequestStream(transport);
    if (this.#v2 && options.fetch !== undefined && options.fetch !== transportFetch(transport) && !isCancellableFetch(options.fetch)) {
      // A v2 transport sends with its own fetch, which the library puts under its per-request
      // fetch: a plain fetch given here only turned that observation off (an outside tester's).
      // A `cancellableFetch()` other than the transport's own is taken (the transport's fetch may
      // wrap it, as the proxy's does) and checked at the first request, as on v1.
      throw new InvalidOptionError(
        "fetch",
        "streamableHttpCancellation: a v2 transport needs no fetch option: leave it out (the transport's own fetch, or the " +
          "global one, is put under the library's per-request fetch); to send with a fetch of your own, create the transport " +
          "with it: new StreamableHTTPClientTransport(url, { fetch })",
      );
    }
    if (this.#v2 && options.fetch === undefined && !isCancellableFetch(transportFetch(transport))) {
      // v2: its own fetch (or the global one) goes under the library's per-request fetch, which
      // observes each request (its body written, its response head) and marks the failures of
      // the library's own notification POSTs (the SDK's echo of them in onerror is known for ours).
      replaceTransportFetch(transport, (current) =>
        typeof current === "function" ? perRequestFetch(current as FetchLike) : defaultFetch(),
      );
    }
    const own = transportFetch(transport);
    if (options.fetch !== undefined && isCancellableFetch(own) && options.fetch !== own) {
      // The transport sends with a cancellableFetch() of its own, and the option names another.
      throw new InvalidOptionError("fetch", fetchNotTheTransports("this transport was created with another one (leave the option out)"));
    }
    this.#fetch = options.fetch ?? own;
    this.#checksFetch = !this.#v2 || (options.fetch !== undefined && options.fetch !== own);
    let bound: boolean;
    try {
      bound = bindFetch(this.#fetch, this, this.#port);
    } catch (error) {
      throw new InvalidOptionError("fetch", `streamableHttpCancellation: ${(error as Error).message}`);
    }
    this.#bound = bound;
    if (bound || this.#v2) return;
    if (!isStreamableHttpTransport(transport)) {
      // A stdio (or other) transport handed to the HTTP adapter: the v1 fetch advice does not apply.
      throw new InvalidOptionError(
        "transport",
        `streamableHttpCancellation: this is not a Streamable HTTP transport (a StreamableHTTPClientTransport)${
          isStdioTransport(transport) ? ": it is a stdio transport, so use stdioCancellation(transport) from mcp-cancellable/stdio" : ""
        }`,
      );
    }
    throw new InvalidOptionError(
      "transport",
      "streamableHttpCancellation: this transport cannot close one request's stream. For the v1 SDK create it with " +
        "new StreamableHTTPClientTransport(url, { fetch: cancellableFetch() }) (with redirectPolicy 'follow', also pass " +
        "that fetch here: streamableHttpCancellation(transport, { fetch })); a v2 transport needs nothing",
    );
  }

  /** The stream tracker on the transport, the 2025-era delivery above it. */
  [ADAPTER_LAYERS](): readonly LayerFactory[] {
    const transport = this.transport as { protocolVersion?: unknown };
    return [
      (below: Port) => {
        if (this.#tracker !== undefined) this.#refusedBefore += this.#tracker.stats().resumesRefused;
        this.#tracker = new StreamTracker(below, {
          v2: this.#v2,
          transportVersion: () => transport.protocolVersion,
          flushTimeoutMs: this.#flushTimeoutMs,
          closedDown: this.#closedDown,
          observesBody: this.#observesBody,
          sendsEachOnce: () => sendsEachOnce(this.#fetch),
          observesDispatch: this.#bound,
          checksFetch: this.#checksFetch,
          reauthorizes: () => hasAuthProvider(this.transport),
        });
        return this.#tracker;
      },
      () =>
        (this.#delivery = new LegacyDelivery(this.#tracker!, {
          flushTimeoutMs: this.#flushTimeoutMs,
          notificationTimeoutMs: this.#notificationTimeoutMs,
          observesBody: this.#observesBody,
        })),
    ];
  }

  get era(): "modern" | "legacy" {
    if (this.#tracker !== undefined) return this.#tracker.era;
    const version = (this.transport as { protocolVersion?: unknown }).protocolVersion;
    return this.#v2 && typeof version === "string" && version >= STREAM_CLOSE_PROTOCOL_VERSION ? "modern" : "legacy";
  }

  stats(): StreamableHttpStats {
    const tracker = this.#tracker?.stats();
    if (tracker === undefined) return { ...NO_STATS, resumesRefused: this.#refusedBefore };
    return { ...tracker, flushing: this.#delivery?.flushing ?? 0, resumesRefused: tracker.resumesRefused + this.#refusedBefore };
  }

  /** Used only outside a pipeline (the wire always makes one): the pipeline's cancel, else the plain notification. */
  cancel(request: CancelRequest): CancelMechanism {
    if (this.#delivery !== undefined) return this.#delivery.cancel(request);
    return notify({ send: sendOf(this.transport) }, request);
  }

  /**
   * The fetch reports each request's body fully written: a fact of the fetch in use, read at each
   * decision (the default fetch knows it only once undici loaded, or failed to: then it is false).
   */
  readonly #observesBody = (): boolean => observesBody(this.#fetch);

  /** The transport closed: the fetch lets go of the adapter and closes its own connection pool. */
  readonly #closedDown = (): void => unbindFetch(this.#fetch, this);

  /** What the per-request fetch asks and tells: the current pipeline's stream tracker answers. */
  readonly #port: FetchPort = {
    signalFor: (id) => this.#tracker?.port.signalFor(id),
    resume: (token) => this.#tracker?.port.resume(token),
    ended: (id, how, cause, resumed) => this.#tracker?.port.ended(id, how, cause, resumed),
    refused: (id, status) => this.#tracker?.port.refused(id, status),
    cancelSent: (id) => this.#tracker?.port.cancelSent(id),
    cancelSignal: (id) => this.#tracker?.port.cancelSignal(id),
    sent: (id) => this.#tracker?.port.sent(id),
    answered: (id, status, contentType) => this.#tracker?.port.answered(id, status, contentType),
    blind: (id) => this.#tracker?.port.blind(id),
    dispatched: (id) => this.#tracker?.port.dispatched(id),
    bodyStarted: (id) => this.#tracker?.port.bodyStarted(id),
    fresh: (id) => this.#tracker?.port.fresh(id) ?? true,
  };
}
