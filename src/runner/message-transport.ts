// The message-level entry point: a transport for a client that speaks JSON-RPC messages itself
// (the Vercel AI SDK's MCP client; the proxy's front). Each request it is handed becomes one
// `CallRunner.run`; the outcome goes back as the response the client expects, or as a JSON-RPC
// error response naming what the library did (never an internal message).
import { CARRIER, THIS_COPY_VIEW } from "../utils/copies.js";
import { isCallTimeoutError, isConnectionClosedError } from "../errors/guards.js";
import type { McpCancellableError } from "../errors/McpCancellableError.js";
import type { CancellationAdapter, TransportLike } from "../adapters/types.js";
import type { CancellableCall, RequestId } from "../core/cancellable-call.js";
import type { CancelTrigger, RunRecord } from "../types/record.js";
import type { CallOptions, CancellationOptions } from "../types/options.js";
import { CALL_MARKER, isPlainResponse, responseSchema, type Message } from "../wire/messages.js";
import type { Wire } from "../wire/wire.js";
import { CallRunner, nameOf, openWire } from "./runner.js";
import { awaitVerifiedText, splitAwaitVerification } from "./verified-outcome.js";
import type { AwaitVerification } from "./verified-outcome.js";
import { textOf } from "../utils/hooks.js";

/**
 * The JSON-RPC error code of the local error response for a request the library timed out (idle
 * or maximum total timeout): the MCP SDK's `RequestTimeout`. Local: it never goes on the wire to
 * the server (rule 3: the spec assigns no code to a local timeout).
 */
export const TIMEOUT_ERROR_CODE = -32001;

/** The code of the local error response for a request whose connection or stream was lost, or whose send was refused (the MCP SDK's `ConnectionClosed`). */
export const CONNECTION_CLOSED_ERROR_CODE = -32000;

/** A JSON-RPC message in the loose shape the AI SDK and the MCP SDKs share. */
export type JsonRpcMessage = { jsonrpc: "2.0"; [key: string]: unknown };

/** The per-request options of a message-level client: the request's signal, and the request a message answers. */
export interface MessageSendOptions {
  signal?: AbortSignal;
  relatedRequestId?: string | number;
}

/** Per-request options by method and params (for a tool, `params.name`), merged over the defaults; `awaitVerification` for this request. */
export type CallOptionsHook = (
  method: string,
  params: Record<string, unknown>,
) => (Omit<CallOptions, "signal"> & { awaitVerification?: AwaitVerification }) | undefined;

/**
 * What the message-level transport says about a settled request, as the `error` of its JSON-RPC
 * response: `code` -32001 (a timeout) or -32000 (connection lost, send refused), `message` the
 * library error's text, `data: { code, record }` its stable code and the run record.
 */
export interface LibraryErrorResponse {
  code: number;
  message: string;
  data: { code: string; record: RunRecord | null };
}

/** The answers the library made itself (a timeout's, a lost connection's), as delivered: for logs that name who answered. */
const localAnswers = new WeakSet<object>();

/** True for a message the library made itself to answer a request it settled (never the server's). @internal */
export function isLocalAnswer(message: object): boolean {
  return localAnswers.has(message);
}

/** How one settled request is answered to the message-level client, or `undefined` for no answer. */
export type ErrorResponder = (error: McpCancellableError) => LibraryErrorResponse | undefined;

/**
 * The default answer: a timeout as -32001 and a lost connection as -32000, both with
 * `data: { code, record }`; a cancel by the client's own signal gets none (the client rejected
 * its request itself when its signal fired).
 */
export const libraryErrorResponse: ErrorResponder = (error) => {
  const code = isCallTimeoutError(error) ? TIMEOUT_ERROR_CODE : isConnectionClosedError(error) ? CONNECTION_CLOSED_ERROR_CODE : undefined;
  if (code === undefined) return undefined;
  return { code, message: error.message, data: { code: error.code, record: error.record } };
};

/** Options of a message-level transport. */
export interface MessageTransportInit {
  /** Client-wide defaults, already validated. */
  readonly defaults: CancellationOptions;
  readonly callOptions?: CallOptionsHook | undefined;
  /**
   * A `tools/call` cancelled by a limit (not by the client's own signal) whose `verify` read runs
   * is answered once the read is done, with a `CallToolResult` (`isError: true`) saying what it
   * found, instead of the error response (see `AwaitVerification`). Per request through `callOptions` too.
   */
  readonly awaitVerification?: AwaitVerification | undefined;
  /** The entry point as its user names it, for the message of an invalid option from `callOptions` (default `"MessageTransport"`). */
  readonly name?: string | undefined;
  /** How a settled request is answered (default `libraryErrorResponse`). */
  readonly respond?: ErrorResponder | undefined;
}

/**
 * A request in progress: its call's `owner`. The call makes no promise: it is settled here from
 * the server's answer (`#onmessage`), and its rejection comes back through the runner's
 * `rejected` hook (`#rejected`), so a pending request holds no promise, resolving functions or
 * handlers.
 */
interface Waiting {
  readonly id: RequestId;
  /** Set once the request is handed to the wire (`undefined` for one settled before). */
  call: CancellableCall<unknown> | undefined;
  readonly signal: AbortSignal | undefined;
  readonly wait: AwaitVerification | undefined;
  /** `cancel` ended it: the client cancelled it itself and waits for no answer. */
  byClient: boolean;
  /** The progress token added here (the client gave none), until the call settles. */
  ownToken?: string;
}

function isLibraryError(error: unknown): error is McpCancellableError {
  return error instanceof Error && typeof (error as Partial<McpCancellableError>).code === "string" && "record" in error;
}

/**
 * A transport in the MCP SDK's `Transport` shape (`start`, `send(message, options)`, `close`,
 * `onmessage`, `onclose`, `onerror`, `setProtocolVersion`) over a cancellation adapter: every
 * request but `initialize` (rule 39) runs as one call of the library, with its idle and maximum
 * total timeouts, the adapter's cancel when its `signal` aborts or a limit fires, late messages
 * dropped, the record and the observer. Notifications and answers to the server's requests pass
 * through as they are.
 */
export class MessageTransport<T extends TransportLike> {
  /** The library is in its path (its own runner and wire): a client's wrapper refuses it (`carrierOf`). */
  get [CARRIER](): object {
    return THIS_COPY_VIEW;
  }

  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JsonRpcMessage) => void;

  readonly #wire: Wire<T>;
  readonly #runner: CallRunner;
  readonly #callOptions: CallOptionsHook | undefined;
  readonly #name: string;
  readonly #awaitVerification: AwaitVerification | undefined;
  readonly #respond: ErrorResponder;
  /** The requests whose answer the client waits for, by request id (live calls only: the wire drops the rest). */
  readonly #waiting = new Map<RequestId, Waiting>();
  /** The progress tokens added here to requests whose client gave none, while their call is pending. */
  readonly #ownTokens = new Set<string | number>();
  #closed = false;
  /** Answers that wait for their call's verification (`awaitVerification`): the client's `onclose` waits for them. */
  readonly #verifying = new Set<Promise<void>>();

  constructor(adapter: CancellationAdapter<T>, init: MessageTransportInit) {
    const { defaults } = init;
    this.#callOptions = init.callOptions;
    this.#name = init.name ?? "MessageTransport";
    this.#awaitVerification = init.awaitVerification;
    this.#respond = init.respond ?? libraryErrorResponse;
    // Nothing above waits on its own: this transport answers from the call's outcome.
    // A task the client made is the client's to follow: its progress reaches it for the task's
    // life, under a token the client gave (one added here, for the idle timeout's reset, is not the client's).
    const wire = openWire(adapter, defaults, { releaseWait: () => true, keepTaskTokens: (token) => !this.#ownTokens.has(token) });
    this.#wire = wire;
    this.#runner = new CallRunner({ defaults, client: this, wire: () => wire, rejected: this.#rejected });
    const down: TransportLike = wire.transport;
    down.onmessage = this.#onmessage as TransportLike["onmessage"];
    down.onclose = this.#onclose;
    down.onerror = (error: Error) => this.onerror?.(error);
  }

  /** The transport underneath (the adapter's), as the caller gave it. */
  get underlying(): T {
    return this.#wire.underlying;
  }

  start(): Promise<void> {
    this.#closed = false;
    return this.#wire.transport.start();
  }

  /**
   * Closes the connection: every pending call settles `connection-closed` (its cancel sent by the
   * adapter's mechanism) and its client gets the library's answer; one that waits for its
   * verification (`awaitVerification`) is answered with the verified outcome before this resolves,
   * each bounded by its read's own limits (`verifyTimeoutMs`, `verifyWindowMs`). A client whose
   * own `close()` rejects what is left once the transport's resolved (the AI SDK's: an outside
   * tester's, both callers got a bare "Connection closed" while the verifications ran on) so
   * hands over those answers first.
   */
  async close(): Promise<void> {
    await this.#wire.transport.close();
    // The settles' answers are queued (a microtask each): let them in, then wait for the verified ones.
    await Promise.resolve();
    while (this.#verifying.size > 0) await Promise.all([...this.#verifying]);
  }

  setProtocolVersion(version: string): void {
    (this.#wire.transport as { setProtocolVersion?: (version: string) => void }).setProtocolVersion?.(version);
  }

  /** Records a request cancelled before it was ever handed to this transport (see `CallRunner.recordUnsent`). @internal */
  recordUnsent(method: string, params: Record<string, unknown>, trigger: CancelTrigger, reason: string, startedAt: number): void {
    this.#runner.recordUnsent(method, params, trigger, reason, startedAt);
  }

  /** The run records of every request but `initialize`, oldest first (at most `maxRecords`). */
  records(): RunRecord[] {
    return this.#runner.records();
  }

  /** Requests still pending on the wire (0 when idle). */
  get pendingCount(): number {
    return this.#wire.pendingCount;
  }

  /** Settled request ids remembered to drop late messages (at most `maxTombstones`). */
  get tombstoneCount(): number {
    return this.#wire.tombstoneCount;
  }

  /**
   * Sends a message. A request (not `initialize`) runs as a call: the promise resolves once it
   * is handed to the transport; its answer comes through `onmessage`: the server's response, or
   * a JSON-RPC error response from `respond` when the library settled it. A send the transport
   * refuses settles the call `connection-closed` (never sent) and is answered the same way.
   * @throws {InvalidOptionError} `callOptions` returned an invalid option (nothing was sent).
   */
  send(message: JsonRpcMessage, options?: MessageSendOptions): Promise<void> {
    const sendOptions = options?.relatedRequestId === undefined ? undefined : { relatedRequestId: options.relatedRequestId };
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (typeof method !== "string" || (typeof id !== "string" && typeof id !== "number") || method === "initialize") {
      // Notifications, answers to the server's requests, and initialize (never cancelled, rule 39).
      return this.#forward(message, sendOptions);
    }
    try {
      const params = ((message as { params?: unknown }).params ?? {}) as Record<string, unknown> & { _meta?: Record<string, unknown> };
      const hooked = this.#callOptions?.(method, params);
      const signal = options?.signal;
      let callOptions: CallOptions | undefined;
      let wait: AwaitVerification | undefined;
      if (hooked === undefined) {
        // Most requests (no option of their own): nothing to copy or check.
        callOptions = signal === undefined ? undefined : { signal };
        wait = method === "tools/call" ? this.#awaitVerification : undefined;
      } else {
        // An invalid awaitVerification refuses the call as any invalid option from the hook does.
        const { options: perCall, awaitVerification } = splitAwaitVerification(hooked);
        wait = method === "tools/call" ? (awaitVerification ?? this.#awaitVerification) : undefined;
        callOptions = signal === undefined ? perCall : { ...perCall, signal };
      }
      let handed: Promise<void> = Promise.resolve();
      const optionsFrom = hooked === undefined ? undefined : `${this.#name} callOptions(${JSON.stringify(method)}, params)`;
      const waiting: Waiting = { id, call: undefined, signal, wait, byClient: false };
      const request = { method, name: nameOf(params), params, options: callOptions, optionsFrom, owner: waiting, promise: false } as const;
      this.#runner.start(request, (marked, sdkOptions, call) => {
        // Progress resets the idle timeout only for a request that carries a token: one is added
        // when the options want it (the wire keeps its progress from the client).
        const meta =
          sdkOptions.onprogress !== undefined && params._meta?.progressToken === undefined
            ? { _meta: { ...params._meta, progressToken: `mcp-cancellable-${String(marked[CALL_MARKER as never])}` } }
            : undefined;
        if (meta !== undefined) {
          waiting.ownToken = meta._meta.progressToken;
          this.#ownTokens.add(waiting.ownToken);
        }
        waiting.call = call;
        this.#waiting.set(id, waiting);
        handed = this.#forward({ ...message, params: meta === undefined ? marked : { ...marked, ...meta } }, sendOptions).catch(
          (error: unknown) => {
            // The server answered its POST with an HTTP error: the request fails with the
            // transport's error (the record has the status), and the client's send rejects
            // with it, as it would without the library. Else the wire settled the call from
            // its facts (connection-closed), and the client is answered with that.
            if (this.#wire.sendFailed(id, error) !== "answered") return;
            waiting.call?.fail(error);
            throw error;
          },
        );
        return undefined;
      });
      return handed;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Cancels a request in progress as an abort of its `signal` would: the adapter's cancel goes
   * to the server (the request's own mechanism: rules 6 and 31 on stdio, the stream's close on HTTP), the
   * record says `cancelled (aborted)` with `reason` (a string, as an abort's reason), and no
   * response is delivered for it (the client cancelled it itself). For an entry point that
   * tracks its requests by id (the proxy): no `AbortController` per request.
   * Returns the call it settled (its `record` built when read), or `undefined` when no request
   * with that id is in progress (answered, settled, or `initialize`).
   * @internal
   */
  cancel(id: RequestId, reason: string): { readonly record: RunRecord | null } | undefined {
    const waiting = this.#waiting.get(id);
    const call = waiting?.call;
    if (waiting === undefined || call === undefined || call.settled) return undefined;
    waiting.byClient = true;
    call.cancel("aborted", reason);
    return call;
  }

  /**
   * A call was rejected (the runner's `rejected` hook, after its settle): its entry goes, and
   * the client is answered in a microtask, as a promise handler would (unless its own signal
   * fired, or `cancel` ended it: an abort or a framework's timeout, a TimeoutError, that the
   * client rejected itself and waits for no answer on).
   */
  readonly #rejected = (call: CancellableCall, error: unknown): void => {
    const waiting = call.owner as Waiting;
    if (waiting.ownToken !== undefined) this.#ownTokens.delete(waiting.ownToken);
    if (this.#waiting.get(waiting.id) === waiting) this.#waiting.delete(waiting.id);
    if (waiting.signal?.aborted === true || waiting.byClient) return;
    queueMicrotask(() => this.#settled(waiting.id, error, waiting.wait, waiting.signal));
  };

  #forward(message: unknown, options: unknown): Promise<void> {
    return (this.#wire.transport.send as (message: unknown, options?: unknown) => Promise<void>)(message, options);
  }

  /**
   * A call ended without the server's answer reaching the client: answer it (unless the
   * connection closed: the client's onclose ends it).
   */
  #settled(id: RequestId, error: unknown, wait: AwaitVerification | undefined, signal: AbortSignal | undefined): void {
    if (this.#closed) return;
    // The server's own error reached the client as its message already: only the library's are answered.
    if (!isLibraryError(error)) return;
    const response = this.#respond(error);
    if (response === undefined) return;
    if (wait === undefined || wait === false) {
      this.#deliver({ jsonrpc: "2.0", id, error: response });
      return;
    }
    // The client still waits for this answer (its own signal did not fire: that has no response):
    // once verify is done, a tool result that says what it found.
    const answered: Promise<void> = awaitVerifiedText(error, wait, signal)
      .catch(() => undefined)
      .then((text) => {
        this.#verifying.delete(answered);
        // Closed, or the client's own signal fired while the verification was awaited: it rejected
        // its request itself and waits for no answer (a caller's abort is never waited for).
        if (this.#closed || signal?.aborted === true) return;
        this.#deliver(
          text === undefined
            ? { jsonrpc: "2.0", id, error: response }
            : { jsonrpc: "2.0", id, result: { content: [{ type: "text", text }], isError: true } },
        );
      });
    this.#verifying.add(answered);
  }

  #deliver(message: JsonRpcMessage, local = true): void {
    if (local) localAnswers.add(message);
    try {
      this.onmessage?.(message);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(textOf(error)));
    }
  }

  readonly #onmessage = (message: Message): void => {
    if (
      typeof message === "object" &&
      message !== null &&
      message.method === undefined &&
      message.id !== undefined &&
      message.id !== null
    ) {
      const waiting = this.#waiting.get(message.id);
      const call = waiting?.call;
      if (call !== undefined) {
        // A malformed answer (both result and error, say): the wire reported it and left the call
        // its timers, as the SDK leaves its request; the client gets nothing it could not use
        // (an SDK client refuses it and waits out its own timeout): the call ends by its limits,
        // answered -32001 and cancelled upstream (an outside tester's).
        if (!isPlainResponse(message) && !responseSchema.safeParse(message).success) return;
        // The server's answer to a live call (the wire dropped any for a settled one): the call
        // settles with it, and the client gets the message as it came.
        this.#waiting.delete(message.id);
        if (waiting!.ownToken !== undefined) this.#ownTokens.delete(waiting!.ownToken);
        if ("error" in message) call.fail(message.error);
        else call.succeed(message.result);
      }
    }
    this.#deliver(message as JsonRpcMessage, false);
  };

  readonly #onclose = (): void => {
    // The wire has settled every pending call `connection-closed` already; their answers are
    // queued before this, so the client gets each request's documented error (with its record)
    // before its own close handler rejects whatever is left. An answer that waits for its call's
    // verification (`awaitVerification`: a call the connection's end cancelled, or a limit just
    // before) is waited for too, each bounded by its read's own limits (an outside tester's: the
    // AI SDK's close handler rejected the call with "Connection closed" first, and the model
    // read less than without `awaitVerification`).
    queueMicrotask(() => {
      const closed = (): void => {
        this.#closed = true;
        this.onclose?.();
      };
      if (this.#verifying.size === 0) closed();
      else void Promise.all([...this.#verifying]).then(closed);
    });
  };
}
