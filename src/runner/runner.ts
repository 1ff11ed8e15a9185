// The one call path. Every entry point (withCancellation, attachCancellation, sdkClient, the AI
// SDK transport, the OpenAI Agents server, the probe, the proxy) turns its caller's shape into one
// `CallRunner.run` and the outcome back into its caller's shape; nothing else builds a
// `CancellableCall`. See docs/architecture.md.
import { CancellableCall } from "../core/cancellable-call.js";
import type { CallHooks, CallIds } from "../core/cancellable-call.js";
import { SettledRecord } from "../core/settled-record.js";
import { frozenRecord } from "../core/settled-record.js";
import { DeadlineQueue } from "../core/deadlines.js";
import { processClock } from "../utils/slices.js";
import { summarize } from "../core/record.js";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import { isoTime } from "../utils/iso.js";
import { warnMistakeOnce, warnOnce } from "../options/warnings.js";
import type { CancelTrigger, RunRecord } from "../types/record.js";
import type { TransportLike } from "../adapters/types.js";
import { MemoryLedger } from "../ledger/memory.js";
import { DEFAULT_MAX_RECORDS, MAX_TIMER_DELAY_MS } from "../options/defaults.js";
import { resolveCallOptions } from "../options/resolve.js";
import { received } from "../options/schemas.js";
import { NOT_SIGNAL_ONLY, signalOnly } from "../options/schemas.js";
import type { CallObservation, CallOptions, CancellationOptions, Timers, Verifiers } from "../types/options.js";
import { nextCallId, nextConnectionId } from "./ids.js";
import { toolVerify, verifierFor } from "./verifiers.js";
import { isVerifyReadSignal } from "../utils/verify-reads.js";
import { observe, observeRecord, observeResult, withMeta } from "./observe.js";
import { TaskDriver, resolveTaskOptions } from "./tasks.js";
import type { ResolvedTaskOptions } from "./tasks.js";
import { CALL_MARKER } from "../wire/messages.js";
import { Wire } from "../wire/wire.js";
import { declaresTasks } from "../wire/tasks.js";
import type { WireOptions } from "../wire/wire.js";
import type { CancellationAdapter } from "../adapters/types.js";
import type { RequestId } from "../core/cancellable-call.js";
import { DEFAULT_MAX_TOMBSTONES } from "../options/defaults.js";
import {
  isV2Client,
  sdkAnswersInputRequests,
  sdkInputDispatcher,
  sdkTimerDropper,
  sdkTimerSkipper,
  sdkWaitDropper,
} from "../sdk/private.js";
import { callHook, noop, textOf } from "../utils/hooks.js";

/** The wire a call goes through, chosen when the call is made. */
export type WireChoice =
  /** Send through this wire (it may be closed: the call then settles `connection-closed`, nothing sent). */
  | Wire
  /** The connection is gone and no wire is open: the call settles `connection-closed`, nothing sent. */
  | null;

/** What a runner needs from its entry point. */
export interface RunnerInit {
  /** The client-wide defaults, already validated (`parseCancellationOptions`). */
  readonly defaults: CancellationOptions;
  /** The SDK client (or the framework's client object), as the `observer` option sees it. */
  readonly client?: object | undefined;
  /**
   * The wire for the next call. Throws `InvalidOptionError` for a usage mistake (it becomes the
   * call's rejection; nothing is sent).
   */
  wire(): WireChoice;
  /** Every call's rejection, after its settle (`CallHooks.rejected`): for an entry point that answers from the call itself. */
  readonly rejected?: ((call: CancellableCall, error: unknown) => void) | undefined;
}

/**
 * The key under which an option hook's value that is no options object (a string, a number, an
 * array, a Promise) reaches `start`, described (`{ returned: 'a string ("30s")' }`), or the error
 * the hook threw (`{ threw: "TypeError: ..." }`): the call is then refused and recorded as any
 * invalid option from the hook is (see `RunRequest.optionsFrom`). @internal
 */
export const REFUSED_HOOK_VALUE: unique symbol = Symbol("mcp-cancellable.refusedHookValue");

/**
 * What an option hook gave that is no options: what it returned, what it threw, or an option it
 * may not give (`option`, with the message naming it). @internal
 */
export type HookRefusal =
  | { readonly returned: string }
  | { readonly threw: string }
  | { readonly option: string; readonly invalid: string };

/** One request to run: what it is, and the caller's options for it. */
export interface RunRequest {
  readonly method: string;
  /** The tool or prompt name, or the resource URI; `null` for none. */
  readonly name: string | null;
  readonly params: Record<string, unknown> & { _meta?: Record<string, unknown> };
  /** The caller's per-call options (validated here), merged over the defaults. */
  readonly options?: CallOptions | undefined;
  /** Task-augmented: the task driver's options (rules 35, 36). */
  readonly task?: ResolvedTaskOptions | undefined;
  /**
   * Set when `options` came from an entry point's option hook (`callOptions`) whose errors a
   * framework hands to its model as tool text: the hook as the developer knows it, such as
   * `CancellableMCPServer "reports" callOptions("generate_quarterly_summary", args)`. An invalid
   * option then rejects with an `InvalidOptionError` that names the hook, is warned about once
   * per distinct mistake (`process.emitWarning`, `MCP_CANCELLABLE_INVALID_OPTION`), and is
   * recorded (status `failed`, outcome `not-sent`, error code `INVALID_OPTION`).
   */
  readonly optionsFrom?: string | undefined;
  /** The entry point's own object for this call, as `call.owner` (see `RunnerInit.rejected`). */
  readonly owner?: unknown;
  /** `false`: the call makes no promise; the entry point answers from the call itself (`CallInit.promise`; `start` only). */
  readonly promise?: false | undefined;
}

/**
 * What the runner hands the entry point's send: the SDK's request options with the SDK's own
 * timer disabled, and `onprogress` set when the request must carry a progress token (the wire
 * delivers progress to the call itself; this handler only makes the SDK add the token).
 */
export interface SdkRequestOptions {
  timeout: number;
  resetTimeoutOnProgress: false;
  onprogress?: () => void;
  [key: string]: unknown;
}

/**
 * Puts the request on the wire through the entry point's own client: `params` carry the call's
 * marker (a symbol key, never serialised) that binds the request id to the call. Returns the
 * answer's promise (resolved with the result, rejected with the server's error or the send's
 * failure), which settles the call; or `undefined` when the entry point settles `call` itself
 * (`call.succeed`, `call.fail`): no promise and handlers per pending call.
 */
export type Invoke = (
  params: Record<string, unknown>,
  sdkOptions: SdkRequestOptions,
  call: CancellableCall<unknown>,
) => Promise<unknown> | undefined;

/** A record's error message is cut at this many characters (as the core cuts a server's). */
const MAX_ERROR_MESSAGE_LENGTH = 1_000;

/** Never 0 or Infinity: Node fires those at once. The SDK's own timer must never decide a call's fate. */
const SDK_TIMEOUT = MAX_TIMER_DELAY_MS;

/** The runtime's own `setInterval`, taken when the library loads (fake timers installed later do not replace it). */
const runtimeSetInterval = globalThis.setInterval;
let sdkTimerListKept = false;

/**
 * Node keeps one list of timers per delay. Where the SDK's own timer of a call's request cannot
 * be skipped (`sdkTimerSkipper`: an SDK release without `_setupTimeout`), it is set up with
 * `SDK_TIMEOUT` and cleared as the request goes out (`sdkTimerDropper`), which left that delay's
 * list empty: Node deleted it and made it again for the next request, a `TimersList` and its
 * place in the timers' priority queue per call (about 0.7 µs of the v1 SDK's call, 1,000 in
 * flight). One unreferenced interval of that delay keeps the list: it holds no process open,
 * is no active resource, and fires every 24.8 days doing nothing. Elsewhere (a browser's numeric
 * timer, no `unref`) it is cleared at once.
 */
function keepSdkTimerList(): void {
  if (sdkTimerListKept) return;
  sdkTimerListKept = true;
  const timer = runtimeSetInterval(noop, SDK_TIMEOUT) as unknown as { unref?: unknown } | number;
  if (typeof timer === "object" && timer !== null && typeof timer.unref === "function") (timer as { unref(): void }).unref();
  else globalThis.clearInterval(timer as never);
}

const systemTimers: Timers = {
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
};

/** `performance.now()`: the process's clock, whose deadline queues share the process's settle slicer. */
const monotonic = processClock;

/** `drop`, with the SDK timers' list kept (see `keepSdkTimerList`) when there is one to drop. */
function keptListDropper(drop: ((id: RequestId) => void) | undefined): ((id: RequestId) => void) | undefined {
  if (drop !== undefined) keepSdkTimerList();
  return drop;
}

/**
 * The SDK's `timeout` for the requests of calls with a limit of their own, on a client whose SDK
 * sets up no timer for it (`sdkTimerSkipper`); elsewhere the SDK's timer of this delay is cleared
 * as the request goes out (`sdkTimerDropper`).
 */
const SDK_TIMEOUT_SKIPPED = SDK_TIMEOUT - 1;

/** The SDK request options of every call (frozen: an entry point spreads them, never writes them). */
const SDK_OPTIONS: SdkRequestOptions = Object.freeze({ timeout: SDK_TIMEOUT, resetTimeoutOnProgress: false as const });
const SDK_OPTIONS_PROGRESS: SdkRequestOptions = Object.freeze({
  timeout: SDK_TIMEOUT,
  resetTimeoutOnProgress: false as const,
  onprogress: noop,
});
/** The same, for a call with a limit of its own on a client that skips the SDK's timer (`SDK_TIMEOUT_SKIPPED`). */
const SDK_OPTIONS_SKIPPED: SdkRequestOptions = Object.freeze({ timeout: SDK_TIMEOUT_SKIPPED, resetTimeoutOnProgress: false as const });
const SDK_OPTIONS_PROGRESS_SKIPPED: SdkRequestOptions = Object.freeze({
  timeout: SDK_TIMEOUT_SKIPPED,
  resetTimeoutOnProgress: false as const,
  onprogress: noop,
});

/**
 * A v2 SDK client that answers a server's input requests itself (`sdkAnswersInputRequests`), on a
 * connection not known to be 2025-era: its multi round-trip driver runs those handlers between
 * rounds, with the request's signal.
 */
function answersInputRequests(client: object | undefined, protocolVersion: string | undefined): boolean {
  if (client === undefined || (protocolVersion !== undefined && protocolVersion < "2026-07-28")) return false;
  return sdkAnswersInputRequests(client);
}

/**
 * The SDK options with a signal that aborts when the call settles without its answer (its limit,
 * the caller's abort, the connection's loss): the signal the v2 SDK's multi round-trip driver
 * hands the client's own handlers (an elicitation form, a sampling run), which otherwise ran on
 * after the call had ended (an abandoned multi round-trip is one not retried, with nothing else
 * to cancel on the wire: docs/spec-rules.md, "What this library does with them"). Only for such
 * clients: an `AbortController` a call, and the SDK's listener on it. The SDK's own cancel that
 * follows its abort never goes out (the wire sent the call's already).
 */
function withInputAbort(options: SdkRequestOptions, call: CancellableCall<unknown>): SdkRequestOptions {
  const controller = new AbortController();
  call.promise.then(undefined, (error: unknown) => controller.abort(error));
  return { ...options, signal: controller.signal };
}

/** The cancel hook of a call that has no wire (the connection is gone): nothing goes out. */
const cancelNone: CallHooks["cancel"] = () => "none";

/**
 * Runs calls over one connection (one entry point's wire, or the wires it moves to after a
 * reconnect): option resolution, ids, the shared deadline queue, the cancel by the transport's
 * mechanism (through the wire), task-augmented calls, verification, the record and its fan-out
 * (memory, `onRecord`, and through `onRecord` `jsonLines`), and the observer.
 */
export class CallRunner {
  readonly #init: RunnerInit;
  readonly #defaults: CancellationOptions;
  readonly #ledger: MemoryLedger;
  readonly #clock: () => number;
  readonly #timers: Timers;
  /** One timer for all of this runner's pending calls (the nearest deadline), not one per call. */
  readonly #deadlines: DeadlineQueue;
  /** A call made without options gets these, resolved once (the options are never mutated). */
  readonly #plainOptions: ReturnType<typeof resolveCallOptions>;
  /** `verifiers` by tool name, when any were given. */
  readonly #verifiers: Verifiers | undefined;
  readonly #connectionId = nextConnectionId();
  // Per wire, made once (attachCancellation moves to a new wire after a reconnect): the MCP
  // session id reader and the cancel hook, so a call without a task allocates neither.
  #sessionWire: Wire | null = null;
  #sessionId: () => string | undefined = () => undefined;
  #wireCancel: CallHooks["cancel"] = cancelNone;
  /** The hooks of every call on the current wire without a task or an observation: one object per wire, not per call. */
  #wireHooks: CallHooks | null = null;
  /** The connection and session ids every call of the current wire carries (the call id is each call's own). */
  #ids: CallIds;
  /** The hooks of a call made with no wire (the connection is gone). */
  readonly #noWireHooks: CallHooks;
  /** `onRecord`, guarded (a throwing hook must not change how a call settles); undefined without one. */
  readonly #onRecord: ((record: RunRecord) => void) | undefined;
  /** A settled call's record source goes to memory: its record is built when `records()` reads it. */
  readonly #keep = (settled: SettledRecord): void => this.#ledger.put(settled.callId, settled);
  /** A settled call's record while the ledger holds it (`Wire.lateRecords`). */
  readonly #lateRecord = (callId: number): SettledRecord | undefined => {
    const source = this.#ledger.get(callId);
    return source instanceof SettledRecord ? source : undefined;
  };

  constructor(init: RunnerInit) {
    this.#init = init;
    const defaults = init.defaults;
    this.#defaults = defaults;
    this.#ledger = new MemoryLedger(defaults.maxRecords ?? DEFAULT_MAX_RECORDS);
    this.#clock = defaults.clock ?? monotonic;
    this.#timers = defaults.timers ?? systemTimers;
    this.#deadlines = new DeadlineQueue(this.#clock, this.#timers);
    this.#plainOptions = Object.freeze(resolveCallOptions(defaults, undefined));
    this.#verifiers = defaults.verifiers !== undefined && Object.keys(defaults.verifiers).length > 0 ? defaults.verifiers : undefined;
    const onRecord = defaults.onRecord;
    this.#onRecord =
      onRecord === undefined
        ? undefined
        : (record) =>
            // A throwing (or rejecting) log hook must not change how a call settles; it is said once per distinct error.
            callHook(onRecord, record, (error) =>
              warnOnce(
                `onRecord threw, so this record was not logged (the call settled as it would): ${textOf(error)}`,
                "MCP_CANCELLABLE_HOOK_THREW",
              ),
            );
    this.#noWireHooks = { cancel: cancelNone, settled: noop, record: this.#onRecord, keep: this.#keep, rejected: init.rejected };
    this.#ids = { callId: 0, connectionId: this.#connectionId, sessionId: this.#sessionId };
  }

  /** The client-wide defaults this runner was made with. */
  get defaults(): CancellationOptions {
    return this.#defaults;
  }

  /** The run records kept in memory, oldest first (at most `maxRecords`). */
  records(): RunRecord[] {
    return this.#ledger.list();
  }

  /**
   * Runs one request to its end: resolves with the result; rejects with the server's error as
   * the client raised it, or with the library's `CallTimeoutError`, `CallCancelledError`,
   * `ConnectionClosedError`, or `InvalidOptionError` (a bad option or a usage mistake: nothing
   * was sent). Settles exactly once; every timer, listener and map entry is released.
   */
  run<R>(request: RunRequest, invoke: Invoke): Promise<R> {
    return this.start<R>(request, invoke).promise;
  }

  /**
   * Starts one request as {@link run} does and returns its call: `promise` settles as `run`'s
   * would, and `cancel("aborted", reason)` cancels it as its signal's abort would, for an entry
   * point that tracks its requests itself (the proxy) and so needs no `AbortController` per
   * request (about 1 KB a pending call with its listener). Throws as `run` rejects for an invalid option.
   * @internal
   */
  start<R>(request: RunRequest, invoke: Invoke): CancellableCall<R> {
    const { method, name, params, options, task: taskOptions } = request;
    const defaults = this.#defaults;
    // Options that hold only a signal share the defaults' resolved options; the signal goes on its own.
    let signal: CallOptions["signal"];
    let resolved = this.#plainOptions;
    if (options !== undefined) {
      const only = signalOnly(options);
      if (only !== NOT_SIGNAL_ONLY && !(REFUSED_HOOK_VALUE in options)) signal = only;
      else resolved = this.#resolve(request, options);
    }
    // A tool call without its own `verify` takes its tool's verifier (`verifiers`), if any; not one
    // a verify read makes with its signal (a read that timed out would be verified by a read, and so on).
    if (
      this.#verifiers !== undefined &&
      method === "tools/call" &&
      name !== null &&
      resolved.verify === undefined &&
      !isVerifyReadSignal(signal ?? resolved.signal)
    ) {
      const verifier = verifierFor(this.#verifiers, name);
      if (verifier !== undefined) resolved = { ...resolved, verify: toolVerify(verifier, name, params) };
    }
    const wire = this.#init.wire(); // throws InvalidOptionError for a usage mistake: nothing is sent
    const meta: unknown = params._meta;
    if (meta !== undefined && (typeof meta !== "object" || meta === null || Array.isArray(meta))) {
      throw new InvalidOptionError("params._meta", `params._meta must be an object; received ${received(meta)}, so nothing was sent`);
    }
    const callerToken = (meta as { progressToken?: unknown } | undefined)?.progressToken;
    // Rule 20: a string or an integer; anything else the server drops, and the call would time
    // out with its progress lost (an outside tester's: `{}`, 1.5 and null went out).
    if (callerToken !== undefined && typeof callerToken !== "string" && !Number.isSafeInteger(callerToken)) {
      throw new InvalidOptionError(
        "params._meta.progressToken",
        `a progress token is a string or an integer (rule 20 in docs/spec-rules.md), a safe one (at most 2^53 - 1 either way, as JSON numbers keep it exactly); received ${received(callerToken)}, so nothing was sent`,
      );
    }
    if (callerToken !== undefined && wire?.tokenInUse(callerToken) === true) {
      throw new InvalidOptionError(
        "params._meta.progressToken",
        `progress token ${JSON.stringify(callerToken)} is already in use by a request pending on this connection, so ${name === null ? method : `${method} "${name}"`} was not sent: a progress token must be unique among active requests (rule 20 in docs/spec-rules.md); give each call its own, or leave it out and the SDK sets one`,
      );
    }
    const key = nextCallId();
    const shown = name === null || (name === params.name && name.length <= MAX_NAME_LENGTH) ? name : shownName(name, params);
    // Before the call starts, so a span covers the whole call, even one cancelled before the send.
    const observation =
      defaults.observer === undefined
        ? undefined
        : observe(defaults.observer, {
            method,
            name: shown,
            params,
            client: this.#init.client,
            transport: wire?.underlying,
            protocolVersion: wire?.protocolVersion,
          });
    if (wire !== null && wire !== this.#sessionWire) {
      this.#sessionWire = wire;
      // Its tombstones of answered calls whose records only the ledger reads hold their numbers.
      wire.lateRecords ??= this.#lateRecord;
      this.#sessionId = sessionIdOf(wire);
      this.#wireCancel = (call, reason) => wire.cancelCall(call, reason);
      this.#wireHooks = null;
      this.#ids = { callId: 0, connectionId: this.#connectionId, sessionId: this.#sessionId };
    }
    // A task-augmented call: its cancel is the task driver's (tasks/cancel once the task exists).
    const task = taskOptions === undefined || wire === null ? undefined : new TaskDriver(wire, taskOptions, this.#timers, this.#clock);
    const hooks: CallHooks =
      task === undefined && observation === undefined
        ? wire === null
          ? this.#noWireHooks
          : (this.#wireHooks ??= this.#hooksOf(wire))
        : this.#callHooks(wire, task, observation);
    const call = new CancellableCall<R>({
      method,
      name: shown,
      options: resolved,
      signal,
      hooks,
      clock: this.#clock,
      timers: this.#timers,
      deadlines: this.#deadlines,
      ids: this.#ids,
      callId: key,
      owner: request.owner,
      promise: request.promise,
    });
    task?.attach(call);
    call.start();
    // The connection is gone (the server exited, the transport closed): say so, send nothing.
    if (wire === null || !wire.open) call.cancel("connection-closed");
    if (call.settled || wire === null) return call; // nothing was sent: aborted signal, or closed connection
    wire.register(call, key, task);
    // No signal for the SDK (but below, for a v2 client that answers input requests itself): an
    // AbortController per call would cost more than the rest of the wrapper together (the SDK adds
    // a listener to it), and the wire ends the SDK's wait itself.
    // A progress token is requested whenever progress can matter (case C05). The wire hands
    // progress to the call (and its onprogress) itself; the SDK's handler only gets the token sent.
    // Shared by every call (the SDK lines only read them): no object per pending call.
    // A caller that put its own progress token on the request keeps it (the SDK would put its own
    // in its place) and, through the SDK, gets its progress as it would without the library (a
    // framework's own progress handler: Mastra's `enableProgressTracking`; an outside tester's).
    // Not for an entry point that answers from the call itself (`promise: false`, the proxy's
    // MessageTransport): its caller's progress goes back by its own `onprogress`. Nor for a call
    // given an `onprogress` of the library's: the progress is that handler's, and the SDK, which
    // knows no such token, would report each one to `onerror` (without the library, the SDK puts
    // its own token in place of the caller's when it has an `onprogress`; an outside tester's).
    const ownToken = callerToken !== undefined;
    if (ownToken && request.promise !== false && resolved.onprogress === undefined) wire.progressUp(call);
    const progress = !ownToken && (resolved.onprogress !== undefined || resolved.resetTimeoutOnProgress);
    let sdkOptions =
      wire.skipsSdkTimer && call.limited
        ? progress
          ? SDK_OPTIONS_PROGRESS_SKIPPED
          : SDK_OPTIONS_SKIPPED
        : progress
          ? SDK_OPTIONS_PROGRESS
          : SDK_OPTIONS;
    // Not for a task-augmented call: the v2 SDK's abort closes its own request's stream on
    // 2026-07-28 Streamable HTTP, which must stay open for a CreateTaskResult after an early cancel
    // (an outside tester's: the task was lost); its task's input requests are the driver's.
    if (task === undefined && request.promise !== false && answersInputRequests(this.#init.client, wire.protocolVersion)) {
      sdkOptions = withInputAbort(sdkOptions, call);
    }
    let sent: Promise<unknown> | undefined;
    try {
      sent = invoke(marked(withMeta(params, observation), key), sdkOptions, call as CancellableCall<unknown>);
    } catch (error) {
      sent = Promise.reject(error);
    }
    if (sent !== undefined) follow(sent, call);
    return call;
  }

  /** A call's options over the defaults; an invalid option from an option hook is also warned about and recorded. */
  #resolve(request: RunRequest, options: CallOptions): ReturnType<typeof resolveCallOptions> {
    const refusal = (options as { [REFUSED_HOOK_VALUE]?: HookRefusal } | null)?.[REFUSED_HOOK_VALUE];
    const returned = refusal !== undefined && "returned" in refusal ? refusal.returned : undefined;
    const threw = refusal !== undefined && "threw" in refusal ? refusal.threw : undefined;
    try {
      if (refusal !== undefined && "option" in refusal) throw new InvalidOptionError(refusal.option, refusal.invalid);
      if (refusal !== undefined) throw new InvalidOptionError("callOptions", returned ?? `threw ${threw}`);
      return resolveCallOptions(this.#defaults, options);
    } catch (error) {
      if (request.optionsFrom === undefined || !(error instanceof InvalidOptionError)) throw error;
      const what = request.name === null ? request.method : `${request.method} "${request.name}"`;
      const mistake = new InvalidOptionError(
        error.option,
        threw !== undefined
          ? `${request.optionsFrom} threw ${threw}, so ${what} was not sent: fix the hook (the error is yours, not the server's)`
          : returned === undefined
            ? `${request.optionsFrom} returned an invalid option, so ${what} was not sent: ${error.message}`
            : `${request.optionsFrom} returned ${returned}, so ${what} was not sent: callOptions must return an object of call options, or null/undefined`,
      );
      warnMistakeOnce(mistake.message);
      this.#recordNotSent(request.method, shownName(request.name, request.params), Date.now(), {
        status: "failed",
        cancel: null,
        outcome: "not-sent",
        error: { code: mistake.code, message: mistake.message.slice(0, MAX_ERROR_MESSAGE_LENGTH) },
      });
      throw mistake;
    }
  }

  /**
   * Records a request its entry point cancelled before it ever reached the wire (the proxy's
   * requests held behind `notifications/initialized`: the client's cancel, their limit, the
   * proxy's end): status `cancelled`, outcome `not-sent`, mechanism `none`, `requestId` null.
   * `startedAt`: when the entry point took it (epoch ms). To memory and `onRecord`, as every
   * record. @internal
   */
  recordUnsent(method: string, params: Record<string, unknown>, trigger: CancelTrigger, reason: string, startedAt: number): void {
    const cancel = {
      trigger,
      reason: reason.slice(0, MAX_ERROR_MESSAGE_LENGTH),
      mechanism: "none" as const,
      sentAt: null,
      undelivered: null,
    };
    this.#recordNotSent(method, shownName(nameOf(params), params), startedAt, {
      status: "cancelled",
      cancel,
      outcome: "not-sent",
      error: null,
    });
  }

  /** A record of a request that never reached the wire, made here (see `#resolve`, `recordUnsent`): to memory and `onRecord`. */
  #recordNotSent(
    method: string,
    name: string | null,
    startedAt: number,
    outcome: Pick<RunRecord, "cancel" | "error"> &
      ({ status: "failed"; outcome: "not-sent"; cancel: null } | { status: "cancelled"; outcome: "not-sent"; error: null }),
  ): void {
    const now = Date.now();
    const key = nextCallId();
    this.#record(key, {
      callId: key,
      connectionId: this.#connectionId,
      sessionId: null,
      requestId: null,
      method,
      name,
      startedAt: isoTime(startedAt),
      settledAt: isoTime(now),
      elapsedMs: Math.max(0, now - startedAt),
      ...outcome,
      late: { results: 0, errors: 0, progress: 0 },
      progress: { count: 0, last: null },
      verification: null,
      revision: 0,
      summary: summarize(outcome),
    } as RunRecord);
  }

  /** A record made here (an invalid option from a hook): to memory and `onRecord`. */
  #record(key: number, next: RunRecord): void {
    frozenRecord(next);
    this.#ledger.put(key, { record: next });
    this.#onRecord?.(next);
  }

  /** The shared hooks of the calls on one wire that follow no task and have no observation. */
  #hooksOf(wire: Wire): CallHooks {
    return {
      cancel: this.#wireCancel,
      settled: (call) => wire.settled(call, call.callId),
      record: this.#onRecord,
      keep: this.#keep,
      rejected: this.#init.rejected,
    };
  }

  /** The hooks of a call that follows a task or has an observation (made per call, outside `run`'s scope). */
  #callHooks(wire: WireChoice, task: TaskDriver | undefined, observation: CallObservation | undefined): CallHooks {
    return {
      // The wire puts the cancel on the wire and tells the SDK locally that the request is over.
      cancel: task !== undefined ? (call, reason) => task.cancel(call, reason) : wire === null ? cancelNone : this.#wireCancel,
      settled:
        task !== undefined
          ? (call) => {
              task.stop();
              wire?.settled(call, call.callId);
            }
          : (call) => wire?.settled(call, call.callId),
      // Made outside `run`: a settled call's record outlives the call (tombstones keep it), and a
      // closure made there would keep that whole scope (params, call, controller) alive.
      record: this.#recorder(observation),
      keep: this.#keep,
      result: observation === undefined ? undefined : (value) => observeResult(observation, value),
      rejected: this.#init.rejected,
    };
  }

  /** Each revision, built, to `onRecord` and the observation; undefined when neither wants it. */
  #recorder(observation: CallObservation | undefined): ((next: RunRecord) => void) | undefined {
    const onRecord = this.#onRecord;
    if (observation === undefined) return onRecord;
    return (next) => {
      onRecord?.(next);
      observeRecord(observation, next);
    };
  }
}

/** What an entry point adds to the client-wide defaults when it opens a connection (see `openWire`). */
export interface WireExtras {
  /** The SDK client above the wire, if any: its private waits are ended directly, and its input handlers reached (src/sdk/private.ts). */
  readonly client?: object | undefined;
  /** The transport is already started and connected (attaching to a connected client). */
  readonly connected?: boolean | undefined;
  /** See `WireOptions.serverSpoke`. */
  readonly serverSpoke?: boolean | undefined;
  /**
   * Ends the entry point's own wait for a request the call already settled. Default: the SDK
   * client's (`client`); an entry point that answers its caller from the call's outcome itself
   * (the message-level transport) passes `() => true`.
   */
  readonly releaseWait?: ((id: RequestId) => boolean) | undefined;
  /** The transport's own `send` (attaching: the transport's member is about to become the wire's). */
  readonly send?: WireOptions["send"];
  /** The transport's own `close` (attaching: the transport's member is about to become the wire's). */
  readonly close?: WireOptions["close"];
  /** See `WireOptions.keepTaskTokens`. */
  readonly keepTaskTokens?: WireOptions["keepTaskTokens"];
}

/**
 * Opens a connection: the wire (its pipeline, `Wire.open`) over the adapter's transport, with the
 * client-wide defaults. Every entry point makes its connections here, and only here.
 */
export function openWire<T extends TransportLike>(
  adapter: CancellationAdapter<T>,
  defaults: CancellationOptions,
  extras: WireExtras = {},
): Wire<T> {
  const client = extras.client;
  const skipsSdkTimer = client !== undefined && sdkTimerSkipper(client, SDK_TIMEOUT_SKIPPED);
  const timers = defaults.timers ?? systemTimers;
  const clock = defaults.clock ?? monotonic;
  let wire: Wire<T> | undefined;
  wire = Wire.open(adapter, {
    maxTombstones: defaults.maxTombstones ?? DEFAULT_MAX_TOMBSTONES,
    onAnomaly: defaults.onAnomaly,
    // The v1 SDK's request() keeps the response handler of a request whose send failed.
    releaseFailedSends: client !== undefined && !isV2Client(client),
    connected: extras.connected ?? false,
    serverSpoke: extras.serverSpoke,
    forwardSdkReason: defaults.forwardAbortReason ?? false,
    releaseWait: extras.releaseWait ?? (client === undefined ? undefined : sdkWaitDropper(client)),
    // The SDK's own timer of each call's request (the longest delay: it never decides) is never
    // set up for the calls with a limit of their own, where the SDK lets it; else it is dropped as
    // the request goes out.
    skipsSdkTimer,
    dropTimer: client === undefined || skipsSdkTimer ? undefined : keptListDropper(sdkTimerDropper(client)),
    // 2026-07-28 tasks waiting for input: their inputRequests go to the SDK client's own handlers.
    inputDispatcher: client === undefined ? undefined : sdkInputDispatcher(client),
    // The SDK's own task-augmented requests: a late CreateTaskResult after a cancel is a task to
    // cancel, with the default task options (made only when such a request is cancelled first).
    taskDriver: (call) => {
      const driver = new TaskDriver(wire!, resolveTaskOptions(true), timers, clock);
      if (call !== null) driver.attach(call);
      return driver;
    },
    serverTakesTasks: client === undefined ? undefined : () => serverTakesTasks(client),
    send: extras.send,
    close: extras.close,
    keepTaskTokens: extras.keepTaskTokens,
  });
  return wire;
}

/**
 * Whether the server takes task-augmented `tools/call` requests, by the capabilities the client
 * read from it (the public `getServerCapabilities()` of both SDK lines): 2025-11-25
 * `tasks.requests.tools.call`, or the 2026-07-28 tasks extension (`extensions` naming
 * `io.modelcontextprotocol/tasks`, rule 36). `undefined` when they are not known (before the
 * handshake, or a client without the method).
 */
function serverTakesTasks(client: object): boolean | undefined {
  const read = (client as { getServerCapabilities?: unknown }).getServerCapabilities;
  if (typeof read !== "function") return undefined;
  let capabilities: unknown;
  try {
    capabilities = read.call(client);
  } catch {
    return undefined;
  }
  return typeof capabilities === "object" && capabilities !== null ? declaresTasks(capabilities) : undefined;
}

/** The MCP session id of the transport under a wire (Streamable HTTP `Mcp-Session-Id`), if any. */
function sessionIdOf(wire: Wire): () => string | undefined {
  const inner = wire.underlying as { sessionId?: unknown };
  return () => (typeof inner.sessionId === "string" ? inner.sessionId : undefined);
}

/**
 * Settles the call from the entry point's answer (an observation sees the result through the
 * call's hooks). Outside `run`, so what a pending call holds for it keeps only the call, not
 * `run`'s whole scope: the two callbacks are bound functions of the call (no closure scope per
 * call: 64 bytes less per pending call than two closures and their context).
 */
function follow<R>(sent: Promise<unknown>, call: CancellableCall<R>): void {
  sent.then(succeedFrom.bind(call), failFrom.bind(call));
}

/** The entry point's answer: the result. */
function succeedFrom(this: CancellableCall, value: unknown): void {
  this.succeed(value);
}

/** The entry point's answer: an error. Once its task exists the SDK's wait was ended locally: the driver settles the call. */
function failFrom(this: CancellableCall, error: unknown): void {
  if (this.task === undefined) this.fail(error);
}

/**
 * The params as sent: the caller's, copied, with the call's marker (a symbol key, never
 * serialised). The marker goes first: V8 gives `{ ...params, [marker]: key }` a hidden class of
 * its own for every call (the copy's map takes the new key without a transition it can share:
 * about 200 bytes per pending call in a map, its descriptors and a property array), while
 * `{ [marker]: key, ...params }` shares one. A marker already in the caller's params (a marked
 * object passed again) is overwritten, as the spread after it would have done.
 */
function marked(params: Record<string, unknown>, key: number): Record<string, unknown> {
  const copy: Record<string | symbol, unknown> = { [CALL_MARKER]: key, ...params };
  if (copy[CALL_MARKER] !== key) copy[CALL_MARKER] = key;
  return copy;
}

/** The request's `name`: a tool or prompt name, or a resource URI (limits and verifiers go by it; the record shows `shownName` of it). */
export function nameOf(params: Record<string, unknown>): string | null {
  return typeof params.name === "string" ? params.name : typeof params.uri === "string" ? params.uri : null;
}

/** The most characters of a record's `name`; a longer one is cut, ending in "…" (as error messages are cut). */
const MAX_NAME_LENGTH = 1_000;

/**
 * A URI (RFC 3986: `scheme:`, an authority after `//` with its credentials `user:pass@`, then a
 * path, a query, a fragment): what the record leaves out is the credentials, the query and the fragment.
 */
const URI_PARTS = /^([a-z][a-z0-9+.-]*:)(?:(\/\/)([^/?#]*@)?)?([^?#]*)([?#][\s\S]*)?$/i;

/**
 * The `name` a record (and a span) shows for a request: a tool or prompt name as it is; a
 * resource URI without its credentials, query and fragment (`https://host/doc?…`), where a
 * token travels (`?access_token=`), since records are meant to be safe to log; either cut at
 * 1,000 characters (a 1 MB `data:` URI made 1 MB records).
 */
export function shownName(name: string | null, params: Record<string, unknown>): string | null {
  if (name === null) return null;
  let shown = name;
  if (name !== params.name) {
    const parts = URI_PARTS.exec(name);
    if (parts !== null && (parts[3] !== undefined || parts[5] !== undefined)) {
      const [, scheme, slashes = "", credentials, rest, tail] = parts;
      shown = `${scheme}${slashes}${credentials === undefined ? "" : "…@"}${rest}${tail === undefined ? "" : `${tail[0]}…`}`;
    }
  }
  return shown.length > MAX_NAME_LENGTH ? `${shown.slice(0, MAX_NAME_LENGTH - 1)}…` : shown;
}
