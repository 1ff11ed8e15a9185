import type { CallCancelledError } from "./CallCancelledError.js";
import type { CallTimeoutError } from "./CallTimeoutError.js";
import type { ConnectionClosedError } from "./ConnectionClosedError.js";
import type { InvalidOptionError } from "./InvalidOptionError.js";
import type { McpCancellableError } from "./McpCancellableError.js";

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

/** True for any of the library's cancellation errors: timeout, caller abort, or connection closed. */
export function isMcpCancellableError(error: unknown): error is McpCancellableError {
  return isCallTimeoutError(error) || isCallCancelledError(error) || isConnectionClosedError(error);
}
