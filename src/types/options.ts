import type { RunRecord } from "./record.js";

// The option types only. Their schemas, defaults, warnings and merging are in src/options/.

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

/** Context handed to a verifier given by tool name (`verifiers`): the `verify` context plus the call it checks. */
export interface ToolVerifyContext extends VerifyContext {
  /** The tool's name, as called (`params.name`). */
  readonly name: string;
  /** The tool call's arguments, as sent (`params.arguments`; `{}` when it had none). */
  readonly arguments: Readonly<Record<string, unknown>>;
}

/** A verifier for the tool calls of one tool (or of every tool: `"*"`). See `CancellationOptions.verifiers`. */
export type ToolVerifier = (context: ToolVerifyContext) => VerifyResult | Promise<VerifyResult>;

/**
 * Verifiers by tool name: `{ generate_report: (ctx) => ..., "*": (ctx) => ... }`. `"*"` is the
 * verifier of every tool without its own.
 */
export type Verifiers = Readonly<Record<string, ToolVerifier>>;

/**
 * Whether a tool call cancelled by a limit (a timeout, the connection lost), whose verification
 * runs, answers once the verification is done with a tool result that says what it found
 * (`isError: true`: `content` holds one text) instead of rejecting with the library's error:
 *
 * - `true`: the library's text, such as `The tool call "generate_quarterly_summary" was cancelled
 *   after 30.0 s (timed out); a check afterwards found that its effect was applied (applied at
 *   2.0 s). Do not call it again to repeat it.`
 * - a function of the final run record: your own text, returned synchronously (a promise is not
 *   waited for: the library's text is used; a throw or a rejection falls back to it too; each
 *   such failure is warned about once per distinct message, `McpCancellableWarning`
 *   `MCP_CANCELLABLE_HOOK_THREW`).
 * - `false` (the default): the error at once; the verification goes on after (`error.verification`).
 *
 * A caller's own abort is never waited for: the run is being stopped. The wait is bounded by the
 * verification's own limits (`verifyDelayMs`, `verifyWindowMs`, `verifyTimeoutMs` per read).
 */
export type AwaitVerification = boolean | ((record: RunRecord) => string);

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
  timeoutMs?: number | undefined;
  /**
   * Maximum total timeout, in ms, measured from the send: it holds even while progress keeps
   * resetting the idle timeout. On expiry the call is cancelled and rejects with
   * `CallTimeoutError` (code `MAX_TOTAL_TIMEOUT`). Integer from 1 to 2_147_483_647, or
   * `Infinity` for no cap. Rule 17.
   * @default max(600_000, timeoutMs)
   */
  maxTotalTimeoutMs?: number | undefined;
  /**
   * Whether a progress notification for this request restarts the idle timeout. When true a
   * progress token is always requested, even without `onprogress`. Only progress whose value
   * increases resets the clock (rule 21). Rule 17.
   * @default false
   */
  resetTimeoutOnProgress?: boolean | undefined;
  /**
   * In ms: how long waiting for the client's own answer may pause the idle timeout. While the
   * server waits for an answer to a request it sent the client (`elicitation/create`: a person
   * filling a form; `sampling/createMessage`; `roots/list`), the calls pending on that connection
   * are not silent on the server's part: their idle timeout is paused (progress does not move
   * it), and the wait is bounded by this many ms from the request's arrival, whether that comes
   * sooner or later than the idle timeout would have; the answer starts the idle timeout again in
   * full. Past the bound the call times out (`CallTimeoutError`, `REQUEST_TIMEOUT`, `limitName`
   * and its reason naming this option). A call with no idle timeout (`timeoutMs` `Infinity`)
   * gets no bound from a wait. The maximum total timeout always holds. Trade-off: a longer bound waits longer for a person, and for a server
   * request nobody answers. Integer from 1 to 2_147_483_647, or `Infinity` (then only the maximum
   * total timeout bounds the wait). Rules 14, 17.
   * @default 300_000
   */
  clientWaitTimeoutMs?: number | undefined;
  /**
   * Caller's signal, or several of them (for example a session-wide one and a per-call one:
   * `signal: [session.signal, userAbort.signal]`; the first to abort wins). Aborting cancels
   * the call on the wire and rejects it with `CallCancelledError` (code `CANCELLED`, `cause` =
   * the reason of the signal that aborted). One listener per signal, removed when the call
   * settles, so a long-lived signal is safe. The array costs less than `AbortSignal.any([...])`
   * (one composed signal per call); on Node 20, where each composed signal leaves an entry on
   * the long-lived one it was made from for that one's life (node#55351), the library sweeps
   * the entries of collected ones off it as it links a call's signal. An
   * empty array is no signal (as `AbortSignal.any([])` never aborts): a list built per call may
   * come out empty. Anything else is refused (`InvalidOptionError` naming `signal`).
   */
  signal?: AbortSignal | readonly AbortSignal[] | undefined;
  /**
   * Human-readable reason sent in `notifications/cancelled` (rule 2), for every trigger, exactly
   * as given. At most 1,000 characters are sent. Default: a sentence naming the trigger and
   * nothing else: `"Cancelled by the client"` (the signal aborted), `"Request timed out after
   * 30000 ms"` (idle timeout), `"Request exceeded its maximum total timeout of 120000 ms"`
   * (maximum total timeout). The signal's abort reason is never sent unless
   * `forwardAbortReason` is true.
   */
  reason?: string | undefined;
  /**
   * Whether an abort sends the signal's own reason (a non-empty string as it is, or an
   * `Error`'s message) as the cancel reason, to the server. Off by default: an abort reason is
   * private text (`abort(new Error("credentials revoked for connector acme"))`) and stays local,
   * as the error's `cause`. An explicit `reason` wins over it. Client-wide, it also lets the SDK's
   * own cancels (calls made on the SDK client directly) keep the SDK's reason text.
   * @default false
   */
  forwardAbortReason?: boolean | undefined;
  /** Called with each progress notification received while the call is live (rule 22). */
  onprogress?: ((progress: Progress) => void) | undefined;
  /**
   * Idempotent read run after the call is cancelled, to learn whether its side effect happened.
   * Its answer moves the record's `outcome` to `verified-applied`, `verified-not-applied`, or
   * `verify-failed` (threw, timed out, or answered something else). With `verifyWindowMs` it is
   * read again until the window ends: `verified-not-applied` only when the window ended with
   * nothing found; `record.verification.reads` says what each read found and when. The call
   * itself rejects at once; await `error.verification` for the updated record.
   */
  verify?: VerifyFn | undefined;
  /**
   * Time the `verify` read may take, in ms; then its signal aborts and the outcome is
   * `verify-failed`. Integer from 1 to 2_147_483_647, or `Infinity`.
   * @default 10_000
   */
  verifyTimeoutMs?: number | undefined;
  /**
   * Wait before the `verify` read starts, in ms, so a server that cannot stop has time to
   * finish what it was doing. Integer from 0 to 2_147_483_647; no `Infinity`.
   * @default 0
   */
  verifyDelayMs?: number | undefined;
  /**
   * How long `verify` keeps reading, in ms from the start of its first read: a read that finds
   * "not-applied" is only "not applied as of then", so it is read again every
   * `verifyIntervalMs`, and once more when the window ends, until a read finds "applied" (the
   * outcome is then `verified-applied` at once) or the window ends with nothing found
   * (`verified-not-applied`; a last read that failed leaves `verify-failed`). Integer from 0 to
   * 2_147_483_647; 0 is a single read. No `Infinity`: a window must end.
   * Throws `InvalidOptionError` (option `verifyWindowMs`) otherwise.
   * @default 0 (`DEFAULT_VERIFY_WINDOW_MS`)
   * @example `{ verify, verifyDelayMs: 2_000, verifyWindowMs: 10_000, verifyIntervalMs: 2_000 }`
   */
  verifyWindowMs?: number | undefined;
  /**
   * Within `verifyWindowMs`, the time from the start of one `verify` read to the start of the
   * next, in ms (a read that takes longer is followed at once). Integer from 1 to 2_147_483_647;
   * no `Infinity`.
   * Throws `InvalidOptionError` (option `verifyIntervalMs`) otherwise.
   * @default 1_000 (`DEFAULT_VERIFY_INTERVAL_MS`)
   */
  verifyIntervalMs?: number | undefined;
}

/** An anomaly seen on the wire: not an error of any call, but worth a log line. */
export interface Anomaly {
  kind: "unknown-progress-token" | "non-increasing-progress" | "server-cancelled-client-request" | "invalid-message";
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
  /** The tool or prompt name (`params.name`), or the resource URI (`params.uri`) as the record shows it (no credentials, query or fragment; at most 1,000 characters), or `null`. */
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
  /**
   * Verifiers by tool name, for every `tools/call` on this connection, whoever makes it (the
   * framework's own tools included): `{ generate_report: ({ name, arguments, record, signal }) =>
   * ..., "*": ... }`. After a tool call is cancelled, its tool's verifier (else `"*"`'s) is read
   * as a per-call `verify` would be, with the same options (`verifyDelayMs`, `verifyTimeoutMs`,
   * `verifyWindowMs`, `verifyIntervalMs`); a per-call `verify` wins over it. Each value must be a
   * function; a bad one is refused as `InvalidOptionError` naming `verifiers.<tool>`.
   */
  verifiers?: Verifiers | undefined;
  /**
   * For tool calls on this connection with a verification (a per-call `verify`, or `verifiers`):
   * wait for it when a limit cancelled the call, and answer with what it found (see
   * `AwaitVerification`). Per call where an entry point takes per-call options (`callOptions`).
   * @default false
   */
  awaitVerification?: AwaitVerification | undefined;
  /** Called with each run record when its call settles, and again each time it is updated (late message, verification). */
  onRecord?: ((record: RunRecord) => void) | undefined;
  /**
   * Watches every call: started before the request is sent (it may add trace context to
   * `params._meta`), then told of the result and of each run record revision. Used by
   * `otelRecorder()` from `mcp-cancellable/otel`.
   */
  observer?: CallObserver | undefined;
  /** Called for wire anomalies: progress for a token never issued, a server cancelling a client request (rule 12), non-increasing progress (rule 21). */
  onAnomaly?: ((anomaly: Anomaly) => void) | undefined;
  /**
   * How many run records the in-memory ledger (`records()`) keeps; older ones are dropped.
   * Integer from 0 to 2_147_483_647.
   * @default 1_000
   */
  maxRecords?: number | undefined;
  /**
   * How many settled request ids are remembered so late messages for them are dropped before
   * the SDK sees them (oldest forgotten first), each counted on its call's record (rules 8, 11).
   * A tombstone holds a cancelled call's record (about 400 B); an answered call's, when no
   * `onRecord` or `observer` reads its revisions, only its number (under 100 B): its late
   * messages then revise the record while `records()` still holds it. Integer from 1 to
   * 2_147_483_647.
   * @default 10_000
   */
  maxTombstones?: number | undefined;
  /** Monotonic clock in ms (default `performance.now`). For tests. */
  clock?: (() => number) | undefined;
  /** Timer functions (default the global ones, read at each call). For tests. */
  timers?: Timers | undefined;
}

/** The names of the options a call's limits came from (see `ResolvedCallOptions.limitNames`). */
export interface LimitNames {
  readonly timeoutMs?: string | undefined;
  readonly maxTotalTimeoutMs?: string | undefined;
}

/** Per-call options after validation and merging over the client-wide defaults. */
export interface ResolvedCallOptions {
  timeoutMs: number;
  maxTotalTimeoutMs: number;
  /**
   * The options `timeoutMs` and `maxTotalTimeoutMs` came from, when not the library's own (the
   * SDK request options `timeout` and `maxTotalTimeout` a framework passed, mapped by
   * `attachCancellation` or `sdkClient`): the timeout error names them. Default: the library's names.
   */
  limitNames?: LimitNames | undefined;
  resetTimeoutOnProgress: boolean;
  clientWaitTimeoutMs: number;
  signal: AbortSignal | readonly AbortSignal[] | undefined;
  reason: string | undefined;
  forwardAbortReason: boolean;
  onprogress: ((progress: Progress) => void) | undefined;
  verify: VerifyFn | undefined;
  verifyTimeoutMs: number;
  verifyDelayMs: number;
  verifyWindowMs: number;
  verifyIntervalMs: number;
}
