import { McpCancellableError, outcomeNote } from "./McpCancellableError.js";
import type { RecordAtSettle } from "./McpCancellableError.js";
import type { RunRecord } from "../types/record.js";

/**
 * The caller aborted the call's `signal`; the call was cancelled on the wire (rule 5).
 * `cause` is the signal's reason. Never reported as a timeout; and a signal that timed out (its
 * reason a `TimeoutError`: `AbortSignal.timeout`, a framework's own timeout) is a timeout, not
 * this (`CallTimeoutError`, trigger `timeout`).
 */
export class CallCancelledError extends McpCancellableError {
  override readonly name = "CallCancelledError" as const;
  readonly code = "CANCELLED" as const;

  constructor(record: RunRecord | RecordAtSettle, verification: Promise<RunRecord> | undefined, cause: unknown) {
    super(
      record.outcome === "not-sent"
        ? // Never sent: before its request was made (no id: the signal aborted then, or already at
          // the call), or with an id, still waiting to be written (the stdio queue behind a full
          // pipe) and dropped. Not "its signal was already aborted" for both (an audit's).
          record.requestId === null
          ? `${record.method} was cancelled by the caller before it was sent (never sent: the abort came before its request was made)`
          : `${record.method} was cancelled by the caller before it was sent (never sent: request id ${String(record.requestId)} was still waiting to be written, and was dropped)`
        : `${record.method} was cancelled by the caller (request id ${String(record.requestId)})${outcomeNote(record)}`,
      record,
      verification,
      { cause },
    );
  }
}
