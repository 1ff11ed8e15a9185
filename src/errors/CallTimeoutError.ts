import { McpCancellableError, outcomeNote } from "./McpCancellableError.js";
import type { RecordAtSettle } from "./McpCancellableError.js";
import type { RunRecord } from "../types/record.js";

/**
 * The call ran out of time and was cancelled on the wire (rules 14, 15, 17).
 * `code` is `REQUEST_TIMEOUT` for the idle timeout (and for a caller's signal that timed out:
 * an `AbortSignal.timeout`, a framework's own timeout) and `MAX_TOTAL_TIMEOUT` for the maximum
 * total timeout; `timeoutMs` is the limit that expired, in ms.
 */
export class CallTimeoutError extends McpCancellableError {
  override readonly name = "CallTimeoutError" as const;
  readonly code: "REQUEST_TIMEOUT" | "MAX_TOTAL_TIMEOUT";
  /**
   * The limit that expired, in ms. For a caller's signal that timed out (`cause` is then its
   * reason, a `TimeoutError`), whose own limit cannot be read from the signal: the time the call
   * had run when it fired, in whole ms.
   */
  readonly timeoutMs: number;
  /**
   * The option the expired limit came from, as the message names it: `timeoutMs`,
   * `maxTotalTimeoutMs`, `clientWaitTimeoutMs` (the idle timeout was paused while the client's
   * own answer to the server's request was awaited, and that wait ran out), the SDK request
   * option a framework passed in the words the message names it with (`the SDK request option
   * "timeout", as the framework set it`, or `"maxTotalTimeout"`), or `signal` (the caller's signal
   * timed out).
   */
  readonly limitName: string;

  /**
   * @param cause the caller's signal's reason when the signal timed out (a `TimeoutError`); else none.
   * @param option the option the limit came from, as the message names it. Default: `timeoutMs`
   *   or `maxTotalTimeoutMs` (an SDK request option a framework passed is named as such);
   *   `clientWaitTimeoutMs`: the idle timeout was paused while the client's answer was awaited.
   */
  constructor(
    code: "REQUEST_TIMEOUT" | "MAX_TOTAL_TIMEOUT",
    timeoutMs: number,
    record: RunRecord | RecordAtSettle,
    verification?: Promise<RunRecord>,
    cause?: unknown,
    option?: string,
  ) {
    const id = `request id ${String(record.requestId)}`;
    super(
      (code === "MAX_TOTAL_TIMEOUT"
        ? `${record.method} exceeded its maximum total timeout of ${timeoutMs} ms (${option ?? "maxTotalTimeoutMs"}; ${id}) and was cancelled`
        : option === "clientWaitTimeoutMs"
          ? `${record.method} timed out after ${timeoutMs} ms waiting for the client's answer to the server's request (clientWaitTimeoutMs; ${id}) and was cancelled`
          : cause === undefined
            ? `${record.method} timed out after ${timeoutMs} ms (the idle timeout, ${option ?? "timeoutMs"}; ${id}) and was cancelled`
            : `${record.method} timed out after ${timeoutMs} ms (the caller's signal timed out: a TimeoutError, such as AbortSignal.timeout or a framework's own timeout; ${id}) and was cancelled`) +
        outcomeNote(record),
      record,
      verification,
      cause === undefined ? undefined : { cause },
    );
    this.code = code;
    this.timeoutMs = timeoutMs;
    this.limitName =
      code === "REQUEST_TIMEOUT" && cause !== undefined
        ? "signal"
        : (option ?? (code === "MAX_TOTAL_TIMEOUT" ? "maxTotalTimeoutMs" : "timeoutMs"));
  }
}
