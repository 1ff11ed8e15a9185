import type { CallOutcome, RunRecord } from "../types/record.js";

/** Stable string codes of the library's errors (never JSON-RPC numbers: rule 3). */
export type McpCancellableErrorCode = "REQUEST_TIMEOUT" | "MAX_TOTAL_TIMEOUT" | "CANCELLED" | "CONNECTION_CLOSED" | "INVALID_OPTION";

/**
 * What a settled call hands its error instead of a built record: the few facts the error's
 * fields and message need, and the record at the settle (revision 0), built when it is read.
 * @internal
 */
export interface RecordAtSettle {
  readonly requestId: string | number | null;
  readonly method: string;
  readonly elapsedMs: number;
  readonly outcome: CallOutcome;
  /** The run record at the settle (revision 0), built on first read. */
  readonly initial: RunRecord;
}

/**
 * The end of a cancelled tool call's message, for whoever reads it next (often a model, handed the
 * error as the tool's text by its framework): what is known of its outcome at the settle. Whether
 * it ran is not known (`unverified`), so it is checked before it is made again; or it ran: the
 * server's answer was read as the call was given up, after its limit or its caller's abort, and
 * discarded (`late-result-discarded`; an outside tester's: the message said only "was cancelled").
 * Empty for other methods and for a call that was never sent. @internal
 */
export function outcomeNote(record: { readonly method: string; readonly outcome: CallOutcome }): string {
  if (record.method !== "tools/call") return "";
  if (record.outcome === "unverified") return "; whether it ran is unknown (outcome unverified): check before calling it again";
  if (record.outcome === "late-result-discarded")
    return "; it ran: the server's answer came as the call was given up and was discarded (late result discarded): check its effects before calling it again";
  if (record.outcome === "task-completed-anyway")
    return "; it ran: its task had completed as the call was given up, and its result was not returned (task completed anyway): check its effects before calling it again";
  if (record.outcome === "task-failed") return "; its task had failed as the call was given up (task failed)";
  if (record.outcome === "task-cancelled") return "; its task had already been cancelled as the call was given up (task cancelled)";
  return "";
}

/**
 * True for the reason `AbortSignal.timeout()` aborts with (a `DOMException` named `TimeoutError`),
 * or any error so named. A reason whose `name` cannot be read (a getter that throws, a revoked
 * `Proxy`) is not one: read in the signal's `abort` listener, a throw there would be an uncaught
 * exception, the call never settled (an outside tester's). @internal
 */
export function isTimeoutReason(reason: unknown): boolean {
  if (typeof reason !== "object" || reason === null) return false;
  try {
    return (reason as { name?: unknown }).name === "TimeoutError";
  } catch {
    return false;
  }
}

/**
 * Base class of the errors a cancelled call rejects with. Each carries the call's run record
 * as it stood when the call settled, and `verification`: a promise of the record once a
 * `verify` read (if any) has finished. It never rejects.
 *
 * `stack` is the `name: message` line alone, with no frames. These errors are made where a call
 * settles: in a timer, in the signal's `abort` listener, in the transport's close handler, never
 * in the caller's own code, so their frames were only the library's and Node's (a timeout's
 * stack was six internal frames), and capturing them was the largest cost of ours on the cancel
 * path: 10,000 v1 calls aborted at once settled in 513 ms with them and 169 ms without, and a
 * cancel in sequence cost 45 µs against 39 µs (bench/NOTES.md). Where the cancel came from is
 * kept where it is known: an abort's `cause` is the signal's reason, whose own stack shows the
 * `abort()` call.
 */
export abstract class McpCancellableError extends Error {
  abstract readonly code: McpCancellableErrorCode;
  /** The JSON-RPC request id, or `null` when none was assigned (the call ended before the send). A request that got an id but provably never reached the wire keeps it, with outcome `not-sent`. */
  readonly requestId: string | number | null;
  /** The JSON-RPC method, such as `"tools/call"`. */
  readonly method: string;
  /** Time from the send to the settle, in ms. */
  readonly elapsedMs: number;
  readonly #settled: RunRecord | RecordAtSettle;
  #verification: Promise<RunRecord> | undefined;

  /**
   * @param record the run record at the settle, or the settled call's facts (built into it when read).
   * @param verification resolves with the final record once verification finished; default: the record at the settle.
   */
  constructor(message: string, record: RunRecord | RecordAtSettle, verification?: Promise<RunRecord>, options?: ErrorOptions) {
    const { stackTraceLimit } = Error;
    Error.stackTraceLimit = 0;
    try {
      super(message, options);
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    this.requestId = record.requestId;
    this.method = record.method;
    this.elapsedMs = record.elapsedMs;
    this.#settled = record;
    this.#verification = verification;
  }

  /** The run record at the moment the call settled. */
  get record(): RunRecord {
    const settled = this.#settled;
    return "initial" in settled ? settled.initial : settled;
  }

  /** Resolves with the final record once verification (if any) has finished; never rejects. */
  get verification(): Promise<RunRecord> {
    return (this.#verification ??= Promise.resolve(this.record));
  }
}
