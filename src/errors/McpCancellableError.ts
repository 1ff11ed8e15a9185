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
    super(message, options);
    this.requestId = record.requestId;
    this.method = record.method;
    this.elapsedMs = record.elapsedMs;
    this.record = record;
    this.verification = verification;
  }
}
