import type { CallCancelledError } from "./CallCancelledError.js";
import type { CallTimeoutError } from "./CallTimeoutError.js";
import type { ConnectionClosedError } from "./ConnectionClosedError.js";
import type { InvalidOptionError } from "./InvalidOptionError.js";

// The guards check `name` and `code`, not only `instanceof`, so they hold across two copies of
// the package (ESM and CommonJS, or two versions in one tree).
function has(error: unknown, name: string, codes: readonly string[]): boolean {
  return (
    typeof error === "object" &&
    error !== null &&
    (error as { name?: unknown }).name === name &&
    codes.includes((error as { code?: unknown }).code as string)
  );
}

/** True for a `CallTimeoutError` (code `REQUEST_TIMEOUT` or `MAX_TOTAL_TIMEOUT`). */
export function isCallTimeoutError(error: unknown): error is CallTimeoutError {
  return has(error, "CallTimeoutError", ["REQUEST_TIMEOUT", "MAX_TOTAL_TIMEOUT"]);
}

/** True for a `CallCancelledError` (code `CANCELLED`): the caller aborted. */
export function isCallCancelledError(error: unknown): error is CallCancelledError {
  return has(error, "CallCancelledError", ["CANCELLED"]);
}

/** True for a `ConnectionClosedError` (code `CONNECTION_CLOSED`). */
export function isConnectionClosedError(error: unknown): error is ConnectionClosedError {
  return has(error, "ConnectionClosedError", ["CONNECTION_CLOSED"]);
}

/** True for an `InvalidOptionError` (code `INVALID_OPTION`). */
export function isInvalidOptionError(error: unknown): error is InvalidOptionError {
  return has(error, "InvalidOptionError", ["INVALID_OPTION"]);
}

/**
 * Any of the library's cancellation errors: a union, so a check of `code` narrows it to its class
 * (`REQUEST_TIMEOUT` and `MAX_TOTAL_TIMEOUT`: a `CallTimeoutError` with its `timeoutMs`).
 */
export type CallError = CallTimeoutError | CallCancelledError | ConnectionClosedError;

/** True for any of the library's cancellation errors: timeout, caller abort, or connection closed (`CallError`). */
export function isMcpCancellableError(error: unknown): error is CallError {
  return isCallTimeoutError(error) || isCallCancelledError(error) || isConnectionClosedError(error);
}

/**
 * The library's error behind an error that crossed a framework: the error itself, or the first
 * of the library's errors found through `cause` (Mastra's `MastraError`, an `Error` made with
 * `{ cause }`) and `error` (the OpenAI Agents runtime's `ToolCallError`), at most 5 levels down.
 * Its `code` and `record` are then at hand. `undefined` when none is found: LangChain's
 * `ToolException` keeps only the message text (see docs/frameworks.md for each framework).
 */
export function callErrorOf(error: unknown): CallError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth <= 5 && typeof current === "object" && current !== null; depth++) {
    if (isMcpCancellableError(current)) return current;
    const { cause, error: inner } = current as { cause?: unknown; error?: unknown };
    current = cause !== undefined ? cause : inner;
  }
  return undefined;
}
