// `mcp-cancellable/ai-sdk`: a custom transport for the Vercel AI SDK's MCP client
// (`createMCPClient({ transport })` from `@ai-sdk/mcp`), built on the library's wire. Nothing of
// the AI SDK is imported: the transport has the shape its `MCPTransport` interface describes.
import { nextCallId, nextConnectionId } from "../../client/ids.js";
import { toAdapter } from "../../client/with-cancellation.js";
import { CancellableCall } from "../../core/cancellable-call.js";
import type { CallHooks, CallIds, RequestId } from "../../core/cancellable-call.js";
import type { RunRecord } from "../../core/record.js";
import { isCallTimeoutError, isConnectionClosedError } from "../../errors/guards.js";
import { InvalidOptionError } from "../../errors/InvalidOptionError.js";
import type { McpCancellableError } from "../../errors/McpCancellableError.js";
import { MemoryLedger } from "../../ledger/memory.js";
import type { CancellationAdapter, TransportLike } from "../../adapters/types.js";
import {
  DEFAULT_MAX_RECORDS,
  DEFAULT_MAX_TOMBSTONES,
  parseCancellationOptions,
  resolveCallOptions,
} from "../../types/options.js";
import type { CallOptions, CancellationOptions, Timers } from "../../types/options.js";
import { CALL_MARKER, type Message } from "../../wire/messages.js";
import { Wire } from "../../wire/wire.js";

/**
 * The JSON-RPC error code of the local error response that tells the AI SDK a request timed out
 * (idle or maximum total timeout). SDK-local, the same as the MCP SDK's `RequestTimeout`; it
 * never goes on the wire (rule 3: the spec assigns no code to a local timeout).
 */
export const AI_SDK_TIMEOUT_CODE = -32001;

/** The code of the local error response for a request whose connection or stream was lost (the MCP SDK's `ConnectionClosed`). */
export const AI_SDK_CONNECTION_CLOSED_CODE = -32000;

/** The AI SDK's `MCPTransportSendOptions`: the request's signal, and the request a message answers. */
export interface AiSdkSendOptions {
  signal?: AbortSignal;
  relatedRequestId?: string | number;
}

/** A JSON-RPC message in the loose shape the AI SDK and the MCP SDKs share. */
export type JsonRpcMessage = { jsonrpc: "2.0"; [key: string]: unknown };

/**
 * The transport to hand to `createMCPClient({ transport })`: the AI SDK's `MCPTransport` shape
 * (`start`, `send(message, { signal })`, `close`, `onmessage`, `onclose`, `onerror`,
 * `setProtocolVersion`, which reaches the wrapped transport), plus the run records.
 */
export interface CancellableAiSdkTransport {
  start(): Promise<void>;
  send(message: JsonRpcMessage, options?: AiSdkSendOptions): Promise<void>;
  close(): Promise<void>;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JsonRpcMessage) => void;
  setProtocolVersion(version: string): void;
  /** The run records of every request but `initialize`, oldest first (at most `maxRecords`). */
  records(): RunRecord[];
  /** Requests still pending on the wire (0 when idle). */
  readonly pendingCount: number;
  /** Settled request ids remembered to drop late messages (at most `maxTombstones`). */
  readonly tombstoneCount: number;
}

/** Options of `cancellableTransport`: the client-wide defaults (all durations in ms) plus per-request options. */
export interface CancellableTransportOptions extends CancellationOptions {
  /**
   * Per-request options by method and params (for a tool: `params.name`), merged over the
   * client-wide defaults: a longer idle timeout for one slow tool, a `verify` read. The AI
   * SDK's signal for the request is always used.
   */
  callOptions?: (method: string, params: Record<string, unknown>) => Omit<CallOptions, "signal"> | undefined;
}

const systemTimers: Timers = {
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
};

/**
 * A transport for the Vercel AI SDK's MCP client (`createMCPClient({ transport })`, `@ai-sdk/mcp`
 * 1.x and 2.x) that gives every request the library's behaviour, although the AI SDK sets no
 * timeout and never sends a cancel:
 *
 * - an idle timeout and a maximum total timeout per request (defaults 60_000 ms and
 *   max(600_000, timeoutMs); per request through `callOptions`); on expiry the request is
 *   cancelled on the wire and the AI SDK's request rejects with an `MCPClientError` whose
 *   `code` is -32001 and whose `data` is `{ code: "REQUEST_TIMEOUT" | "MAX_TOTAL_TIMEOUT", record }`;
 * - the `signal` the AI SDK passes to `send` (a tool's `abortSignal`) cancels that request by
 *   the transport's mechanism: `notifications/cancelled` on stdio, closing the request's stream
 *   on Streamable HTTP (the notification POSTed first on a 2025-era connection); the AI SDK
 *   rejects the call itself ("Request was aborted", `cause` = the signal's reason);
 * - a response, error or progress for a request already settled never reaches the AI SDK (which
 *   would throw "unknown message ID"); it is counted on that request's run record;
 * - `initialize` is never cancelled (rule 39) and gets no record; every other request gets one.
 *
 * @param transport a cancellation adapter over an MCP SDK transport (`stdioCancellation(...)`,
 *   `streamableHttpCancellation(...)`), or a plain stdio-like transport (the AI SDK's own
 *   `Experimental_StdioMCPTransport` included), which gets `notifications/cancelled`.
 * @param options client-wide defaults (all durations in ms), `callOptions`, and where records go.
 * @throws {InvalidOptionError} a bad transport or option, naming it.
 */
export function cancellableTransport<T extends TransportLike>(
  transport: CancellationAdapter<T> | T,
  options: CancellableTransportOptions = {},
): CancellableAiSdkTransport {
  if (typeof options !== "object" || options === null) {
    throw new InvalidOptionError("options", "cancellableTransport: options must be an object");
  }
  const { callOptions, ...rest } = options;
  if (callOptions !== undefined && typeof callOptions !== "function") {
    throw new InvalidOptionError("callOptions", "cancellableTransport: callOptions must be a function");
  }
  const defaults = parseCancellationOptions(rest, "cancellableTransport options");
  return new AiSdkTransport(toAdapter(transport), defaults, callOptions);
}


class AiSdkTransport<T extends TransportLike> implements CancellableAiSdkTransport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JsonRpcMessage) => void;

  readonly #wire: Wire<T>;
  readonly #ids: Omit<CallIds, "callId">;
  readonly #down: T;
  readonly #defaults: CancellationOptions;
  readonly #callOptions: CancellableTransportOptions["callOptions"];
  readonly #ledger: MemoryLedger;
  /** The requests the AI SDK is waiting for, by request id. */
  readonly #calls = new Map<RequestId, CancellableCall<unknown>>();
  #closed = false;

  constructor(adapter: CancellationAdapter<T>, defaults: CancellationOptions, callOptions: CancellableTransportOptions["callOptions"]) {
    this.#defaults = defaults;
    this.#callOptions = callOptions;
    this.#ledger = new MemoryLedger(defaults.maxRecords ?? DEFAULT_MAX_RECORDS);
    this.#wire = new Wire(
      adapter,
      defaults.maxTombstones ?? DEFAULT_MAX_TOMBSTONES,
      defaults.onAnomaly,
      false,
      false,
      defaults.forwardAbortReason ?? false,
    );
    const inner = adapter.transport as { sessionId?: unknown };
    this.#ids = { connectionId: nextConnectionId(), sessionId: () => (typeof inner.sessionId === "string" ? inner.sessionId : undefined) };
    const down = this.#wire.transport as unknown as Record<string, unknown>;
    down.onmessage = this.#onmessage;
    down.onclose = this.#onclose;
    down.onerror = (error: Error) => this.onerror?.(error);
    this.#down = this.#wire.transport;
  }

  start(): Promise<void> {
    this.#closed = false;
    return this.#down.start();
  }

  close(): Promise<void> {
    return this.#down.close();
  }

  setProtocolVersion(version: string): void {
    (this.#down as { setProtocolVersion?: (version: string) => void }).setProtocolVersion?.(version);
  }

  records(): RunRecord[] {
    return this.#ledger.list();
  }

  get pendingCount(): number {
    return this.#wire.pendingCount;
  }

  get tombstoneCount(): number {
    return this.#wire.tombstoneCount;
  }

  send(message: JsonRpcMessage, options?: AiSdkSendOptions): Promise<void> {
    const sendOptions = options?.relatedRequestId === undefined ? undefined : { relatedRequestId: options.relatedRequestId };
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (typeof method !== "string" || (typeof id !== "string" && typeof id !== "number") || method === "initialize") {
      // Notifications, answers to the server's requests, and initialize (never cancelled, rule 39).
      return this.#forward(message, sendOptions);
    }
    try {
      return this.#request(message as unknown as Message & { method: string; id: RequestId }, options?.signal, sendOptions);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #request(message: Message & { method: string; id: RequestId }, signal: AbortSignal | undefined, sendOptions: unknown): Promise<void> {
    const params = (message.params ?? {}) as Record<string, unknown> & { _meta?: Record<string, unknown> };
    const resolved = resolveCallOptions(this.#defaults, {
      ...this.#callOptions?.(message.method, params),
      ...(signal === undefined ? {} : { signal }),
    });
    const key = nextCallId();
    const id = message.id;
    const hooks: CallHooks = {
      cancel: (call, reason) => this.#wire.cancel(call, reason),
      settled: (call) => {
        this.#wire.settled(call, key);
        if (this.#calls.get(id) === call) this.#calls.delete(id);
      },
      record: recorder(this.#ledger, key, this.#defaults.onRecord),
    };
    const name = typeof params.name === "string" ? params.name : typeof params.uri === "string" ? params.uri : null;
    const call = new CancellableCall<unknown>({
      method: message.method,
      name,
      options: resolved,
      hooks,
      clock: this.#defaults.clock ?? monotonic,
      timers: this.#defaults.timers ?? systemTimers,
      ids: { callId: key, ...this.#ids },
    });
    call.start();
    if (!this.#wire.open) call.cancel("connection-closed");
    // Nothing was sent (an aborted signal, a closed transport): the AI SDK's send rejects with our error.
    if (call.settled) return call.promise.then(ignore);
    this.#calls.set(id, call);
    this.#wire.register(call, key);
    call.promise.then(ignore, (error: unknown) => this.#rejected(id, error));
    // Progress resets the idle timeout only for a request that carries a token; the AI SDK
    // asks for none, so one is added when the options want it (the wire keeps it from the AI SDK).
    const meta = resolved.resetTimeoutOnProgress && params._meta?.progressToken === undefined
      ? { _meta: { ...params._meta, progressToken: `mcp-cancellable-${key}` } }
      : {};
    const marked = { ...message, params: { ...params, ...meta, [CALL_MARKER]: key } };
    const sending = this.#forward(marked, sendOptions);
    sending.catch((error: unknown) => call.fail(error));
    return sending;
  }

  #forward(message: unknown, options: unknown): Promise<void> {
    return (this.#down.send as (message: unknown, options?: unknown) => Promise<void>)(message, options);
  }

  /**
   * The call settled by one of the library's triggers. A timeout or a lost stream is told to
   * the AI SDK as a local error response (it would wait forever otherwise); an abort is not: the
   * AI SDK rejected its own request when its signal fired.
   */
  #rejected(id: RequestId, error: unknown): void {
    if (this.#closed) return; // the AI SDK's onclose already rejected everything
    let code: number;
    if (isCallTimeoutError(error)) code = AI_SDK_TIMEOUT_CODE;
    else if (isConnectionClosedError(error)) code = AI_SDK_CONNECTION_CLOSED_CODE;
    else return;
    const failure = error as McpCancellableError;
    this.#deliver({
      jsonrpc: "2.0",
      id,
      error: { code, message: failure.message, data: { code: failure.code, record: failure.record } },
    });
  }

  #deliver(message: JsonRpcMessage): void {
    try {
      this.onmessage?.(message);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  readonly #onmessage = (message: Message): void => {
    if (typeof message === "object" && message !== null && message.method === undefined) {
      const id = message.id;
      const call = id === undefined || id === null ? undefined : this.#calls.get(id);
      if (call !== undefined) {
        // Settled already: this is the wire's local release of a cancelled request, not the
        // server's answer; the AI SDK hears about it from #rejected (or from its own signal).
        if (call.settled) return;
        if ("error" in message) call.fail(message.error);
        else call.succeed(message.result);
      }
    }
    this.#deliver(message as JsonRpcMessage);
  };

  readonly #onclose = (): void => {
    this.#closed = true;
    this.#calls.clear();
    this.onclose?.();
  };
}

const monotonic = (): number => performance.now();

function ignore(): void {}

/** A record callback made outside the call's scope (tombstones keep it; see withCancellation). */
function recorder(ledger: MemoryLedger, key: number, onRecord: ((record: RunRecord) => void) | undefined) {
  return (record: RunRecord): void => {
    ledger.put(key, record);
    if (onRecord === undefined) return;
    try {
      onRecord(record);
    } catch {
      // A throwing log hook must not change how a call settles.
    }
  };
}
