import { McpCancellableError } from "./McpCancellableError.js";
import type { RunRecord } from "../types/record.js";

/**
 * The caller aborted the call's `signal`; the call was cancelled on the wire (rule 5).
 * `cause` is the signal's reason. Never reported as a timeout.
 */
export class CallCancelledError extends McpCancellableError {
  override readonly name = "CallCancelledError" as const;
  readonly code = "CANCELLED" as const;

  constructor(record: RunRecord, verification: Promise<RunRecord>, cause: unknown) {
    super(
      record.outcome === "not-sent"
        ? `${record.method} was cancelled by the caller before it was sent (never sent: its signal was already aborted)`
        : `${record.method} was cancelled by the caller (request id ${String(record.requestId)})`,
      record,
      verification,
      { cause },
    );
  }
}
