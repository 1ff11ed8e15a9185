import { McpCancellableError } from "./McpCancellableError.js";
import type { RecordAtSettle } from "./McpCancellableError.js";
import type { RunRecord } from "../types/record.js";

/**
 * The caller aborted the call's `signal`; the call was cancelled on the wire (rule 5).
 * `cause` is the signal's reason. Never reported as a timeout.
 */
export class CallCancelledError extends McpCancellableError {
  override readonly name = "CallCancelledError" as const;
  readonly code = "CANCELLED" as const;

  constructor(record: RunRecord | RecordAtSettle, verification: Promise<RunRecord> | undefined, cause: unknown) {
    // A signal from AbortSignal.timeout() (an agent framework's own timeout, often) aborts with a
    // TimeoutError: still the caller's signal, and said so, not "cancelled" as if by hand.
    const by = isTimeoutReason(cause) ? "the caller's signal (its AbortSignal.timeout fired)" : "the caller";
    super(
      record.outcome === "not-sent"
        ? `${record.method} was cancelled by ${by} before it was sent (never sent: its signal was already aborted)`
        : `${record.method} was cancelled by ${by} (request id ${String(record.requestId)})`,
      record,
      verification,
      { cause },
    );
  }
}

/** The reason `AbortSignal.timeout()` aborts with: a `DOMException` named `TimeoutError`. */
function isTimeoutReason(reason: unknown): boolean {
  return typeof reason === "object" && reason !== null && (reason as { name?: unknown }).name === "TimeoutError";
}
