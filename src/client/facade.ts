import { z } from "zod";
import { CancellableCall } from "../core/cancellable-call.js";
import type { CallHooks } from "../core/cancellable-call.js";
import { DeadlineQueue } from "../core/deadlines.js";
import type { RunRecord } from "../types/record.js";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import type { TransportLike } from "../adapters/types.js";
import { MemoryLedger } from "../ledger/memory.js";
import { DEFAULT_MAX_RECORDS, MAX_TIMER_DELAY_MS, received, resolveCallOptions } from "../types/options.js";
import type { CallObservation } from "../types/options.js";
import { nextCallId, nextConnectionId } from "./ids.js";
import { observe, observeRecord, observeResult, withMeta } from "./observe.js";
import { TaskDriver, resolveTaskOptions } from "./tasks.js";
import type { ResolvedTaskOptions, TaskOptions } from "./tasks.js";
import type { CallOptions, CancellationOptions, Timers } from "../types/options.js";
import { CALL_MARKER } from "../wire/messages.js";
import type { Wire } from "../wire/wire.js";

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
export interface RequestParams<M extends string = string> {
  method: M;
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

/** The awaited result of the client's method `K`, or `Fallback` when the client has no such typed method. */
type MethodResult<C, K extends string, Fallback> = C extends { [key in K]: (...args: never[]) => Promise<infer R> }
  ? unknown extends R
    ? Fallback
    : R
  : Fallback;

/**
 * The `tools/call` result type of client `C`: the SDK's own `CallToolResult`, from whichever SDK
 * line `C` is (v1 `@modelcontextprotocol/sdk` or v2 `@modelcontextprotocol/client`), read from
 * the type of its `callTool`; `ToolResult` for a client typed loosely. The v1 compatibility
 * shape (`{ toolResult }`, only returned when asked for with its schema) is left out.
 */
export type CallToolResultOf<C> = Exclude<MethodResult<C, "callTool", ToolResult>, { toolResult: unknown }>;

/**
 * The result type of `request({ method: M })` on client `C`: the SDK's own result type for the
 * spec methods the SDK clients have a typed method for (`tools/list`, `resources/read`,
 * `prompts/get`, ...), read from that method on `C`; `Record<string, unknown>` otherwise (pass
 * `resultSchema` to type and validate it).
 */
export type RequestResultOf<C, M extends string> = M extends "tools/call"
  ? CallToolResultOf<C>
  : M extends keyof typeof TYPED_METHODS
    ? MethodResult<C, (typeof TYPED_METHODS)[M], Record<string, unknown>>
    : Record<string, unknown>;

/** Spec methods and the SDK client method (v1 and v2 alike) whose return type is that method's result. */
declare const TYPED_METHODS: {
  "tools/list": "listTools";
  "resources/read": "readResource";
  "resources/list": "listResources";
  "resources/templates/list": "listResourceTemplates";
  "prompts/get": "getPrompt";
  "prompts/list": "listPrompts";
  "completion/complete": "complete";
  ping: "ping";
};

/** Options of `callTool`: the call options, plus `task` to run the call as a task. */
export interface ToolCallOptions extends CallOptions {
  /**
   * Runs the call task-augmented (2025-11-25 core tasks: `params.task`; 2026-07-28: the
   * `io.modelcontextprotocol/tasks` extension declared on the request). When the server
   * answers with a `CreateTaskResult`, the library polls the task (`tasks/get`, honouring the
   * server's poll interval) and resolves with the final result; the idle timeout, the maximum
   * total timeout and `signal` apply to the whole task, and a cancel is the request
   * `tasks/cancel` (rules 35, 36). A server that answers at once is answered as usual.
   * `true` takes every default. See docs/tasks.md.
   */
  task?: TaskOptions | true;
}

/**
 * What `withCancellation` and `attachCancellation` return: the transport and the calls that go
 * through the library. `C` is the SDK client's own type (for `sdkClient`).
 */
export interface CancellableClient<T extends TransportLike, C = ClientLike> {
  /**
   * The decorated transport. `withCancellation`: pass it to `client.connect()`.
   * `attachCancellation`: the client's own current transport (`client.transport`), decorated in place.
   */
  readonly transport: T;
  /**
   * Calls a tool with per-call timeouts and cancellation.
   * @returns the SDK's `CallToolResult`, typed as the client's SDK line types it.
   * @throws {CallTimeoutError} idle (`REQUEST_TIMEOUT`) or maximum total (`MAX_TOTAL_TIMEOUT`) timeout.
   * @throws {CallCancelledError} the caller's signal aborted (`CANCELLED`).
   * @throws {ConnectionClosedError} the transport closed (`CONNECTION_CLOSED`).
   * @throws {InvalidOptionError} an option is invalid, or the client is used wrongly (not
   *   connected yet, connected through another transport); nothing was sent.
   * A JSON-RPC error from the server is the SDK's own error, untouched.
   */
  callTool(params: CallToolParams, options?: ToolCallOptions): Promise<CallToolResultOf<C>>;
  /**
   * Sends any request (`resources/read`, `prompts/get`, ...) with per-call timeouts and
   * cancellation; errors as `callTool`. `initialize` is refused: it must never be cancelled
   * (rule 39 in docs/spec-rules.md), so it goes through `client.connect()`.
   * @returns the method's result, typed as the SDK's own result type for the method
   *   (`RequestResultOf`: `ListToolsResult` for `tools/list`, ...), else `Record<string, unknown>`.
   */
  request<M extends string>(request: RequestParams<M>, options?: CallOptions): Promise<RequestResultOf<C, M>>;
  /**
   * The same, typed by `resultSchema` (the v1 SDK validates the result with it), or by an
   * explicit type argument: `request<MyResult>({ method: "x/custom" })`.
   */
  request<R>(request: RequestParams, options?: RequestOptions<R>): Promise<R>;
  /**
   * The SDK client as frameworks take it (LangChain's `loadMcpTools`, Google GenAI's
   * `mcpToTool`): `callTool(params, resultSchema?, options?)` (v1 order; the v2 order
   * `callTool(params, options?)` works too), `request`, `listTools`, `listPrompts`, `getPrompt`,
   * `listResources`, `listResourceTemplates`, `readResource`, `complete` and `ping` go through the
   * library, with the SDK's request options mapped to the call options: `timeout` to `timeoutMs`
   * (the idle timeout, ms), `maxTotalTimeout` to `maxTotalTimeoutMs`, `resetTimeoutOnProgress`,
   * `signal`, `onprogress` as they are; an option left out takes this client's default. Every
   * other member is the SDK client's own. For `attachCancellation` it is the client itself,
   * whose `callTool` and `request` are routed the same way.
   */
  readonly sdkClient: C;
  /** The run records kept in memory, oldest first (at most `maxRecords`). */
  records(): RunRecord[];
  /** Calls still pending on the wire (0 when idle: nothing is held for settled calls). */
  readonly pendingCount: number;
  /** Settled request ids remembered to drop late messages (at most `maxTombstones`). */
  readonly tombstoneCount: number;
}

/** The SDK client's two request methods, called with the SDK's own argument order. */
export interface SdkCalls {
  callTool(...args: unknown[]): Promise<unknown>;
  request(...args: unknown[]): Promise<unknown>;
}

/** The wire a call goes through, chosen when the call is made. */
export type WireChoice =
  /** Send through this wire (it may be closed: the call then settles `connection-closed`, nothing sent). */
  | Wire<TransportLike>
  /** The connection is gone and no wire is open: the call settles `connection-closed`, nothing sent. */
  | null;

/** What the facade needs from its entry point (`withCancellation` or `attachCancellation`). */
export interface FacadeInit {
  readonly sdk: SdkCalls;
  /** The SDK client itself, as the `observer` option sees it. */
  readonly client: object;
  /** v2 clients take `callTool(params, options)`; v1 `callTool(params, resultSchema, options)`. */
  readonly v2: boolean;
  readonly defaults: CancellationOptions;
  /**
   * The wire for the next call. Throws `InvalidOptionError` for a usage mistake (it becomes the
   * call's rejection; nothing is sent).
   */
  wire(): WireChoice;
}

/** The facade plus its call runner, which `attachCancellation` also uses for the client's own methods. */
export interface Facade {
  callTool(params: CallToolParams, options?: ToolCallOptions): Promise<ToolResult>;
  request<R>(request: RequestParams, options?: RequestOptions<R>): Promise<R>;
  records(): RunRecord[];
  run<R>(
    method: string,
    name: string | null,
    params: Record<string, unknown>,
    options: CallOptions | undefined,
    invoke: (params: Record<string, unknown>, sdkOptions: Record<string, unknown>) => Promise<unknown>,
  ): Promise<R>;
}

export const anyResult = z.looseObject({});

/** Never 0 or Infinity: Node fires those at once. The SDK's own timer must never decide a call's fate. */
const SDK_TIMEOUT = MAX_TIMER_DELAY_MS;

const systemTimers: Timers = {
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
};

const monotonic = (): number => performance.now();


/** The MCP session id of the transport under a wire (Streamable HTTP `Mcp-Session-Id`), if any. */
function sessionIdOf(wire: Wire<TransportLike>): () => string | undefined {
  const inner = wire.underlying as { sessionId?: unknown };
  return () => (typeof inner.sessionId === "string" ? inner.sessionId : undefined);
}

/** The cancel hook of a call that has no wire (the connection is gone): nothing goes out. */
const cancelNone: CallHooks["cancel"] = () => "none";

/** Transports (and decorated transports) that already carry the library, so they are never decorated twice. */
export const decorated = new WeakSet<object>();

/**
 * Builds the calls of a `CancellableClient` over one SDK client: every call is a
 * `CancellableCall` registered on the wire the entry point picks when the call is made.
 */
export function createFacade(init: FacadeInit): Facade {
  const { sdk, v2, defaults } = init;
  const ledger = new MemoryLedger(defaults.maxRecords ?? DEFAULT_MAX_RECORDS);
  const clock = defaults.clock ?? monotonic;
  const timers = defaults.timers ?? systemTimers;
  // One timer for all of this client's pending calls (the nearest deadline), not one per call.
  const deadlines = new DeadlineQueue(clock, timers);
  // A call made without options gets these, resolved once (the options are never mutated).
  const plainOptions = Object.freeze(resolveCallOptions(defaults, undefined));
  // One connection id per handle; the session id is read from the wire's transport at each settle.
  const connectionId = nextConnectionId();
  // Per wire, made once (attachCancellation moves to a new wire after a reconnect): the MCP
  // session id reader and the cancel hook, so a call without a task allocates neither.
  let sessionWire: Wire<TransportLike> | null = null;
  let sessionId: () => string | undefined = () => undefined;
  let wireCancel: CallHooks["cancel"] = cancelNone;
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
  const recorder =
    (key: number, observation: CallObservation | undefined) =>
    (next: RunRecord): void => {
      record(key, next);
      if (observation !== undefined) observeRecord(observation, next);
    };

  function run<R>(
    method: string,
    name: string | null,
    params: Record<string, unknown> & { _meta?: Record<string, unknown> },
    options: CallOptions | undefined,
    invoke: (params: Record<string, unknown>, sdkOptions: Record<string, unknown>) => Promise<unknown>,
    taskOptions?: ResolvedTaskOptions,
  ): Promise<R> {
    const resolved = options === undefined ? plainOptions : resolveCallOptions(defaults, options);
    const wire = init.wire(); // throws InvalidOptionError for a usage mistake: nothing is sent
    const key = nextCallId();
    // Before the call starts, so a span covers the whole call, even one cancelled before the send.
    const observation =
      defaults.observer === undefined
        ? undefined
        : observe(defaults.observer, { method, name, params, client: init.client, transport: wire?.underlying, protocolVersion: wire?.protocolVersion });
    if (wire !== null && wire !== sessionWire) {
      sessionWire = wire;
      sessionId = sessionIdOf(wire);
      wireCancel = (call, reason) => wire.cancel(call, reason);
    }
    // A task-augmented call: its cancel is the task driver's (tasks/cancel once the task exists).
    const task = taskOptions === undefined || wire === null ? undefined : new TaskDriver(wire, taskOptions, timers, clock);
    const hooks: CallHooks = {
      // The wire puts the cancel on the wire and tells the SDK locally that the request is over.
      cancel: task !== undefined ? (call, reason) => task.cancel(call, reason) : wire === null ? cancelNone : wireCancel,
      settled:
        task !== undefined
          ? (call) => {
              task.stop();
              wire?.settled(call, key);
            }
          : (call) => wire?.settled(call, key),
      // Made outside this scope: a settled call's record outlives the call (tombstones keep it),
      // and a closure made here would keep this whole scope (params, call, controller) alive.
      record: recorder(key, observation),
    };
    const call = new CancellableCall<R>({
      method,
      name,
      options: resolved,
      hooks,
      clock,
      timers,
      deadlines,
      ids: { callId: key, connectionId, sessionId },
    });
    task?.attach(call);
    call.start();
    // The connection is gone (the server exited, the transport closed): say so, send nothing.
    if (wire === null || !wire.open) call.cancel("connection-closed");
    if (call.settled || wire === null) return call.promise; // nothing was sent: aborted signal, or closed connection
    wire.register(call, key, task);
    // No signal for the SDK: an AbortController per call would cost more than the rest of the
    // wrapper together (the SDK adds a listener to it), and the wire ends the SDK's wait itself.
    const sdkOptions: Record<string, unknown> = { timeout: SDK_TIMEOUT, resetTimeoutOnProgress: false };
    // A progress token is requested whenever progress can matter (case C05). The wire hands
    // progress to the call (and its onprogress) itself; the SDK's handler only gets the token sent.
    if (resolved.onprogress !== undefined || resolved.resetTimeoutOnProgress) sdkOptions.onprogress = ignore;
    let sent: Promise<unknown>;
    try {
      sent = invoke({ ...withMeta(params, observation), [CALL_MARKER]: key }, sdkOptions);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      (value) => {
        if (observation !== undefined && !call.settled) observeResult(observation, value);
        call.succeed(value as R);
      },
      // Once its task exists the SDK's wait was ended locally: the driver settles the call.
      (error: unknown) => {
        if (call.task === undefined) call.fail(error);
      },
    );
    return call.promise;
  }

  return {
    run,
    callTool(params, callOptions) {
      if (typeof params !== "object" || params === null || typeof params.name !== "string") {
        return Promise.reject(
          new InvalidOptionError(
            typeof params === "string" ? "params" : "params.name",
            typeof params === "string"
              ? `callTool: params must be an object such as { name: ${JSON.stringify(params)}, arguments: { ... } }, not a string`
              : "callTool: params.name must be a string",
          ),
        );
      }
      try {
        // Only a plain object carries `task`; anything else goes on to be refused as "options".
        const plain = typeof callOptions === "object" && callOptions !== null && !Array.isArray(callOptions);
        const { task, ...rest }: ToolCallOptions = plain ? callOptions : {};
        if (task === undefined) {
          // The v1 SDK refuses a tool whose execution.taskSupport is "required" with advice that
          // does not apply here: say what does.
          if ((init.client as { isToolTaskRequired?: (name: string) => boolean }).isToolTaskRequired?.(params.name) === true) {
            throw new InvalidOptionError(
              "task",
              `callTool: tool "${params.name}" requires task-augmented execution (execution.taskSupport "required"); pass the task option, e.g. { task: { ttlMs: 60_000 } }`,
            );
          }
          return run<ToolResult>("tools/call", params.name, params, plain ? rest : callOptions, (marked, sdkOptions) =>
            v2 ? sdk.callTool(marked, sdkOptions) : sdk.callTool(marked, undefined, sdkOptions),
          );
        }
        return run<ToolResult>(
          "tools/call",
          params.name,
          params,
          rest,
          // v1: request() (callTool refuses task-required tools); the wire adds params.task.
          (marked, sdkOptions) =>
            v2 ? sdk.callTool(marked, sdkOptions) : sdk.request({ method: "tools/call", params: marked }, anyResult, sdkOptions),
          resolveTaskOptions(task),
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
          new InvalidOptionError("request.method", "request: initialize must not be cancelled (rule 39 in docs/spec-rules.md); use client.connect()"),
        );
      }
      try {
        const { resultSchema, ...callOptions } = requestOptions ?? {};
        const params = request.params ?? {};
        return run<R>(request.method, nameOf(params), params, callOptions, (marked, sdkOptions) =>
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
  };
}

/** The record's `name`: a tool or prompt name, or a resource URI. */
export function nameOf(params: Record<string, unknown>): string | null {
  return typeof params.name === "string" ? params.name : typeof params.uri === "string" ? params.uri : null;
}

function ignore(): void {}

// --- the SDK's request options, as frameworks pass them ------------------------------------

/** The SDK request options the library maps to its own call options. */
const MAPPED = new Set(["timeout", "maxTotalTimeout", "resetTimeoutOnProgress", "signal", "onprogress"]);

/**
 * Maps the SDK's `RequestOptions` (`{ timeout, maxTotalTimeout, resetTimeoutOnProgress, signal,
 * onprogress, ... }`, durations in ms) to the library's call options, and returns the rest
 * (`relatedRequestId`, `resumptionToken`, v2 `headers`, ...) to hand to the SDK unchanged.
 * `timeout` becomes the idle timeout (`timeoutMs`), `maxTotalTimeout` the maximum total timeout;
 * an absent option keeps the client's default. A fractional ms value is rounded up; a value
 * above 2_147_483_647 ms means no limit (`Infinity`).
 * @throws {InvalidOptionError} naming the SDK option, for a duration that is not a positive number.
 */
export function fromSdkOptions(
  options: unknown,
  where: string,
): { call: CallOptions | undefined; extras: Record<string, unknown> } {
  if (options === undefined || options === null) return { call: undefined, extras: {} };
  if (typeof options !== "object") {
    throw new InvalidOptionError("options", `${where}: the request options must be an object`);
  }
  const source = options as Record<string, unknown>;
  const call: CallOptions = {};
  const extras: Record<string, unknown> = {};
  for (const key of Object.keys(source)) if (!MAPPED.has(key)) extras[key] = source[key];
  const timeout = sdkDuration(source.timeout, "timeout", where);
  if (timeout !== undefined) call.timeoutMs = timeout;
  const max = sdkDuration(source.maxTotalTimeout, "maxTotalTimeout", where);
  if (max !== undefined) call.maxTotalTimeoutMs = max;
  if (source.resetTimeoutOnProgress !== undefined) call.resetTimeoutOnProgress = source.resetTimeoutOnProgress as boolean;
  if (source.signal !== undefined) call.signal = source.signal as AbortSignal;
  if (source.onprogress !== undefined) call.onprogress = source.onprogress as CallOptions["onprogress"] & {};
  return { call, extras };
}

function sdkDuration(value: unknown, option: string, where: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || Number.isNaN(value) || value <= 0) {
    throw new InvalidOptionError(
      option,
      `${where}: "${option}" (the SDK's request option, in ms) must be a positive number of ms, or Infinity; received ${received(value)}`,
    );
  }
  return value > MAX_TIMER_DELAY_MS ? Number.POSITIVE_INFINITY : Math.ceil(value);
}

/** A result schema (zod, or any Standard Schema), as opposed to an options object. */
export function isSchema(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    (typeof (value as { parse?: unknown }).parse === "function" || "~standard" in value)
  );
}

/**
 * Splits the SDK's `callTool` / `request` tail: v1 `(resultSchema?, options?)`, v2 `(options?)`
 * or `(resultSchema, options?)`.
 */
export function splitTail(first: unknown, second: unknown): { schema: unknown; options: unknown } {
  if (second !== undefined || isSchema(first)) return { schema: first, options: second };
  return { schema: undefined, options: first };
}

// --- the client-shaped object frameworks take ------------------------------------------------

/** Methods of the SDK client that are one request each: `(params, options)` → method. */
const LIST_METHODS: Readonly<Record<string, string>> = {
  listTools: "tools/list",
  listPrompts: "prompts/list",
  getPrompt: "prompts/get",
  listResources: "resources/list",
  listResourceTemplates: "resources/templates/list",
  readResource: "resources/read",
  complete: "completion/complete",
};

/**
 * The SDK client as frameworks take it, over a facade: a `Proxy` whose request methods go
 * through the library (see `CancellableClient.sdkClient`); everything else is the client's own.
 */
export function sdkClientOver<C extends object>(client: C, facade: Facade): C {
  const where = (name: string) => `sdkClient.${name}`;
  const own: Record<string, (...args: unknown[]) => Promise<unknown>> = {
    callTool: (params, first, second) => {
      try {
        const { options } = splitTail(first, second);
        return facade.callTool(params as CallToolParams, fromSdkOptions(options, where("callTool")).call);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    request: (request, first, second) => {
      try {
        const { schema, options } = splitTail(first, second);
        const call = fromSdkOptions(options, where("request")).call ?? {};
        return facade.request(request as RequestParams, {
          ...call,
          ...(schema === undefined ? {} : { resultSchema: schema as ResultSchema<unknown> }),
        });
      } catch (error) {
        return Promise.reject(error);
      }
    },
    ping: (options) => {
      try {
        return facade.request({ method: "ping" }, fromSdkOptions(options, where("ping")).call);
      } catch (error) {
        return Promise.reject(error);
      }
    },
  };
  for (const [name, method] of Object.entries(LIST_METHODS)) {
    own[name] = (params, options) => {
      try {
        const request: RequestParams =
          params === undefined ? { method } : { method, params: params as RequestParams["params"] & {} };
        return facade.request(request, fromSdkOptions(options, where(name)).call);
      } catch (error) {
        return Promise.reject(error);
      }
    };
  }
  return new Proxy(client, {
    get(target, property) {
      if (typeof property === "string" && Object.hasOwn(own, property)) return own[property];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
