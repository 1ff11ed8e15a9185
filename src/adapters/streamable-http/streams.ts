// The Streamable HTTP stream tracker: the layer of an HTTP connection's pipeline right on the
// transport. Every request gets its own response stream (an AbortController on its POST, through
// the SDK's per-request `requestSignal` on v2 or `cancellableFetch()`'s per-request fetch on v1), so
// one request's stream can be closed without touching the others; what the fetch observes of each
// request (its body written, its response head, how its stream ended) comes up as wire facts.
import type { RequestId } from "../../core/cancellable-call.js";
import type { CancelMechanism } from "../../types/record.js";
import { AFTER_ITS_CLOSE, Layer } from "../../wire/port.js";
import type { MessageExtra, Port, SendOptions } from "../../wire/port.js";
import { findAnswered, unserialisable } from "../../wire/messages.js";
import type { Message } from "../../wire/messages.js";
import type { CancelRequest } from "../types.js";
import { isCancelSendFailure, link } from "./fetch.js";
import type { FetchPort } from "./fetch.js";
import { noop } from "../../utils/hooks.js";
import { yieldTask } from "../../utils/slices.js";
import { InvalidOptionError } from "../../errors/InvalidOptionError.js";

/** The message of a `fetch` option that names a `cancellableFetch()` the transport does not send with: `why` says how that was seen. */
export function fetchNotTheTransports(why: string): string {
  return (
    "streamableHttpCancellation: the fetch option must be the cancellableFetch() the transport was created with " +
    `(new StreamableHTTPClientTransport(url, { fetch, redirectPolicy: 'follow' }), then streamableHttpCancellation(transport, { fetch })): ${why}`
  );
}

/** The first protocol revision whose Streamable HTTP cancel is closing the stream (rules 6, 28). */
export const STREAM_CLOSE_PROTOCOL_VERSION = "2026-07-28";

/** At most this many resume tokens of closed streams are remembered to refuse their resume. */
const MAX_BLOCKED_TOKENS = 1_024;

/** At most this many requests whose streams a cancel closed in an earlier turn are remembered (see `#closedEarlier`). */
const MAX_CLOSED_EARLIER = 1_024;

/** Prefix of the abort reasons of our own cancels: their echoes in `onerror` are swallowed. */
const OWN_ABORT = "mcp-cancellable: cancelled request";
const OWN_SSE_ERROR = `SSE stream disconnected: AbortError: ${OWN_ABORT}`;
/** The v1 SDK's report of a failed resume (`GET` with `Last-Event-ID`): ours when it failed by our abort. */
const RECONNECT_FAILED = "Failed to reconnect SSE stream: ";

/** What the tracker knows of the connection it sits on (the adapter's, fixed when it was made; `observesBody` is read live). */
export interface TrackerConfig {
  /** v2 transports take a per-request `requestSignal` and close the POST themselves. */
  readonly v2: boolean;
  /** The transport's own protocol version (read when the era is asked and none was set). */
  readonly transportVersion: () => unknown;
  /** How long a 2026-07-28 task-augmented request's stream is held for its `CreateTaskResult`, ms. */
  readonly flushTimeoutMs: number;
  /** The transport closed (told once per close, after the tracker let go of everything). */
  readonly closedDown: () => void;
  /**
   * The fetch reports each request's body fully written (the library's own, sending through
   * undici): a request whose send failed before that was never whole at the server (it cannot
   * have run), whatever the failure. Read at each decision: the default fetch knows it only once
   * undici loaded, or failed to (the global `fetch` then: false).
   */
  readonly observesBody: () => boolean;
  /** The fetch sends each request once (see `sendsEachOnce`): a connect-phase error code then proves it never left. */
  readonly sendsEachOnce: () => boolean;
  /** The fetch is the library's own (bound to the adapter): it reports when each request is handed to the network. */
  readonly observesDispatch: boolean;
  /** The transport answers a 401 or 403 by authorizing and sending again (read at each answer). */
  readonly reauthorizes: () => boolean;
  /**
   * The connection's first request (`initialize`, or `server/discover` on 2026-07-28) must go
   * through the bound fetch: a `fetch` option the transport does not send with is refused then.
   */
  readonly checksFetch: boolean;
}

/** One request's response stream. */
export interface Stream {
  readonly id: RequestId;
  /** Aborting it closes the request's POST (and a resumed GET): the TCP connection closes. */
  readonly controller: AbortController;
  /** Removes the link from the SDK's own per-request signal (v2), if any. */
  unlink: () => void;
  /** The last SSE event id the SDK read on it (what it would resume from). */
  lastEventId: string | undefined;
  /** Set while the stream waits for the SDK to resume it with this token. */
  resumeToken: string | undefined;
  /** We closed it on purpose (or its cancel is on its way). */
  cancelled: boolean;
  /** Its body was fully written on its connection (a fetch that reports it). */
  written: boolean;
  /** The status of its response head, once it arrived. */
  status: number | undefined;
  /** Its response head said the answer itself follows as JSON (no stream of events): the request is answered. */
  answeredInJson: boolean;
  /** Its send settled: `failed` with `failure` when it rejected. */
  settled: "pending" | "yes" | "failed";
  failure?: unknown;
  /** Its response arrived after it was cancelled (a notification not yet sent is dropped, rule 7). */
  responded: boolean;
  /**
   * Cancelled, it then ended or broke on its own (the server reset it) before the cancel's close:
   * that close closes nothing, and the record does not name one.
   */
  endedFirst?: true;
  /** Its POST was handed to the network (see `FetchPort.dispatched`); until then it is still in this process. */
  dispatched: boolean;
  /** The first bytes of its response body arrived (see `FetchPort.bodyStarted`). */
  bodyStarted: boolean;
  /** v2: its POST's body ended cleanly (`FetchPort.ended`, `eof`): a resume the v2 SDK then makes is this stream's. */
  endedClean?: true;
  /** Its POST's fetch rejected with no response, with this (the adapter's fetch saw it: `FetchPort.ended`, `failed`). */
  fetchFailed?: { readonly cause: unknown };
  /** Cancelled by its stream close (2026-07-28): told if its POST then failed with its body never written (it never reached the server). */
  onUnsent?: (() => void) | undefined;
  /** Told once whenever a fact arrives (the 2025-era delivery waits on it). */
  onFact: (() => void) | undefined;
  /**
   * Told when its response arrives after its cancel, before the layers above get it: a 2025-era
   * notification still held then is never sent, and its record says so before the response's
   * late revision (which would otherwise claim the notification as the cancel).
   */
  onAnswered?: (() => void) | undefined;
  /** The one-macrotask look after its body ended (cleared when the response removes the stream). */
  check?: ReturnType<typeof setTimeout> | undefined;
  /** Cancelled before its task id was known: kept open for its `CreateTaskResult` until this timer closes it. */
  hold?: { timer: ReturnType<typeof setTimeout>; request: CancelRequest } | undefined;
}

/** Counts the tracker keeps (see `StreamableHttpStats`). */
export interface TrackerStats {
  streams: number;
  sending: number;
  checks: number;
  resuming: number;
  blockedTokens: number;
  resumesRefused: number;
  holding: number;
  cancelMarks: number;
}

/**
 * The stream tracker (see the file comment). Its cancel is the stream close, in both eras: on
 * 2026-07-28 it is the whole cancel (rules 6, 28); on a 2025-era connection the delivery layer
 * above it POSTs the notification first (rule 40) and asks it to close the stream. Nothing undoes
 * a close: the SDK's automatic resume (`GET` with `Last-Event-ID`) of a stream closed on purpose
 * is refused (a 405 the SDK takes silently), our own aborts never reach `onerror`, and a stream
 * that ends or breaks without its response is reported as a fact (`ended`), which settles its
 * call `connection-closed` (a server drop fires no `onclose` on HTTP).
 */
export class StreamTracker extends Layer {
  readonly #config: TrackerConfig;
  readonly #streams = new Map<RequestId, Stream>();
  /**
   * Requests whose streams were closed on purpose in this turn of the event loop (moved to
   * `#closedEarlier` at the next): a response for one of them now was read with what its stream
   * held at the close.
   */
  readonly #closedThisTurn = new Set<RequestId>();
  /**
   * Requests whose streams were closed on purpose in an earlier turn (the oldest forgotten past
   * MAX_CLOSED_EARLIER): a response for one of them came some other way, after the close
   * (`AFTER_ITS_CLOSE`). Only these: a stream that ended on its own before its response was read
   * (a JSON answer's body ends before the SDK hands the message on) closed nothing.
   */
  readonly #closedEarlier = new Set<RequestId>();
  readonly #turnEnded = (): void => {
    for (const id of this.#closedThisTurn) {
      this.#closedEarlier.delete(id);
      this.#closedEarlier.add(id);
    }
    this.#closedThisTurn.clear();
    for (const id of this.#closedEarlier) {
      if (this.#closedEarlier.size <= MAX_CLOSED_EARLIER) break;
      this.#closedEarlier.delete(id);
    }
  };
  /** v1: each request's signal until its send settles, so a cancel before the fetch started still reaches it. */
  readonly #sending = new Map<RequestId, AbortSignal>();
  readonly #resuming = new Map<string, Stream>();
  readonly #blocked = new Map<string, RequestId>();
  /** 2026-07-28: cancelled streams kept open for their `CreateTaskResult` (see `#hold`). */
  readonly #holds = new Set<Stream>();
  readonly #checks = new Set<ReturnType<typeof setTimeout>>();
  #resumesRefused = 0;
  /** Requests whose `notifications/cancelled` the server answered with an HTTP error (the status), until the delivery reads it. */
  readonly #refusals = new Map<RequestId, number>();
  /**
   * The `notifications/cancelled` POSTs the delivery is sending, by request: whether the body was
   * fully written, and what gives the POST up (made when a fetch of ours asks for it). Entries
   * are the delivery's (it reads each at its end, even after a close).
   */
  readonly #cancelsSent = new Map<
    RequestId,
    { written: boolean; giveUp: AbortController | undefined; onWritten: (() => void) | undefined }
  >();
  /** Requests whose `notifications/cancelled` may take a pooled connection (the server answered their head). */
  readonly #pooled = new Set<RequestId>();
  #version: string | undefined;
  /** Set once `close()` was called: echoes of the close's own aborts are not errors. */
  #closing = false;
  /** The transport closed (onclose). */
  #closed = false;

  constructor(below: Port, config: TrackerConfig) {
    super(below);
    this.#config = config;
  }

  /** `"modern"` on a 2026-07-28 connection (the stream close is the cancel), else `"legacy"`. */
  get era(): "modern" | "legacy" {
    const version = this.#version ?? this.#config.transportVersion();
    return this.#config.v2 && typeof version === "string" && version >= STREAM_CLOSE_PROTOCOL_VERSION ? "modern" : "legacy";
  }

  /** True once the transport closed (nothing can be sent any more). */
  get closedDown(): boolean {
    return this.#closed;
  }

  stats(): TrackerStats {
    return {
      streams: this.#streams.size,
      sending: this.#sending.size,
      checks: this.#checks.size,
      resuming: this.#resuming.size,
      blockedTokens: this.#blocked.size,
      resumesRefused: this.#resumesRefused,
      holding: this.#holds.size,
      cancelMarks: this.#pooled.size + this.#cancelsSent.size + this.#refusals.size,
    };
  }

  /**
   * The delivery is about to send this request's `notifications/cancelled`: watch for its body
   * written; `onWritten` is told once when it is (a fetch that reports it).
   */
  expectCancel(id: RequestId, onWritten?: () => void): void {
    const entry = this.#cancelsSent.get(id);
    if (entry === undefined) this.#cancelsSent.set(id, { written: false, giveUp: undefined, onWritten });
    else {
      entry.written = false; // sent again (after a dropped connection)
      entry.onWritten = onWritten;
    }
  }

  /** True when this request's `notifications/cancelled` body was fully written; forgets it (read once). */
  cancelWritten(id: RequestId): boolean {
    const written = this.#cancelsSent.get(id)?.written === true;
    this.#cancelsSent.delete(id);
    return written;
  }

  /**
   * Gives up this request's `notifications/cancelled` POST (its answer did not come in time):
   * aborts it with `reason`, so its socket is released. False when no fetch of ours sends it
   * (a fetch that is not `cancellableFetch()` cannot be reached: its POST goes on by itself).
   */
  giveUpCancel(id: RequestId, reason: Error): boolean {
    const giveUp = this.#cancelsSent.get(id)?.giveUp;
    giveUp?.abort(reason);
    return giveUp !== undefined;
  }

  /** The HTTP error the server answered this request's `notifications/cancelled` with, if it did (read once). */
  refusal(id: RequestId): number | undefined {
    const status = this.#refusals.get(id);
    this.#refusals.delete(id);
    return status;
  }

  /**
   * The next `notifications/cancelled` for this request may take a pooled connection: the server
   * answered the request's head, so it has the request (else it goes on a connection of its own).
   */
  allowPooled(id: RequestId): void {
    this.#pooled.add(id);
  }

  /** The delivery of this request's cancel is over: what was kept for it goes (its pooled-connection mark, its POST's watch). */
  cancelOver(id: RequestId): void {
    this.#pooled.delete(id);
    this.#cancelsSent.delete(id);
    this.#refusals.delete(id);
  }

  /** The tracked stream of a request, if it still has one. */
  stream(id: RequestId): Stream | undefined {
    return this.#streams.get(id);
  }

  override setProtocolVersion(version: string): void {
    this.#version = version;
    this.below.setProtocolVersion(version);
  }

  /**
   * The stream close. A task-augmented request awaiting its `CreateTaskResult` keeps its stream
   * open for it, at most `awaitsTask` ms (see `#hold`): nothing goes out now.
   */
  override cancel(request: CancelRequest): CancelMechanism {
    const stream = this.#streams.get(request.requestId);
    if (stream === undefined) return "none";
    if (this.stopUndispatched(stream, request)) return "none";
    stream.cancelled = true;
    if (request.awaitsTask !== undefined && request.awaitsTask > 0) {
      this.#hold(stream, request);
      return "none";
    }
    stream.onUnsent = () => request.delivery({ sent: "none", failed: null });
    this.closeStream(stream);
    return "stream-close";
  }

  /**
   * A request cancelled while its POST is still in this process (not yet handed to the network:
   * the default fetch loading undici on its first use) is stopped here: its stream is closed, so
   * the POST never leaves, and the cancel is reported as nothing sent (the request never reached
   * the server: `not-sent`). False for a request already on its way.
   */
  stopUndispatched(stream: Stream, request: CancelRequest): boolean {
    if (stream.dispatched || stream.settled !== "pending") return false;
    this.closeStream(stream);
    request.delivery({ sent: "none", failed: null });
    return true;
  }

  override close(): Promise<void> {
    this.#closing = true;
    return this.below.close();
  }

  /** Every request gets its own stream (controller) before it goes out. */
  override send(message: Message, options?: SendOptions): Promise<void> {
    const id = message.id;
    const method = message.method;
    if (
      (method === "initialize" || method === "server/discover") &&
      this.#config.observesDispatch &&
      this.#config.checksFetch &&
      !this.#fetchSeen
    ) {
      // The adapter's fetch must be the one the transport sends with: one that never sees the
      // transport's initialize is another (a second `cancellableFetch()` given as the `fetch`
      // option beside a transport whose own is wrapped, `redirectPolicy: 'follow'`), and no
      // request's stream could be closed (an outside tester's: the record said it was).
      return this.below.send(message, options).then(() => {
        if (!this.#fetchSeen) {
          throw new InvalidOptionError(
            "fetch",
            fetchNotTheTransports("the transport's initialize did not go through it, so no request's stream could be closed"),
          );
        }
      });
    }
    if (
      typeof method !== "string" ||
      (typeof id !== "string" && typeof id !== "number") ||
      method === "initialize" ||
      method === "server/discover"
    ) {
      return this.below.send(message, options);
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
      written: false,
      status: undefined,
      answeredInJson: false,
      settled: "pending",
      responded: false,
      dispatched: !this.#config.observesDispatch,
      bodyStarted: false,
      onFact: undefined,
    };
    this.#forgetStream(this.#streams.get(id));
    this.#streams.set(id, stream);
    const v2 = this.#config.v2;
    if (typeof options?.resumptionToken === "string") this.#awaitResume(stream, options.resumptionToken);
    const next: SendOptions = {
      ...options,
      requestSignal: controller.signal,
      onresumptiontoken: (token: string) => {
        stream.lastEventId = token;
        if (stream.cancelled && !v2) this.#block(token, id);
        options?.onresumptiontoken?.(token);
      },
      onRequestStreamEnd: () => {
        options?.onRequestStreamEnd?.();
        // A held stream that ended without its response: nothing more can come on it.
        if (this.#unhold(stream)) this.#forgetStream(stream);
        // v2 calls this when the stream ended and it will not resume it (also after the response).
        this.#lost(stream, "eof", new Error("The request's response stream ended without its response"));
      },
    };
    if (!v2) this.#sending.set(id, controller.signal);
    const settle = (how: "yes" | "failed", failure?: unknown): void => {
      if (this.#sending.get(id) === controller.signal) this.#sending.delete(id);
      stream.settled = how;
      stream.failure = failure;
      stream.onFact?.();
    };
    return this.below.send(message, next).then(
      () => {
        settle("yes");
        // v2 resolves the send of a request answered with JSON once it has handed on the body's
        // messages (it never tells a JSON body's end): a stream still here was answered with JSON
        // that did not carry its response (an answer for another id). Not a timer: in a browser
        // the body's end and its parse are tasks apart.
        if (v2 && stream.answeredInJson && !stream.cancelled && this.#streams.get(id) === stream) {
          this.#lost(stream, "eof", new Error("The request's response stream ended without its response"));
        }
      },
      (error: unknown) => {
        settle("failed", error);
        // Its params cannot be serialised (the SDK's stringify threw before any fetch): nothing
        // left, and the SDK fails the call with that error; the record says never sent.
        if (unserialisable(message)) {
          this.#forgetStream(stream);
          this.up.fact(id, { kind: "unsendable" });
          throw error;
        }
        // Its stream close (the cancel) failed the POST before its body was written: it never
        // reached the server, and the record says so.
        const unsent = stream.onUnsent;
        stream.onUnsent = undefined;
        if (unsent !== undefined && this.provedUnsent(stream, error)) unsent();
        if (this.#streams.get(id) === stream && !stream.cancelled) {
          // The request's own POST failed: a connect-phase failure proves it never left; an HTTP
          // status means the server got it (the `answered` fact says so; the SDK fails the call).
          // A 2xx JSON answer whose send failed with no response of it come (an empty or cut body,
          // `null`, `{}`: the SDK's parse or its schema refused it) carried no response: the stream
          // ended without it, as an empty SSE stream does (an outside tester's finding: the call
          // failed with the SDK's bare SyntaxError or ZodError).
          if (stream.answeredInJson) this.#lost(stream, "eof", new Error("The server's JSON answer carried no response"));
          else if (stream.status !== undefined) this.#forgetStream(stream);
          // The fetch itself rejected with no response (the adapter's fetch saw it, whatever the
          // runtime's words for it: an outside tester's, Bun's `ECONNRESET` and a browser's
          // `Failed to fetch` failed the call as an error); without that fetch, by its words.
          else if (stream.fetchFailed !== undefined || isNetworkError(error)) {
            const failure = stream.fetchFailed?.cause ?? error;
            this.#lost(stream, this.provedUnsent(stream, failure) ? "refused" : "reset", failure);
          } else this.#forgetStream(stream);
        }
        throw error;
      },
    );
  }

  override message(message: Message, extra?: MessageExtra): void {
    // A response: its stream has done its job (rule 7: nothing to cancel any more).
    if (message.method === undefined) {
      // Matched as the wire matches answers ("1" answers request 1): this layer sits below it.
      const stream = findAnswered(message.id, (id) => this.#streams.get(id));
      if (
        stream === undefined &&
        this.#closedEarlier.size > 0 &&
        findAnswered(message.id, (id) => (this.#closedEarlier.has(id) ? true : undefined))
      ) {
        // Its stream was closed in an earlier turn: not read with what the stream held at the
        // close (that is read in the close's own turn, from the queues of the stream's body), it
        // came some other way, later.
        this.up.message(message, { ...extra, [AFTER_ITS_CLOSE]: true });
        return;
      }
      if (stream !== undefined) {
        if (!stream.cancelled) this.#forgetStream(stream);
        else if (stream.hold !== undefined)
          this.#heldAnswered(stream); // before the wire's late path sees it
        else {
          stream.responded = true; // a cancel's notification still waiting is dropped
          stream.onAnswered?.();
          stream.onFact?.();
          this.#forgetStream(stream);
        }
      }
    }
    this.up.message(message, extra);
  }

  override closed(): void {
    this.#closed = true;
    for (const stream of this.#streams.values()) {
      const held = stream.hold?.request;
      // A held stream (a task call cancelled before its CreateTaskResult) the close ends: recorded
      // as at the hold's bound, `stream-close` (on 2026-07-28 the request's cancel, rule 28; an
      // outside tester's: the record said nothing went out).
      if (this.#unhold(stream) && stream.endedFirst !== true) {
        held!.delivery({ sent: "stream-close", failed: null });
      }
      stream.unlink();
      stream.onFact?.();
    }
    this.#streams.clear();
    this.#sending.clear();
    this.#resuming.clear();
    this.#blocked.clear();
    this.#refusals.clear();
    this.#pooled.clear();
    this.#closedEarlier.clear(); // a new connection numbers its requests anew
    for (const timer of this.#checks) clearTimeout(timer);
    this.#checks.clear();
    this.#config.closedDown();
    this.up.closed();
  }

  override error(error: Error): void {
    if (this.#ownError(error)) return;
    this.up.error(error);
  }

  /** True for an error the transport reports because of one of our own cancels (it is swallowed). */
  #ownError(error: Error): boolean {
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

  /**
   * A task-augmented request cancelled before its task id was known: closing its stream now would
   * lose a `CreateTaskResult` already on it, and with it the only way to the task, which runs on.
   * The stream stays open at most `ms`: a response in that time is handed on as any late response
   * (a `CreateTaskResult` then gets its one `tasks/cancel` from the tasks layer, rules 35, 36) and
   * the stream is not closed; otherwise it closes then (the record then says so: on 2026-07-28
   * that close is the request's cancel). The caller was released already.
   */
  #hold(stream: Stream, request: CancelRequest): void {
    const timer = setTimeout(() => {
      this.#unhold(stream);
      if (this.#streams.get(stream.id) !== stream) return;
      if (stream.endedFirst === true) {
        // The server ended it meanwhile (reset it): nothing is closed now, and the record does not
        // say one was (an outside tester's: it said `stream-close`).
        this.#forgetStream(stream);
        return;
      }
      this.closeStream(stream);
      request.delivery({ sent: "stream-close", failed: null });
    }, request.awaitsTask);
    stream.hold = { timer, request };
    this.#holds.add(stream);
  }

  #unhold(stream: Stream): boolean {
    const hold = stream.hold;
    if (hold === undefined) return false;
    clearTimeout(hold.timer);
    stream.hold = undefined;
    this.#holds.delete(stream);
    return true;
  }

  /** The response of a held stream arrived: it is not closed (the tasks layer takes a `CreateTaskResult` on it). */
  #heldAnswered(stream: Stream): void {
    if (this.#unhold(stream)) this.#forgetStream(stream);
  }

  /**
   * A request's stream broke or ended without its response, and nothing more can come for it: a
   * broken one on 2026-07-28 (no resumption, rule 27), or a 202 with no body (any era: a request is answered in
   * JSON or SSE, rule 24). Once the SDK's parser has read what came (a task later: the rest of its
   * pipeline runs in microtasks), a stream still here lost its request: the call settles
   * `connection-closed` now, not at its timeout, and the stream's signal is aborted, so the v2 SDK
   * does not resume it (a GET with `Last-Event-ID`, about 1 s later, which 2026-07-28 does not
   * have). Both were an outside tester's findings.
   */
  #lostNow(id: RequestId, how: "eof" | "error", cause: unknown): void {
    const stream = this.#streams.get(id);
    if (stream === undefined || stream.cancelled || stream.check !== undefined) return;
    const timer = setTimeout(() => {
      this.#checks.delete(timer);
      stream.check = undefined;
      if (this.#streams.get(id) !== stream || stream.cancelled || stream.responded) return;
      this.#lost(stream, how === "eof" ? "eof" : "reset", cause ?? new Error("The request's response stream ended without its response"));
      stream.controller.abort(new DOMException(`${OWN_ABORT} ${JSON.stringify(stream.id)}`, "AbortError"));
    }, 0);
    stream.check = timer;
    this.#checks.add(timer);
  }

  /** Closes the stream on purpose: aborts its POST (or resumed GET); its resume is refused. */
  closeStream(stream: Stream): void {
    stream.cancelled = true;
    // After the transport closed (a delivery's close step that comes later): the stream is gone
    // with it; its fetch is aborted, and nothing is kept for it (an audit's: a resume token and a
    // request id were put back into the tables the close had cleared).
    if (this.#closed) {
      stream.controller.abort(new DOMException(`${OWN_ABORT} ${JSON.stringify(stream.id)}`, "AbortError"));
      return;
    }
    this.#forgetStream(stream);
    if (this.#closedThisTurn.size === 0) yieldTask(this.#turnEnded);
    this.#closedThisTurn.add(stream.id);
    if (stream.lastEventId !== undefined && !this.#config.v2) this.#block(stream.lastEventId, stream.id);
    stream.controller.abort(new DOMException(`${OWN_ABORT} ${JSON.stringify(stream.id)}`, "AbortError"));
  }

  /**
   * A cancelled request whose answer is coming in its JSON body (the head said so: rule 7, the
   * request is answered): the body is read, so its late result is seen and counted, but at most
   * `ms` more; then the stream is closed (a body that stalls holds nothing past it), and `closed`
   * is told (the record then names the close that went out).
   */
  drain(stream: Stream, ms: number, closed: () => void): void {
    if (stream.check !== undefined || this.#streams.get(stream.id) !== stream) return;
    const timer = setTimeout(() => {
      this.#checks.delete(timer);
      stream.check = undefined;
      if (this.#streams.get(stream.id) !== stream) return;
      this.closeStream(stream);
      closed();
    }, ms);
    stream.check = timer;
    this.#checks.add(timer);
  }

  /**
   * The stream ended or broke without its response: reported as the `ended` fact (the call
   * settles `connection-closed`). `refused` only when the request's own first POST failed before
   * any byte left (a resume's failure, or a stream the server had answered on, proves nothing of
   * the kind).
   */
  #lost(stream: Stream, how: "refused" | "reset" | "eof", cause: unknown): void {
    if (this.#streams.get(stream.id) !== stream) return;
    if (stream.cancelled) {
      // Its call is settled already (a cancel left it open for the answer in its body): gone now.
      stream.endedFirst = true;
      if (stream.hold === undefined) this.#forgetStream(stream);
      return;
    }
    this.#forgetStream(stream);
    // The SDK may still try to resume it: refuse, the call is settled.
    if (stream.lastEventId !== undefined && !this.#config.v2) this.#block(stream.lastEventId, stream.id);
    const refused = how === "refused" && !stream.written && stream.lastEventId === undefined && stream.status === undefined;
    this.up.fact(stream.id, { kind: "ended", how: refused ? "refused" : how === "refused" ? "reset" : how, cause, at: performance.now() });
  }

  /**
   * The request's own POST failed, and the facts prove it never reached the server whole: its
   * connection was never made, or (a fetch that reports it) its body was never fully written.
   */
  provedUnsent(stream: Stream, failure: unknown): boolean {
    if (stream.written || stream.status !== undefined) return false;
    // The fetch saw its body never written; or the one attempt of a fetch that sends once failed
    // connecting (an outside tester's: a caller's retrying fetch reached the server, crashed it,
    // then was refused, and the call was recorded never sent).
    // What the fetch rejected with, where it was seen, not what the SDK made of it (v2 wraps it).
    return this.#config.observesBody() || (this.#config.sendsEachOnce() && neverLeft(stream.fetchFailed?.cause ?? failure));
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

  /** The adapter's fetch has been asked for a request's signal: the transport sends through it. */
  #fetchSeen = false;

  /**
   * What the per-request fetch asks and tells (see `FetchPort`). v1 streams are opened, resumed
   * and closed through it; on v2 the SDK's `requestSignal` does that, and the fetch only reports.
   */
  readonly port: FetchPort = {
    reauthorizes: () => this.#config.reauthorizes(),
    signalFor: (id) => {
      this.#fetchSeen = true;
      return this.#config.v2 ? undefined : (this.#sending.get(id) ?? this.#streams.get(id)?.controller.signal);
    },
    resume: (token) => {
      if (this.#config.v2) {
        if (this.era !== "modern") return undefined;
        // 2026-07-28 has no resumption (rule 27), yet the v2 SDK resumes a stream that ended
        // cleanly without its response once it carried an event id (an outside tester's: the GET
        // with Last-Event-ID reached the server, and the call waited for its 405). Its end was the
        // SDK's to tell (see `ended`); its resume says the response was not on it: the request is
        // lost, its call settles `connection-closed` now, and the GET never goes out.
        // The stream whose end the SDK told (`ended`), not another one still open: event ids are
        // the server's, and two streams may carry the same (an outside tester's: a server that
        // numbered each stream's events from 1 had a healthy call given up for another's).
        for (const stream of this.#streams.values()) {
          if (stream.lastEventId !== token || stream.cancelled || stream.endedClean !== true) continue;
          this.#lost(
            stream,
            "eof",
            new Error("The request's response stream ended without its response (2026-07-28 has no resumption: rule 27)"),
          );
          break;
        }
        this.#resumesRefused++;
        return "block";
      }
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
      // v2 tells the end of an SSE stream itself (`onRequestStreamEnd`, after any resume); a plain
      // JSON answer's end is seen when its send resolves (see `send`). But 2026-07-28 has no
      // resumption (rule 27): a stream that ended without its response lost the request, at once.
      if (this.#config.v2) {
        // A broken stream only: a clean end is the SDK's to tell (`onRequestStreamEnd`, or its
        // send's end for JSON), since in a browser the body's end and its parse are tasks apart
        // (a timer here took an answered call for a lost one, in the Chromium leg).
        if (this.era === "modern" && how === "error") this.#lostNow(id, how, cause);
        // A clean end: the SDK may resume it (see `resume`), which says which stream it was.
        if (how === "eof" && !resumed && this.era === "modern") {
          const stream = this.#streams.get(id);
          if (stream !== undefined) stream.endedClean = true;
        }
        // Its POST's fetch rejected with no response: the send's rejection (below the SDK's words for it) is a network failure.
        if (how === "failed" && !resumed) {
          const stream = this.#streams.get(id);
          if (stream !== undefined) stream.fetchFailed = { cause };
        }
        return;
      }
      const stream = this.#streams.get(id);
      if (stream === undefined) return;
      if (stream.cancelled) {
        this.#lost(stream, "eof", cause);
        return;
      }
      if (how === "failed") {
        this.#lost(stream, !resumed && this.provedUnsent(stream, cause) ? "refused" : "reset", cause);
        return;
      }
      // The body ended before the SDK's parser read all of it: look once it has (the rest of
      // the pipeline runs in microtasks). By then a response has removed the stream.
      const timer = setTimeout(() => {
        this.#checks.delete(timer);
        stream.check = undefined;
        if (this.#streams.get(id) !== stream) return;
        // Cancelled meanwhile (its drain saw this look under way and left the stream to it): the
        // body ended without its response, so it is gone now (an audit's: it stayed until the close).
        if (stream.cancelled) {
          this.#lost(stream, "eof", cause);
          return;
        }
        // With a priming event id the v1 SDK resumes the stream (GET Last-Event-ID): wait for it.
        if (stream.lastEventId !== undefined) this.#awaitResume(stream, stream.lastEventId);
        else
          this.#lost(
            stream,
            how === "eof" ? "eof" : "reset",
            cause ?? new Error("The request's response stream ended without its response"),
          );
      }, 0);
      stream.check = timer;
      this.#checks.add(timer);
    },
    // Kept only while the delivery waits for this POST (after it, no one would read it).
    refused: (id, status) => {
      if (this.#cancelsSent.has(id)) this.#refusals.set(id, status);
    },
    cancelSent: (id) => {
      const entry = this.#cancelsSent.get(id);
      if (entry === undefined) return;
      entry.written = true;
      const onWritten = entry.onWritten;
      entry.onWritten = undefined;
      onWritten?.();
    },
    cancelSignal: (id) => {
      const entry = this.#cancelsSent.get(id);
      if (entry === undefined) return undefined;
      entry.giveUp ??= new AbortController();
      return entry.giveUp.signal;
    },
    sent: (id) => {
      const stream = this.#streams.get(id);
      if (stream !== undefined && !stream.written) {
        stream.written = true;
        stream.onFact?.();
      }
      this.up.fact(id, { kind: "written", at: performance.now() });
    },
    answered: (id, status, contentType) => {
      const stream = this.#streams.get(id);
      if (stream !== undefined) {
        stream.status = status;
        stream.answeredInJson = status >= 200 && status < 300 && contentType?.startsWith("application/json") === true;
        stream.onFact?.();
      }
      this.up.fact(id, { kind: "answered", status, contentType, at: performance.now() });
      if (status === 202) this.#lostNow(id, "eof", new Error("The server answered the request 202 Accepted, with no response"));
    },
    blind: (id) => this.up.fact(id, { kind: "unobservable", fact: "written" }),
    dispatched: (id) => {
      const stream = this.#streams.get(id);
      if (stream !== undefined) stream.dispatched = true;
    },
    bodyStarted: (id) => {
      const stream = this.#streams.get(id);
      if (stream === undefined) return;
      stream.bodyStarted = true;
      stream.onFact?.();
    },
    fresh: (id) => !this.#pooled.delete(id),
  };
}

/**
 * fetch's network failure, by its runtime's words, for a fetch the adapter cannot watch (with its
 * own fetch, the rejection itself is the fact: `Stream.fetchFailed`): a `TypeError` with a cause
 * (Node's undici: `fetch failed`, `terminated`) or an error `code` (Bun: `ECONNRESET`,
 * `ECONNREFUSED`), or a browser's (Chromium `Failed to fetch`, Firefox `NetworkError when
 * attempting to fetch resource.`, Safari `Load failed`); not an HTTP status or a bug in the message.
 */
export function isNetworkError(error: unknown): boolean {
  try {
    if (!(error instanceof TypeError)) return false;
    const { message, cause, code } = error as TypeError & { cause?: unknown; code?: unknown };
    // Node's own argument errors carry an `ERR_...` code (an invalid header): no network failure.
    return cause !== undefined || (typeof code === "string" && !code.startsWith("ERR_")) || NETWORK_FAILURE_WORDS.has(message);
  } catch {
    return false; // an error that cannot be read (a getter that throws, a revoked Proxy): no network error it can be told for
  }
}

/** What fetch rejects with for a network failure, by runtime (see `isNetworkError`). */
const NETWORK_FAILURE_WORDS = new Set([
  "fetch failed",
  "terminated",
  "Failed to fetch",
  "NetworkError when attempting to fetch resource.",
  "Load failed",
]);

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
  try {
    walk(error, 0);
  } catch {
    // An error that cannot be read (a getter that throws, a revoked Proxy) proves nothing (an outside
    // tester's: the throw failed the call with an internal TypeError instead of its own error).
    return false;
  }
  return codes.length > 0 && codes.every((code) => NEVER_CONNECTED.has(code));
}
