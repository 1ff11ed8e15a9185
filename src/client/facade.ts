import { z } from "zod";
import type { RunRecord } from "../types/record.js";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import type { TransportLike } from "../adapters/types.js";
import { MAX_TIMER_DELAY_MS } from "../options/defaults.js";
import {
  callOptionsSchema,
  clientOptionsSchema,
  isAbortSignal,
  isOptionsObject,
  readCallOptions,
  received,
  signalRefusal,
} from "../options/schemas.js";
import type { CallOptions, LimitNames } from "../types/options.js";
import { LIMIT_NAMES } from "../options/resolve.js";
import { nameOf } from "../runner/runner.js";
import type { CallRunner, Invoke } from "../runner/runner.js";
import { refuseTwoTtls, resolveTaskOptions } from "../runner/tasks.js";
import { answerVerified } from "../runner/verified-outcome.js";
import type { TaskOptions } from "../runner/tasks.js";
import { CALL_MARKER } from "../wire/messages.js";
import { sdkRequiresToolTask } from "../sdk/private.js";

/** The part of an SDK `Client` (v1 `@modelcontextprotocol/sdk` or v2 `@modelcontextprotocol/client`) the facade drives. */
export interface ClientLike {
  callTool(params: never, ...rest: never[]): Promise<unknown>;
  request(request: never, ...rest: never[]): Promise<unknown>;
}

/** `tools/call` params: the tool's name and arguments (and optional `_meta`). */
// A type, not an interface: it is assignable to `Record<string, unknown>` (the runner's params),
// and a misspelled key in an object literal is still an error, as on the SDK's own `callTool`.
export type CallToolParams = {
  name: string;
  arguments?: Record<string, unknown> | undefined;
  _meta?: Record<string, unknown>;
};

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
   * `true` takes every default; `false` is a plain call. See docs/tasks.md.
   * @throws {InvalidOptionError} naming `task` or `task.<option>` when it is anything else.
   */
  task?: TaskOptions | boolean;
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
   * A JSON-RPC error from the server is the SDK's own error, untouched. With the client-wide
   * `awaitVerification`, a call cancelled by a limit whose verification runs (its `verify`, or
   * its tool's verifier from `verifiers`) resolves once it is done with a tool result
   * (`isError: true`) saying what it found, instead of rejecting.
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
   * `mcpToTool`), with every request method going through the library, as on an attached
   * client: `callTool(params, resultSchema?, options?)` (v1 order; the v2 order
   * `callTool(params, options?)` works too) and `request`, and every method the SDK builds on
   * `request` (`ping`, `listTools`, `listPrompts`, `getPrompt`, `listResources`,
   * `listResourceTemplates`, `readResource`, `subscribeResource`, `unsubscribeResource`,
   * `setLoggingLevel`, `complete`, ...): each gets a record, the idle and maximum total timeouts
   * and the cancel, with the SDK's request options mapped to the call options: `timeout` to
   * `timeoutMs` (the idle timeout, ms), `maxTotalTimeout` to `maxTotalTimeoutMs`,
   * `resetTimeoutOnProgress`, `signal`, `onprogress` as they are; an option left out takes this
   * client's default. With `awaitVerification`, a tool call cancelled by a limit answers with its
   * verified outcome. For `attachCancellation` it is the client itself, whose `callTool` and
   * `request` are routed the same way.
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

/**
 * The client's own `callTool` and `request`, bound to it, callable. `ClientLike` takes any SDK
 * client (its methods' parameters are `never`): this is the one place its methods are taken as
 * callable with the arguments the shells pass (the SDK lines' own signatures).
 */
export function sdkCallsOf(client: ClientLike): SdkCalls {
  const sdk = client as unknown as SdkCalls;
  return { callTool: sdk.callTool.bind(client), request: sdk.request.bind(client) };
}

/** The library-shaped calls of a `CancellableClient` (`callTool`, `request`), over one runner. */
export interface Facade {
  callTool(params: CallToolParams, options?: ToolCallOptions): Promise<ToolResult>;
  /** `callTool` for a framework shell: `optionsFrom` names the option hook `options` came from (see `RunRequest.optionsFrom`). */
  callToolFrom(params: CallToolParams, options: ToolCallOptions | undefined, optionsFrom: string | undefined): Promise<ToolResult>;
  request<R>(request: RequestParams, options?: RequestOptions<R>): Promise<R>;
}

/**
 * Refuses what the SDK's argument order puts where these calls take their options (an outside
 * tester's: `mcp.callTool(params, undefined, { timeout: 200, signal })`, the v1 SDK's order, ran
 * on the 60 s default, its signal ignored, and a result schema second gave an error about keys
 * `def` and `type`): a result schema as the options, or a third argument.
 * @throws {InvalidOptionError} naming `options`.
 */
function refuseSdkOrder(call: "callTool" | "request", options: unknown, third: unknown): void {
  const schema = isSchema(options);
  if (third === undefined && !schema) return;
  const first = call === "callTool" ? "params" : "request";
  const schemaGoes =
    call === "callTool" ? "and validates the result as the SDK's own callTool does" : "and a result schema as options.resultSchema";
  throw new InvalidOptionError(
    "options",
    `${call}: ${schema ? "a result schema was given as the options" : "a third argument was given"}, as in the SDK's ${call}(${first}, resultSchema, options); this ${call} takes (${first}, options), the options in this library's names ({ timeoutMs, maxTotalTimeoutMs, signal, ... }, durations in ms), ${schemaGoes}`,
  );
}

export const anyResult = z.looseObject({});

/**
 * The `CancellableClient` calls (`callTool(params, options)`, `request(request, options)`, the
 * library's own option shape) as a shell over the runner: each checks its arguments and makes
 * one `runner.run`, sending through the SDK client's own methods (`sdk`, never the patched ones).
 */
export function createFacade(runner: CallRunner, sdk: SdkCalls, client: object, v2: boolean): Facade {
  // Made once per facade, not per call: how a plain tools/call goes to the SDK.
  const invokeTool: Invoke = v2
    ? (marked, sdkOptions) => sdk.callTool(marked, sdkOptions)
    : (marked, sdkOptions) => sdk.callTool(marked, undefined, sdkOptions);
  const facade: Facade = {
    callTool(params, callOptions, third?: unknown) {
      try {
        refuseSdkOrder("callTool", callOptions, third);
      } catch (error) {
        return Promise.reject(error);
      }
      return facade.callToolFrom(params, callOptions, undefined);
    },
    callToolFrom(params, given, optionsFrom) {
      // Everything in the try, the params' own reads too (a getter of `name` that throws): the call
      // rejects, never throws (as the SDK's own callTool).
      try {
        // Read once (a getter's value is the one checked and the one sent).
        const name: unknown = typeof params === "object" && params !== null ? params.name : undefined;
        if (typeof name !== "string") {
          throw new InvalidOptionError(
            typeof params === "string" ? "params" : "params.name",
            typeof params === "string"
              ? `callTool: params must be an object such as { name: ${JSON.stringify(params)}, arguments: { ... } }, not a string`
              : "callTool: params.name must be a string",
          );
        }
        // With awaitVerification on, the caller's signal is read for it too: the options are read
        // once, into a plain object, for the call and for it alike (a getter answering a new signal
        // on each read was read two to four times).
        const awaiting = runner.defaults.awaitVerification;
        const read =
          awaiting !== undefined && awaiting !== false && typeof given === "object" && given !== null && !Array.isArray(given)
            ? (readCallOptions(given) as ToolCallOptions)
            : undefined;
        const callOptions = read ?? given;
        // Only a plain object carries `task`; anything else goes on to be refused as "options".
        const plain = typeof callOptions === "object" && callOptions !== null && !Array.isArray(callOptions);
        // Options without `task` go on as they are (no copy per call); `task` is taken out of the rest.
        const task = plain ? callOptions.task : undefined;
        if (task === undefined || task === false) {
          // The v1 SDK refuses a tool whose execution.taskSupport is "required" with advice that
          // does not apply here: say what does.
          if (sdkRequiresToolTask(client, name)) {
            throw new InvalidOptionError(
              "task",
              `callTool: tool "${name}" requires task-augmented execution (execution.taskSupport "required"); pass the task option, e.g. { task: { ttlMs: 60_000 } }`,
            );
          }
          return answerVerified(
            runner.run<ToolResult>(
              {
                method: "tools/call",
                name,
                params,
                options: plain && "task" in callOptions ? withoutTask(callOptions) : (callOptions as CallOptions | undefined),
                optionsFrom,
              },
              invokeTool,
            ),
            awaiting,
            read?.signal,
          );
        }
        const resolved = resolveTaskOptions(task);
        refuseTwoTtls(params as Record<string, unknown>, resolved);
        return answerVerified(
          runner.run<ToolResult>(
            {
              method: "tools/call",
              name,
              params,
              options: withoutTask(callOptions as ToolCallOptions),
              task: resolved,
              optionsFrom,
            },
            // v1: request() (callTool refuses task-required tools); the wire adds params.task.
            (marked, sdkOptions) =>
              v2 ? sdk.callTool(marked, sdkOptions) : sdk.request({ method: "tools/call", params: marked }, anyResult, sdkOptions),
          ),
          awaiting,
          read?.signal,
        );
      } catch (error) {
        return Promise.reject(error);
      }
    },
    request<R>(request: RequestParams, requestOptions?: RequestOptions<R>, third?: unknown) {
      // Everything in the try, the request's own reads too (a getter that throws): the call rejects, never throws.
      try {
        refuseSdkOrder("request", requestOptions, third);
        // Read once (a getter's value is the one checked and the one sent).
        const method: unknown = typeof request === "object" && request !== null ? request.method : undefined;
        if (typeof method !== "string") throw new InvalidOptionError("request.method", "request: request.method must be a string");
        if (method.startsWith("notifications/")) {
          // A notification has no answer to wait for (and a cancel is the library's to send, rule 6).
          throw new InvalidOptionError(
            "request.method",
            `request: ${method} is a notification, not a request: it has no answer, so it has no timeout or cancel; send it with client.notification()`,
          );
        }
        if (method === "initialize") {
          throw new InvalidOptionError(
            "request.method",
            "request: initialize must not be cancelled (rule 39 in docs/spec-rules.md); use client.connect()",
          );
        }
        if (requestOptions !== undefined && !isOptionsObject(requestOptions)) {
          // Checked before the read below, which would turn a Date or a Map into {} (every default).
          throw new InvalidOptionError("options", `call options must be an object; received ${received(requestOptions)}`);
        }
        const resultSchema = requestOptions?.resultSchema;
        // The SDKs validate the answer with it (zod's, or a Standard Schema): anything else
        // failed the call after the request went out and was answered (an outside tester's).
        if (resultSchema !== undefined && !isSchema(resultSchema)) {
          throw new InvalidOptionError(
            "resultSchema",
            `request: resultSchema must be a schema (a zod schema, or a Standard Schema); received ${received(resultSchema)}`,
          );
        }
        // The v1 SDK validates with zod's `safeParse` only (another Standard Schema failed the
        // answered call with its bare TypeError: an outside tester's).
        if (resultSchema !== undefined && !v2 && typeof (resultSchema as { safeParse?: unknown }).safeParse !== "function") {
          throw new InvalidOptionError(
            "resultSchema",
            `request: the v1 SDK validates a result with a zod schema (its safeParse): this resultSchema has none (received ${received(resultSchema)}); give a zod schema`,
          );
        }
        // Read as the runner reads options (getters and inherited ones too), not copied by a spread.
        const callOptions = requestOptions === undefined ? undefined : (readCallOptions(requestOptions, "resultSchema") as CallOptions);
        const params = request.params ?? {};
        return runner.run<R>({ method, name: nameOf(params), params, options: callOptions }, (marked, sdkOptions) =>
          sendRequest(sdk, v2, { method, params: marked }, resultSchema, sdkOptions),
        );
      } catch (error) {
        return Promise.reject(error);
      }
    },
  };
  return facade;
}

/** A request through the SDK's `request`: v2 takes a result schema only for methods outside the spec; v1 always needs one. */
function sendRequest(sdk: SdkCalls, v2: boolean, request: object, schema: unknown, options: Record<string, unknown>): Promise<unknown> {
  if (schema !== undefined) return sdk.request(request, schema, options);
  return v2 ? sdk.request(request, options) : sdk.request(request, anyResult, options);
}

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
export function fromSdkOptions(options: unknown, where: string): { call: CallOptions | undefined; extras: Record<string, unknown> } {
  if (options === undefined || options === null) return { call: undefined, extras: {} };
  if (!isOptionsObject(options)) {
    // A Date or a Map would read as {} (every default): refused, as the library's own options are.
    throw new InvalidOptionError("options", `${where}: the request options must be an object; received ${received(options)}`);
  }
  const source = options as Record<string, unknown>;
  const call: CallOptions = {};
  const extras: Record<string, unknown> = {};
  for (const key of Object.keys(source)) {
    if (MAPPED.has(key)) continue;
    // The library's own call option where the SDK's request options go: the SDK would ignore it.
    if (Object.hasOwn(callOptionsSchema.shape, key)) throw new InvalidOptionError(key, libraryNameHere(key, where));
    // A client-wide option of the library's (awaitVerification, verifiers, onRecord, ...): the SDK
    // would ignore it too, and the call would run as if it were never given.
    if (Object.hasOwn(clientOptionsSchema.shape, key)) {
      throw new InvalidOptionError(
        key,
        `${where}: "${key}" is a client-wide option of the library (withCancellation or attachCancellation options), not one of the SDK's request options (the SDK would ignore it)`,
      );
    }
    const meant = nearMiss(key);
    if (meant !== undefined) throw new InvalidOptionError(key, nearMissText(key, meant, where));
    extras[key] = source[key];
  }
  const timeout = sdkDuration(source.timeout, "timeout", where);
  if (timeout !== undefined) call.timeoutMs = timeout;
  const max = sdkDuration(source.maxTotalTimeout, "maxTotalTimeout", where);
  if (max !== undefined) call.maxTotalTimeoutMs = max;
  // The timeout error names what the framework set, not an option its user never wrote.
  if (timeout !== undefined || max !== undefined) {
    (call as { [LIMIT_NAMES]?: LimitNames })[LIMIT_NAMES] = {
      timeoutMs: timeout === undefined ? undefined : SDK_TIMEOUT_NAME,
      maxTotalTimeoutMs: max === undefined ? undefined : SDK_MAX_TOTAL_NAME,
    };
  }
  const reset = source.resetTimeoutOnProgress;
  if (reset !== undefined) {
    if (typeof reset !== "boolean") {
      throw new InvalidOptionError(
        "resetTimeoutOnProgress",
        `${where}: "resetTimeoutOnProgress" (the SDK's request option) must be true or false; received ${received(reset)}`,
      );
    }
    call.resetTimeoutOnProgress = reset;
  }
  // Checked here, so the error names where they were given (the library's call options would say `call options`).
  const { signal, onprogress } = source;
  if (signal !== undefined) {
    if (!(Array.isArray(signal) ? signal.every(isAbortSignal) : isAbortSignal(signal))) {
      throw new InvalidOptionError("signal", `${where}: "signal" (the SDK's request option) ${signalRefusal(signal)}`);
    }
    call.signal = signal as AbortSignal;
  }
  if (onprogress !== undefined) {
    if (typeof onprogress !== "function") {
      throw new InvalidOptionError(
        "onprogress",
        `${where}: "onprogress" (the SDK's request option) must be a function; received ${received(onprogress)}`,
      );
    }
    call.onprogress = onprogress as CallOptions["onprogress"] & {};
  }
  return { call, extras };
}

/** A name folded for the near-miss check: lower case, without `_` and `-`. */
const fold = (name: string): string => name.toLowerCase().replace(/[_-]/g, "");

/** The SDK request options the library reads and its own options, by their folded names (see `nearMiss`). */
let nearNames: Map<string, string> | undefined;

/**
 * The option a key misspells, when it differs from one only in case, `_` or `-` (`timeoutMS`,
 * `Timeout`, `onProgress`, `max_total_timeout`): the SDK would ignore such a key, and the call
 * would run with the default limit it was meant to change. Undefined for any other key (the
 * SDK's `relatedRequestId`, `resumptionToken`, v2 `headers`, ... pass through).
 */
function nearMiss(key: string): string | undefined {
  nearNames ??= new Map(
    [...MAPPED, ...Object.keys(callOptionsSchema.shape), ...Object.keys(clientOptionsSchema.shape)]
      .reverse()
      .map((name) => [fold(name), name]),
  );
  const meant = nearNames.get(fold(key));
  return meant === key ? undefined : meant;
}

function nearMissText(key: string, meant: string, where: string): string {
  const sdk = MAPPED.has(meant) ? meant : meant === "timeoutMs" ? "timeout" : meant === "maxTotalTimeoutMs" ? "maxTotalTimeout" : undefined;
  const hint =
    sdk !== undefined
      ? `the SDK's request option is "${sdk}"${sdk === "timeout" || sdk === "maxTotalTimeout" ? " (ms)" : ""}`
      : `"${meant}" is the library's option (withCancellation or attachCancellation options, or the library's own callTool)`;
  return `${where}: "${key}" is not one of the SDK's request options (the SDK would ignore it, and the call would run without it): ${hint}`;
}

/** The error for one of the library's call options given among the SDK's request options. */
function libraryNameHere(key: string, where: string): string {
  const sdkName = key === "timeoutMs" ? "timeout" : key === "maxTotalTimeoutMs" ? "maxTotalTimeout" : undefined;
  if (sdkName !== undefined) {
    return `${where}: "${key}" is the library's call option; the SDK's request options take "${sdkName}" (ms), which the library reads as the same limit`;
  }
  if (key.startsWith("verify")) {
    return `${where}: "${key}" is a per-call option of the library's own callTool (mcp.callTool); calls made through the SDK's methods are verified by the client-wide "verifiers" option (withCancellation or attachCancellation options)`;
  }
  return `${where}: "${key}" is the library's call option, not one of the SDK's request options (the SDK would ignore it): pass it to the library's own callTool (mcp.callTool), or set it client-wide (withCancellation or attachCancellation options)`;
}

/** How a timeout error names a limit that came from the SDK request options a framework passed. */
const SDK_TIMEOUT_NAME = 'the SDK request option "timeout", as the framework set it';
const SDK_MAX_TOTAL_NAME = 'the SDK request option "maxTotalTimeout", as the framework set it';

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
    typeof value === "object" && value !== null && (typeof (value as { parse?: unknown }).parse === "function" || "~standard" in value)
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

// --- the SDK-shaped shell: the client's own methods, as frameworks call them -----------------

/** Requests the library never takes over: they must not be cancelled or cut short (rule 39; server/discover by the library's own choice). */
const PASS_THROUGH = new Set(["initialize", "server/discover"]);

/** The SDK client's request methods in the SDK's own shape, each one runner call. */
export type SdkShell = Record<string, (...args: unknown[]) => Promise<unknown>> & SdkCalls;

const marked = (params: unknown): boolean => typeof params === "object" && params !== null && CALL_MARKER in params;

/**
 * The SDK client's request methods with the SDK's argument orders and request options (v1
 * `callTool(params, resultSchema?, options?)`, v2 `callTool(params, options?)`, `request`,
 * `ping`, `listTools`, ...) as a shell over the runner: the SDK options are mapped to the call
 * options (`fromSdkOptions`), the others (`relatedRequestId`, `resumptionToken`, v2 `headers`,
 * ...) and the result schema are handed to the SDK unchanged. A request that already carries a
 * call's marker (the SDK's own methods calling `request` on themselves), `initialize` and
 * `server/discover` go to the SDK as they are. Used by `attachCancellation` (installed on the
 * client) and `sdkClient` (a view of the client) alike.
 * @param original the client's own methods, bound to it.
 * @param tighterTimeout a call's own SDK `timeout` and the client-wide `timeoutMs` combine as the
 *   tighter one (for a framework that passes its own timeout on every call: Mastra), instead of
 *   the call's winning.
 */
export function createSdkShell(runner: CallRunner, original: SdkCalls, v2: boolean, where: string, tighterTimeout = false): SdkShell {
  const defaultTimeoutMs = tighterTimeout ? runner.defaults.timeoutMs : undefined;
  const mapped = (options: unknown, what: string) => {
    const mapping = fromSdkOptions(options, what);
    const call = mapping.call;
    if (defaultTimeoutMs !== undefined && call?.timeoutMs !== undefined && defaultTimeoutMs < call.timeoutMs) {
      call.timeoutMs = defaultTimeoutMs;
      const names = (call as { [LIMIT_NAMES]?: LimitNames })[LIMIT_NAMES];
      (call as { [LIMIT_NAMES]?: LimitNames })[LIMIT_NAMES] = { ...names, timeoutMs: undefined }; // the client-wide timeoutMs won
    }
    return mapping;
  };
  const request = (request: unknown, first?: unknown, second?: unknown): Promise<unknown> => {
    // The request's own reads in the try too (a getter that throws): the call rejects, never throws.
    try {
      const { method, params } = (request ?? {}) as { method?: unknown; params?: Record<string, unknown> };
      if (marked(params)) return original.request(request, first, second);
      // A method that is no string is refused as `mcp.request` refuses it (an outside tester's: it
      // went out past the library, `{"method":5}`, no limit of ours on it, no record).
      if (typeof method !== "string") {
        throw new InvalidOptionError("request.method", `${where}.request: request.method must be a string; received ${received(method)}`);
      }
      if (PASS_THROUGH.has(method)) return original.request(request, first, second);
      const { schema, options } = splitTail(first, second);
      // Named by its method: the SDK's listTools, ping, readResource, ... all come here as request.
      const { call, extras } = mapped(options, `${where}.request (${method})`);
      const body = params ?? {};
      return runner.run({ method, name: nameOf(body), params: body, options: call }, (withMarker, ours) =>
        sendRequest(original, v2, { ...(request as object), method, params: withMarker }, schema, { ...extras, ...ours }),
      );
    } catch (error) {
      return Promise.reject(error);
    }
  };
  const shell: SdkShell = {
    request,
    callTool(params: unknown, first?: unknown, second?: unknown): Promise<unknown> {
      // Everything in the try, the params' own reads too (a getter of `name` that throws): the call
      // rejects, never throws, as the SDK's own callTool does.
      try {
        const name = (params as { name?: unknown } | null)?.name;
        // The SDK refuses malformed params with its own error.
        if (marked(params) || typeof name !== "string") return original.callTool(params, first, second);
        const { schema, options } = splitTail(first, second);
        const { call, extras } = mapped(options, `${where}.callTool`);
        return answerVerified(
          runner.run({ method: "tools/call", name, params: params as Record<string, unknown>, options: call }, (withMarker, ours) =>
            v2 && schema === undefined
              ? original.callTool(withMarker, { ...extras, ...ours })
              : original.callTool(withMarker, schema, { ...extras, ...ours }),
          ),
          runner.defaults.awaitVerification,
          call?.signal,
        );
      } catch (error) {
        return Promise.reject(error);
      }
    },
  };
  return shell;
}

/**
 * The SDK client as frameworks take it (`CancellableClient.sdkClient`): a view of the client
 * whose `callTool` and `request` are the SDK shell's, as `attachCancellation` installs them on the
 * client itself. Every other member is the client's own, and its methods run on the view: the
 * requests they make through `this.request` (`ping`, `listTools`, `listPrompts`, `getPrompt`,
 * `listResources`, `listResourceTemplates`, `readResource`, `subscribeResource`,
 * `unsubscribeResource`, `setLoggingLevel`, `complete`, ... on both SDK lines, with the SDK's own
 * result schemas, pagination and caches) reach the shell's `request`, so each is a runner call,
 * exactly as on an attached client. Reads go to the client; writes land on it (the view has no
 * traps but `get`). Neither SDK line keeps `#private` fields, which a view could not reach.
 */
export function sdkClientOver<C extends object>(client: C, shell: SdkShell): C {
  const view: C = new Proxy(client, {
    get(target, property) {
      if (typeof property === "string" && Object.hasOwn(shell, property)) return shell[property];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(view) : value;
    },
  });
  return view;
}

/** The call options without `task` (which the runner does not take as a call option). */
function withoutTask(options: ToolCallOptions): CallOptions {
  // Read as the runner reads options (getters and inherited ones too), not copied by a spread.
  return isOptionsObject(options) ? (readCallOptions(options, "task") as CallOptions) : options;
}
