import { z } from "zod";
import { CancellableCall } from "../core/cancellable-call.js";
import type { CallHooks } from "../core/cancellable-call.js";
import { DeadlineQueue } from "../core/deadlines.js";
import type { RunRecord } from "../core/record.js";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import { notificationCancellation } from "../adapters/notification.js";
import type { CancellationAdapter, TransportLike } from "../adapters/types.js";
import { MemoryLedger } from "../ledger/memory.js";
import {
  DEFAULT_MAX_RECORDS,
  DEFAULT_MAX_TOMBSTONES,
  MAX_TIMER_DELAY_MS,
  parseCancellationOptions,
  resolveCallOptions,
} from "../types/options.js";
import type { CallOptions, CancellationOptions, Timers } from "../types/options.js";
import { CALL_MARKER } from "../wire/messages.js";
import { Wire } from "../wire/wire.js";
import { sdkWaitDropper } from "./sdk-wait.js";

/** The part of an SDK `Client` (v1 `@modelcontextprotocol/sdk` or v2 `@modelcontextprotocol/client`) the facade drives. */
export interface ClientLike {
  callTool(params: never, ...rest: never[]): Promise<unknown>;
  request(request: never, ...rest: never[]): Promise<unknown>;
}

/** `tools/call` params: the tool's name and arguments (and optional `_meta`). */
export interface CallToolParams {
  name: string;
  arguments?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A JSON-RPC request for `request()`: a method and its params. */
export interface RequestParams {
  method: string;
  params?: { _meta?: Record<string, unknown>; [key: string]: unknown };
}

/** A result schema for `request()` (a zod schema; the v1 SDK validates the result with it). */
export interface ResultSchema<R> {
  parse(value: unknown): R;
}

/** Options of `request()`: the call options plus, for the v1 SDK, the result schema. */
export interface RequestOptions<R> extends CallOptions {
  /**
   * The schema the SDK validates the result with. v1: default any object. v2: needed only for
   * methods outside the spec.
   */
  resultSchema?: ResultSchema<R>;
}

/** The tool result the SDK returns (`CallToolResult`, loosely typed to fit both SDK lines). */
export interface ToolResult {
  content?: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
  [key: string]: unknown;
}

/** What `withCancellation` returns: the decorated transport and the calls that go through it. */
export interface CancellableClient<T extends TransportLike> {
  /** The decorated transport: pass it to `client.connect()`. */
  readonly transport: T;
  /**
   * Calls a tool with per-call timeouts and cancellation.
   * @returns the SDK's `CallToolResult`.
   * @throws {CallTimeoutError} idle (`REQUEST_TIMEOUT`) or maximum total (`MAX_TOTAL_TIMEOUT`) timeout.
   * @throws {CallCancelledError} the caller's signal aborted (`CANCELLED`).
   * @throws {ConnectionClosedError} the transport closed (`CONNECTION_CLOSED`).
   * @throws {InvalidOptionError} an option is invalid (nothing was sent).
   * A JSON-RPC error from the server is the SDK's own error, untouched.
   */
  callTool(params: CallToolParams, options?: CallOptions): Promise<ToolResult>;
  /**
   * Sends any request (`resources/read`, `prompts/get`, ...) with per-call timeouts and
   * cancellation; errors as `callTool`. `initialize` is refused: it must never be cancelled
   * (rule 39), so it goes through `client.connect()`.
   */
  request<R = Record<string, unknown>>(request: RequestParams, options?: RequestOptions<R>): Promise<R>;
  /** The run records kept in memory, oldest first (at most `maxRecords`). */
  records(): RunRecord[];
  /** Calls still pending on the wire (0 when idle: nothing is held for settled calls). */
  readonly pendingCount: number;
  /** Settled request ids remembered to drop late messages (at most `maxTombstones`). */
  readonly tombstoneCount: number;
}

const anyResult = z.looseObject({});

/** Never 0 or Infinity: Node fires those at once. The SDK's own timer must never decide a call's fate. */
const SDK_TIMEOUT = MAX_TIMER_DELAY_MS;

const systemTimers: Timers = {
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
};

const monotonic = (): number => performance.now();

let callNumber = 0;

/**
 * Wraps an MCP SDK client (v1 `@modelcontextprotocol/sdk` `Client`, or v2
 * `@modelcontextprotocol/client` `Client`) and its transport so every call gets an idle
 * timeout, a maximum total timeout, the caller's `AbortSignal`, a cancel sent with the
 * transport's own mechanism, late messages discarded, and a run record.
 *
 * @param client the SDK client; connect it with the returned `transport`.
 * @param transport a cancellation adapter (`stdioCancellation(...)`, `streamableHttpCancellation(...)`),
 *   or a plain transport, which gets `notifications/cancelled` (rule 6: stdio, in-memory).
 * @param options client-wide defaults (all durations in ms) and where records go.
 * @throws {InvalidOptionError} an option is invalid, naming it.
 */
export function withCancellation<T extends TransportLike>(
  client: ClientLike,
  transport: CancellationAdapter<T> | T,
  options?: CancellationOptions,
): CancellableClient<T> {
  if (typeof client !== "object" || client === null || typeof client.callTool !== "function") {
    throw new InvalidOptionError("client", "withCancellation: client must be an MCP SDK Client");
  }
  const adapter = toAdapter(transport);
  const defaults = parseCancellationOptions(options);
  const ledger = new MemoryLedger(defaults.maxRecords ?? DEFAULT_MAX_RECORDS);
  // v2 clients take (params, options); v1 clients take (params, resultSchema, options).
  const v2 = typeof (client as { getProtocolEra?: unknown }).getProtocolEra === "function";
  const wire = new Wire(adapter, defaults.maxTombstones ?? DEFAULT_MAX_TOMBSTONES, defaults.onAnomaly, !v2, sdkWaitDropper(client));
  const clock = defaults.clock ?? monotonic;
  const timers = defaults.timers ?? systemTimers;
  // One timer for all of this client's pending calls (the nearest deadline), not one per call.
  const deadlines = new DeadlineQueue(clock, timers);
  const onRecord = defaults.onRecord;
  const record = (key: number, next: RunRecord): void => {
    ledger.put(key, next);
    if (onRecord !== undefined) {
      try {
        onRecord(next);
      } catch {
        // A throwing log hook must not change how a call settles.
      }
    }
  };
  // A call made without options gets these, resolved once (the options are never mutated).
  const plainOptions = Object.freeze(resolveCallOptions(defaults, undefined));
  // The wire puts the cancel on the wire and tells the SDK locally that the request is over.
  const cancelHook: CallHooks["cancel"] = (call, reason) => wire.cancel(call, reason);
  const recorder =
    (key: number) =>
    (next: RunRecord): void =>
      record(key, next);
  const sdk = client as unknown as {
    callTool(...args: unknown[]): Promise<unknown>;
    request(...args: unknown[]): Promise<unknown>;
  };

  function run<R>(
    method: string,
    name: string | null,
    params: Record<string, unknown> & { _meta?: Record<string, unknown> },
    options: CallOptions | undefined,
    invoke: (params: Record<string, unknown>, sdkOptions: Record<string, unknown>) => Promise<unknown>,
  ): Promise<R> {
    const resolved = options === undefined ? plainOptions : resolveCallOptions(defaults, options);
    const key = ++callNumber;
    const hooks: CallHooks = {
      cancel: cancelHook,
      settled: (call) => wire.settled(call, key),
      // Made outside this scope: a settled call's record outlives the call (tombstones keep it),
      // and a closure made here would keep this whole scope (params, call, controller) alive.
      record: recorder(key),
    };
    const call = new CancellableCall<R>({
      method,
      name,
      options: resolved,
      hooks,
      clock,
      timers,
      deadlines,
    });
    call.start();
    // Not connected yet (or not through mcp.transport), or the connection is gone (the server
    // exited, the transport closed): say so, send nothing.
    if (!wire.open) call.cancel("connection-closed");
    if (call.settled) return call.promise; // nothing was sent: aborted signal, or closed connection
    wire.register(call, key);
    // No signal for the SDK: an AbortController per call would cost more than the rest of the
    // wrapper together (the SDK adds a listener to it), and the wire ends the SDK's wait itself.
    const sdkOptions: Record<string, unknown> = { timeout: SDK_TIMEOUT, resetTimeoutOnProgress: false };
    // A progress token is requested whenever progress can matter (case C05). The wire hands
    // progress to the call (and its onprogress) itself; the SDK's handler only gets the token sent.
    if (resolved.onprogress !== undefined || resolved.resetTimeoutOnProgress) sdkOptions.onprogress = ignore;
    let sent: Promise<unknown>;
    try {
      sent = invoke({ ...params, [CALL_MARKER]: key }, sdkOptions);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      (value) => call.succeed(value as R),
      (error: unknown) => call.fail(error),
    );
    return call.promise;
  }

  return {
    transport: wire.transport,
    callTool(params, callOptions) {
      if (typeof params !== "object" || params === null || typeof params.name !== "string") {
        return Promise.reject(new InvalidOptionError("params.name", "callTool: params.name must be a string"));
      }
      try {
        return run<ToolResult>("tools/call", params.name, params, callOptions, (marked, sdkOptions) =>
          v2 ? sdk.callTool(marked, sdkOptions) : sdk.callTool(marked, undefined, sdkOptions),
        );
      } catch (error) {
        return Promise.reject(error);
      }
    },
    request<R>(request: RequestParams, requestOptions?: RequestOptions<R>) {
      if (typeof request !== "object" || request === null || typeof request.method !== "string") {
        return Promise.reject(new InvalidOptionError("request.method", "request: request.method must be a string"));
      }
      if (request.method === "initialize") {
        return Promise.reject(
          new InvalidOptionError("request.method", "request: initialize must not be cancelled (rule 39); use client.connect()"),
        );
      }
      try {
        const { resultSchema, ...callOptions } = requestOptions ?? {};
        const params = request.params ?? {};
        const name = typeof params.name === "string" ? params.name : typeof params.uri === "string" ? params.uri : null;
        return run<R>(request.method, name, params, callOptions, (marked, sdkOptions) =>
          // v2 takes a result schema only for methods outside the spec; v1 always needs one.
          v2
            ? resultSchema === undefined
              ? sdk.request({ method: request.method, params: marked }, sdkOptions)
              : sdk.request({ method: request.method, params: marked }, resultSchema, sdkOptions)
            : sdk.request({ method: request.method, params: marked }, resultSchema ?? anyResult, sdkOptions),
        );
      } catch (error) {
        return Promise.reject(error);
      }
    },
    records: () => ledger.list(),
    get pendingCount() {
      return wire.pendingCount;
    },
    get tombstoneCount() {
      return wire.tombstoneCount;
    },
  };
}

function ignore(): void {}

function toAdapter<T extends TransportLike>(transport: CancellationAdapter<T> | T): CancellationAdapter<T> {
  if (typeof transport !== "object" || transport === null) {
    throw new InvalidOptionError("transport", "withCancellation: transport must be an MCP transport or a cancellation adapter");
  }
  if ("cancel" in transport && "transport" in transport && typeof transport.cancel === "function") {
    return transport;
  }
  if (typeof (transport as T).send !== "function" || typeof (transport as T).start !== "function") {
    throw new InvalidOptionError("transport", "withCancellation: transport must be an MCP transport or a cancellation adapter");
  }
  return notificationCancellation(transport as T);
}
