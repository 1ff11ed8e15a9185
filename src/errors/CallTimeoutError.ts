import { McpCancellableError } from "./McpCancellableError.js";
import type { RecordAtSettle } from "./McpCancellableError.js";
import type { RunRecord } from "../types/record.js";

/**
 * The call ran out of time and was cancelled on the wire (rules 14, 15, 17).
 * `code` is `REQUEST_TIMEOUT` for the idle timeout and `MAX_TOTAL_TIMEOUT` for the maximum
 * total timeout; `timeoutMs` is the limit that expired, in ms.
 */
export class CallTimeoutError extends McpCancellableError {
  override readonly name = "CallTimeoutError" as const;
  readonly code: "REQUEST_TIMEOUT" | "MAX_TOTAL_TIMEOUT";
  /** The limit that expired, in ms. */
  readonly timeoutMs: number;

  constructor(
    code: "REQUEST_TIMEOUT" | "MAX_TOTAL_TIMEOUT",
    timeoutMs: number,
    record: RunRecord | RecordAtSettle,
    verification?: Promise<RunRecord>,
  ) {
    super(
      code === "REQUEST_TIMEOUT"
        ? `${record.method} timed out after ${timeoutMs} ms (the idle timeout, timeoutMs; request id ${String(record.requestId)})`
        : `${record.method} exceeded its maximum total timeout of ${timeoutMs} ms (maxTotalTimeoutMs; request id ${String(record.requestId)})`,
      record,
      verification,
    );
    this.code = code;
    this.timeoutMs = timeoutMs;
  }
}
