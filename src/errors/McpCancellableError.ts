import type { RunRecord } from "../types/record.js";

/** Stable string codes of the library's errors (never JSON-RPC numbers: rule 3). */
export type McpCancellableErrorCode =
  | "REQUEST_TIMEOUT"
  | "MAX_TOTAL_TIMEOUT"
  | "CANCELLED"
  | "CONNECTION_CLOSED"
  | "INVALID_OPTION";

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
  /** The run record at the moment the call settled. */
  readonly record: RunRecord;
  /** Resolves with the final record once verification (if any) has finished; never rejects. */
  readonly verification: Promise<RunRecord>;

  constructor(message: string, record: RunRecord, verification: Promise<RunRecord>, options?: ErrorOptions) {
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
    this.record = record;
    this.verification = verification;
  }
}
