import { z } from "zod";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import type { RunRecord } from "./record.js";

/**
 * The largest delay Node, browsers, Deno and Bun honour for `setTimeout`, in ms (2^31 - 1).
 * A larger delay, `Infinity` or `0` fires after about 1 ms in Node, so the library never passes
 * one to a timer: `Infinity` means "no timer at all" instead.
 */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/** Default idle timeout per request, in ms (the same as the MCP SDK's `DEFAULT_REQUEST_TIMEOUT_MSEC`). */
export const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * Default maximum total timeout per request, in ms: 10 minutes. It is never lower than the
 * call's own idle timeout, so a long `timeoutMs` is not silently cut (rule 17: a maximum
 * timeout always holds, even while progress keeps resetting the idle timeout).
 */
export const DEFAULT_MAX_TOTAL_TIMEOUT_MS = 600_000;

/** Default time a `verify` read may take, in ms. */
export const DEFAULT_VERIFY_TIMEOUT_MS = 10_000;

/** Default number of run records kept by the in-memory ledger. */
export const DEFAULT_MAX_RECORDS = 1_000;

/** Default number of settled request ids remembered so that late messages for them are dropped. */
export const DEFAULT_MAX_TOMBSTONES = 10_000;

/** The longest cancel reason put on the wire, and the longest error message kept in a run record, in characters; longer ones are cut. */
export const MAX_REASON_LENGTH = 1_000;

/** A progress notification's params, as received (rule 21). */
export interface Progress {
  progress: number;
  total?: number;
  message?: string;
}

/**
 * What a `verify` read found about the cancelled call's side effect:
 * `"applied"` (the effect happened) or `"not-applied"` (it did not).
 */
export type VerifyResult = "applied" | "not-applied";

/** Context handed to a `verify` read. */
export interface VerifyContext {
  /** The call's run record as it stands when verification starts. */
  readonly record: RunRecord;
  /** Aborted when `verifyTimeoutMs` elapses: pass it to the read so it stops too. */
  readonly signal: AbortSignal;
}

/**
 * A separate, idempotent read that checks whether a cancelled call's side effect happened
 * (the worked example's second rule: silence is not proof that the work stopped).
 */
export type VerifyFn = (context: VerifyContext) => VerifyResult | Promise<VerifyResult>;

/** Injectable timer functions (fake timers in tests). Read when each call starts. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Per-request options. Every duration is in milliseconds. */
export interface CallOptions {
  /**
   * Idle timeout, in ms: how long the call may wait for its response (or, with
   * `resetTimeoutOnProgress`, for the next progress notification). On expiry the call is
   * cancelled on the wire and rejects with `CallTimeoutError` (code `REQUEST_TIMEOUT`).
   * Integer from 1 to 2_147_483_647, or `Infinity` for no idle timeout. Rules 14-16.
   * @default 60_000
   */
  timeoutMs?: number;
  /**
   * Maximum total timeout, in ms, measured from the send: it holds even while progress keeps
   * resetting the idle timeout. On expiry the call is cancelled and rejects with
   * `CallTimeoutError` (code `MAX_TOTAL_TIMEOUT`). Integer from 1 to 2_147_483_647, or
   * `Infinity` for no cap. Rule 17.
   * @default max(600_000, timeoutMs)
   */
  maxTotalTimeoutMs?: number;
  /**
   * Whether a progress notification for this request restarts the idle timeout. When true a
   * progress token is always requested, even without `onprogress`. Only progress whose value
   * increases resets the clock (rule 21). Rule 17.
   * @default false
   */
  resetTimeoutOnProgress?: boolean;
  /**
   * Caller's signal, or several of them (for example a session-wide one and a per-call one:
   * `signal: [session.signal, userAbort.signal]`; the first to abort wins). Aborting cancels
   * the call on the wire and rejects it with `CallCancelledError` (code `CANCELLED`, `cause` =
   * the reason of the signal that aborted). One listener per signal, removed when the call
   * settles, so a long-lived signal is safe. Prefer the array to `AbortSignal.any([...])`: on
   * Node 20 a signal made by `AbortSignal.any` stays referenced from the long-lived signal it
   * was made from, so one per call accumulates for the life of the session (node#55351).
   */
  signal?: AbortSignal | readonly AbortSignal[];
  /**
   * Human-readable reason sent in `notifications/cancelled` (rule 2), for every trigger, exactly
   * as given. At most 1,000 characters are sent. Default: a sentence naming the trigger and
   * nothing else: `"Cancelled by the client"` (the signal aborted), `"Request timed out after
   * 30000 ms"` (idle timeout), `"Request exceeded its maximum total timeout of 120000 ms"`
   * (maximum total timeout). The signal's abort reason is never sent unless
   * `forwardAbortReason` is true.
   */
  reason?: string;
  /**
   * Whether an abort sends the signal's own reason (a non-empty string as it is, or an
   * `Error`'s message) as the cancel reason, to the server. Off by default: an abort reason is
   * private text (`abort(new Error("credentials revoked for connector acme"))`) and stays local,
   * as the error's `cause`. An explicit `reason` wins over it. Client-wide, it also lets the SDK's
   * own cancels (calls made on the SDK client directly) keep the SDK's reason text.
   * @default false
   */
  forwardAbortReason?: boolean;
  /** Called with each progress notification received while the call is live (rule 22). */
  onprogress?: (progress: Progress) => void;
  /**
   * Idempotent read run after the call is cancelled, to learn whether its side effect happened.
   * Its answer moves the record's `outcome` to `verified-applied`, `verified-not-applied`, or
   * `verify-failed` (threw, timed out, or answered something else). The call itself rejects at
   * once; await `error.verification` for the updated record.
   */
  verify?: VerifyFn;
  /**
   * Time the `verify` read may take, in ms; then its signal aborts and the outcome is
   * `verify-failed`. Integer from 1 to 2_147_483_647, or `Infinity`.
   * @default 10_000
   */
  verifyTimeoutMs?: number;
  /**
   * Wait before the `verify` read starts, in ms, so a server that cannot stop has time to
   * finish what it was doing. Integer from 0 to 2_147_483_647.
   * @default 0
   */
  verifyDelayMs?: number;
}

/** An anomaly seen on the wire: not an error of any call, but worth a log line. */
export interface Anomaly {
  kind:
    | "unknown-progress-token"
    | "non-increasing-progress"
    | "server-cancelled-client-request"
    | "invalid-message";
  message: string;
  requestId?: string | number;
}

/**
 * What an observer is told when a call starts, before its request is sent. `params` are the
 * caller's own (tool arguments included): an observer copies nothing out of them unless its
 * user opted in.
 */
export interface ObservedCall {
  /** The JSON-RPC method, such as `"tools/call"`. */
  readonly method: string;
  /** The tool, prompt or resource name (`params.name` or `params.uri`), or `null`. */
  readonly name: string | null;
  /** The request's params as the caller passed them. Read-only: to add to `_meta`, return `meta`. */
  readonly params: Readonly<Record<string, unknown>>;
  /** The SDK client the calls go through (v1 or v2), for facts such as the negotiated protocol version. */
  readonly client: unknown;
  /** The SDK transport underneath (not the decorator), for facts such as `sessionId`. */
  readonly transport: unknown;
  /** The protocol version the server answered `initialize` with, as the library saw it pass; `undefined` before that (or with no `initialize`: sessionless 2026-07-28). */
  readonly protocolVersion?: string | undefined;
}

/** What an observer keeps for one call. Every member is optional. */
export interface CallObservation {
  /**
   * Entries added to the request's `params._meta` (trace context: `traceparent`, `tracestate`,
   * `baggage`), over the caller's own `_meta` entries of the same name.
   */
  readonly meta?: Readonly<Record<string, string>> | undefined;
  /** The SDK delivered this result (before the record of the settle). Not called for errors or cancels. */
  result?(value: unknown): void;
  /** Each revision of the call's run record: at the settle (revision 0), then at each late message or verification. */
  record?(record: RunRecord): void;
}

/**
 * An extension point for instrumentation (`mcp-cancellable/otel` is one): told when each call
 * starts, then of its result and of each revision of its run record. Called synchronously; a
 * throwing observer is ignored and never changes how a call settles.
 */
export interface CallObserver {
  /** A call is about to be sent. Return what to keep for it, or `undefined` to watch nothing. */
  start(call: ObservedCall): CallObservation | undefined;
}

/** Client-wide options: defaults for every call, plus where records and anomalies go. */
export interface CancellationOptions extends Omit<CallOptions, "signal" | "onprogress" | "verify"> {
  /** Called with each run record when its call settles, and again each time it is updated (late message, verification). */
  onRecord?: (record: RunRecord) => void;
  /**
   * Watches every call: started before the request is sent (it may add trace context to
   * `params._meta`), then told of the result and of each run record revision. Used by
   * `otelRecorder()` from `mcp-cancellable/otel`.
   */
  observer?: CallObserver;
  /** Called for wire anomalies: progress for a token never issued, a server cancelling a client request (rule 12), non-increasing progress (rule 21). */
  onAnomaly?: (anomaly: Anomaly) => void;
  /**
   * How many run records the in-memory ledger (`records()`) keeps; older ones are dropped.
   * Integer from 0 to 2_147_483_647.
   * @default 1_000
   */
  maxRecords?: number;
  /**
   * How many settled request ids are remembered so late messages for them are dropped before
   * the SDK sees them (oldest forgotten first). Integer from 1 to 2_147_483_647.
   * @default 10_000
   */
  maxTombstones?: number;
  /** Monotonic clock in ms (default `performance.now`). For tests. */
  clock?: () => number;
  /** Timer functions (default the global ones, read at each call). For tests. */
  timers?: Timers;
}

/** Per-call options after validation and merging over the client-wide defaults. */
export interface ResolvedCallOptions {
  timeoutMs: number;
  maxTotalTimeoutMs: number;
  resetTimeoutOnProgress: boolean;
  signal: AbortSignal | readonly AbortSignal[] | undefined;
  reason: string | undefined;
  forwardAbortReason: boolean;
  onprogress: ((progress: Progress) => void) | undefined;
  verify: VerifyFn | undefined;
  verifyTimeoutMs: number;
  verifyDelayMs: number;
}

/**
 * A duration option in ms, with its bounds in its own error message: an integer from `min` to
 * `max`, and `Infinity` (no limit) where `infinity` says so.
 */
export function msOption(min: number, max: number, infinity: boolean) {
  const bounds = `must be an integer number of ms from ${min} to ${max}${infinity ? ", or Infinity" : ""}`;
  const error = (issue: { input?: unknown }): string => `${bounds}; received ${received(issue.input)}`;
  const finite = z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
  return infinity ? z.union([z.literal(Number.POSITIVE_INFINITY), finite], { error }) : finite;
}

/** A refused value as an error message quotes it: `30.5`, `NaN`, `"30s"` (cut at 40 characters), `a value of type boolean`. @internal */
export function received(value: unknown): string {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 39)}…` : value);
  return value === null ? "null" : `a value of type ${typeof value}`;
}

/**
 * Below this a duration is more likely seconds given by mistake (`timeoutMs: 30`) than a real
 * budget, in ms: `timeoutMs` and `maxTotalTimeoutMs` under it are accepted, with a warning
 * (`process.emitWarning`, name `McpCancellableWarning`), once per option and process.
 */
export const SHORT_DURATION_WARNING_MS = 100;

const warned = new Set<string>();

function warnIfShort(option: "timeoutMs" | "maxTotalTimeoutMs", value: number | undefined): void {
  if (value === undefined || value >= SHORT_DURATION_WARNING_MS || warned.has(option)) return;
  warned.add(option);
  const text =
    `${option} is ${value} ms. Durations are in milliseconds: for ${value} seconds write ${option}: ${value * 1000}. ` +
    `(Shown once per option.)`;
  const proc = (globalThis as { process?: { emitWarning?: (text: string, options: { type: string; code: string }) => void } }).process;
  if (typeof proc?.emitWarning === "function") {
    proc.emitWarning(text, { type: "McpCancellableWarning", code: "MCP_CANCELLABLE_SHORT_DURATION" });
  } else {
    console.warn(`McpCancellableWarning: ${text}`);
  }
}

const count = (min: 0 | 1) => {
  const error = `must be an integer from ${min} to ${MAX_TIMER_DELAY_MS}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(MAX_TIMER_DELAY_MS, { error });
};

/** A function option. */
export const fnOption = z.custom<(...args: never[]) => unknown>((value) => typeof value === "function", {
  error: "must be a function",
});

function isAbortSignal(value: unknown): value is AbortSignal {
  return typeof value === "object" && value !== null && "aborted" in value && "addEventListener" in value;
}

const callShape = {
  timeoutMs: msOption(1, MAX_TIMER_DELAY_MS, true),
  maxTotalTimeoutMs: msOption(1, MAX_TIMER_DELAY_MS, true),
  resetTimeoutOnProgress: z.boolean({ error: "must be true or false" }),
  signal: z.custom<AbortSignal | readonly AbortSignal[]>(
    (value) => (Array.isArray(value) ? value.every(isAbortSignal) : isAbortSignal(value)),
    { error: "must be an AbortSignal or an array of AbortSignals" },
  ),
  reason: z.string({ error: "must be a string" }),
  forwardAbortReason: z.boolean({ error: "must be true or false" }),
  onprogress: fnOption,
  verify: fnOption,
  verifyTimeoutMs: msOption(1, MAX_TIMER_DELAY_MS, true),
  verifyDelayMs: msOption(0, MAX_TIMER_DELAY_MS, false),
} as const;

/** @internal */
export const callOptionsSchema = z.strictObject(callShape).partial();

const clientOptionsSchema = z
  .strictObject({
    ...callShape,
    onRecord: fnOption,
    onAnomaly: fnOption,
    observer: z.object({ start: fnOption }, { error: "must be an object with a start(call) method" }),
    maxRecords: count(0),
    maxTombstones: count(1),
    clock: fnOption,
    timers: z.object({ setTimeout: fnOption, clearTimeout: fnOption }, { error: "must be { setTimeout, clearTimeout }" }),
  })
  .omit({ signal: true, onprogress: true, verify: true })
  .partial();

/**
 * True for call options that hold nothing but an `AbortSignal` (or `signal: undefined`), the
 * common per-call shape: valid without a zod parse. Anything else goes through the schema.
 * @internal
 */
export function isSignalOnly(options: unknown): boolean {
  if (typeof options !== "object" || options === null || Array.isArray(options)) return false;
  for (const key in options) if (key !== "signal") return false;
  const { signal } = options as { signal?: unknown };
  return signal === undefined || (typeof AbortSignal === "function" && signal instanceof AbortSignal);
}

/** The SDK's request option names a caller may pass by habit, and this library's name for each. */
const SDK_OPTION_NAMES: Record<string, string> = { timeout: "timeoutMs", maxTotalTimeout: "maxTotalTimeoutMs" };

/**
 * Validates an options object against a strict zod schema, once, at the boundary; `undefined`
 * values mean "the default".
 * @param where the function named in the message, such as `"call options"`.
 * @throws {InvalidOptionError} for a non-object, an unknown option (naming every unknown one,
 *   with the option meant where it is the SDK's name or differs only in case, such as
 *   `timeoutMS`), or a bad value (naming the option and its bounds).
 */
export function parseOptions<T>(schema: z.ZodType<T>, options: unknown, where: string, sdkNames?: Record<string, string>): T {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new InvalidOptionError("options", `${where} must be an object`);
  }
  const result = schema.safeParse(defined(options));
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const names = issue.keys.map((key) => `"${key}"`).join(", ");
    const known = Object.keys((schema as { shape?: Record<string, unknown> }).shape ?? {});
    const hints = issue.keys.flatMap((key) => {
      if (sdkNames !== undefined && Object.hasOwn(sdkNames, key)) return [`"${sdkNames[key]}" instead of the SDK's "${key}"`];
      const meant = known.find((name) => name.toLowerCase() === key.toLowerCase());
      return meant === undefined ? [] : [`"${meant}" (not "${key}")`];
    });
    const hint = hints.length > 0 ? `; use ${hints.join(", ")}` : "";
    throw new InvalidOptionError(issue.keys[0]!, `${where}: unknown option${issue.keys.length > 1 ? "s" : ""} ${names}${hint}`);
  }
  const option = issue.path.length > 0 ? issue.path.join(".") : "options";
  throw new InvalidOptionError(option, `${where}: "${option}" ${issue.message}`);
}

/** Drops keys whose value is `undefined`, so `{timeoutMs: undefined}` means "use the default". */
function defined<T extends object>(options: T): T {
  let copy: Record<string, unknown> | undefined;
  for (const key in options) {
    if ((options as Record<string, unknown>)[key] === undefined) {
      copy ??= { ...options } as Record<string, unknown>;
      delete copy[key];
    }
  }
  return (copy as T | undefined) ?? options;
}

/**
 * Validates client-wide options once, at the boundary.
 * @throws {InvalidOptionError} naming the first option at fault.
 */
export function parseCancellationOptions(
  options: CancellationOptions | undefined,
  where = "withCancellation options",
): CancellationOptions {
  if (options === undefined) return {};
  parseOptions(clientOptionsSchema, options, where, SDK_OPTION_NAMES);
  warnIfShort("timeoutMs", options.timeoutMs);
  warnIfShort("maxTotalTimeoutMs", options.maxTotalTimeoutMs);
  return options;
}

/**
 * Validates one call's options and merges them over the client-wide defaults.
 * @throws {InvalidOptionError} naming the first option at fault.
 */
export function resolveCallOptions(
  defaults: CancellationOptions,
  options: CallOptions | undefined,
): ResolvedCallOptions {
  if (options !== undefined && !isSignalOnly(options)) {
    parseOptions(callOptionsSchema, options, "call options", SDK_OPTION_NAMES);
    warnIfShort("timeoutMs", (options as CallOptions).timeoutMs);
    warnIfShort("maxTotalTimeoutMs", (options as CallOptions).maxTotalTimeoutMs);
  }
  const timeoutMs = options?.timeoutMs ?? defaults.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return {
    timeoutMs,
    maxTotalTimeoutMs:
      options?.maxTotalTimeoutMs ??
      defaults.maxTotalTimeoutMs ??
      Math.max(DEFAULT_MAX_TOTAL_TIMEOUT_MS, timeoutMs),
    resetTimeoutOnProgress: options?.resetTimeoutOnProgress ?? defaults.resetTimeoutOnProgress ?? false,
    signal: options?.signal,
    reason: options?.reason ?? defaults.reason,
    forwardAbortReason: options?.forwardAbortReason ?? defaults.forwardAbortReason ?? false,
    onprogress: options?.onprogress,
    verify: options?.verify,
    verifyTimeoutMs: options?.verifyTimeoutMs ?? defaults.verifyTimeoutMs ?? DEFAULT_VERIFY_TIMEOUT_MS,
    verifyDelayMs: options?.verifyDelayMs ?? defaults.verifyDelayMs ?? 0,
  };
}
