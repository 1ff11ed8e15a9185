import { z } from "zod";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import type { RunRecord } from "../core/record.js";

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
 * (the seed's second rule: silence is not proof that the work stopped).
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
   * Caller's signal. Aborting it cancels the call on the wire and rejects it with
   * `CallCancelledError` (code `CANCELLED`, `cause` = the signal's reason). The library adds one
   * listener per call and removes it when the call settles, so a long-lived signal is safe.
   */
  signal?: AbortSignal;
  /**
   * Human-readable reason sent in `notifications/cancelled` (rule 2), for every trigger. At most
   * 1,000 characters are sent. Default: a sentence naming the trigger, such as
   * `"Request timed out after 30000 ms"`.
   */
  reason?: string;
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

/** Client-wide options: defaults for every call, plus where records and anomalies go. */
export interface CancellationOptions extends Omit<CallOptions, "signal" | "onprogress" | "verify"> {
  /** Called with each run record when its call settles, and again each time it is updated (late message, verification). */
  onRecord?: (record: RunRecord) => void;
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
  signal: AbortSignal | undefined;
  reason: string | undefined;
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
  const error = `must be an integer number of ms from ${min} to ${max}${infinity ? ", or Infinity" : ""}`;
  const finite = z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
  return infinity ? z.union([z.literal(Number.POSITIVE_INFINITY), finite], { error }) : finite;
}

const count = (min: 0 | 1) => {
  const error = `must be an integer from ${min} to ${MAX_TIMER_DELAY_MS}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(MAX_TIMER_DELAY_MS, { error });
};

/** A function option. */
export const fnOption = z.custom<(...args: never[]) => unknown>((value) => typeof value === "function", {
  error: "must be a function",
});

const callShape = {
  timeoutMs: msOption(1, MAX_TIMER_DELAY_MS, true),
  maxTotalTimeoutMs: msOption(1, MAX_TIMER_DELAY_MS, true),
  resetTimeoutOnProgress: z.boolean({ error: "must be true or false" }),
  signal: z.custom<AbortSignal>(
    (value) => typeof value === "object" && value !== null && "aborted" in value && "addEventListener" in value,
    { error: "must be an AbortSignal" },
  ),
  reason: z.string({ error: "must be a string" }),
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
    maxRecords: count(0),
    maxTombstones: count(1),
    clock: fnOption,
    timers: z.object({ setTimeout: fnOption, clearTimeout: fnOption }, { error: "must be { setTimeout, clearTimeout }" }),
  })
  .omit({ signal: true, onprogress: true, verify: true })
  .partial();

/**
 * Validates an options object against a strict zod schema, once, at the boundary; `undefined`
 * values mean "the default".
 * @param where the function named in the message, such as `"call options"`.
 * @throws {InvalidOptionError} for a non-object, an unknown option (naming every unknown one),
 *   or a bad value (naming the option and its bounds).
 */
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

export function parseOptions<T>(schema: z.ZodType<T>, options: unknown, where: string): T {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new InvalidOptionError("options", `${where} must be an object`);
  }
  const result = schema.safeParse(defined(options));
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const names = issue.keys.map((key) => `"${key}"`).join(", ");
    throw new InvalidOptionError(issue.keys[0]!, `${where}: unknown option${issue.keys.length > 1 ? "s" : ""} ${names}`);
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
export function parseCancellationOptions(options: CancellationOptions | undefined): CancellationOptions {
  if (options === undefined) return {};
  parseOptions(clientOptionsSchema, options, "withCancellation options");
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
  if (options !== undefined && !isSignalOnly(options)) parseOptions(callOptionsSchema, options, "call options");
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
    onprogress: options?.onprogress,
    verify: options?.verify,
    verifyTimeoutMs: options?.verifyTimeoutMs ?? defaults.verifyTimeoutMs ?? DEFAULT_VERIFY_TIMEOUT_MS,
    verifyDelayMs: options?.verifyDelayMs ?? defaults.verifyDelayMs ?? 0,
  };
}
