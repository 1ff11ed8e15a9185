import { describe, expectTypeOf, it } from "vitest";
import { callErrorOf, isMcpCancellableError } from "../../src/index.js";
import type { CallCancelledError, CallError, CallTimeoutError, ConnectionClosedError } from "../../src/index.js";

// The guards narrow to the union of the library's errors, so a check of `code` narrows further
// (found from outside: `callErrorOf(e)?.code === "REQUEST_TIMEOUT"` then `.timeoutMs` did not
// type-check, and the code union offered INVALID_OPTION, which no cancellation error has).
// Checked by `tsc` (npm test runs it first).

describe("error types", () => {
  it("isMcpCancellableError and callErrorOf narrow to CallError; code narrows to the class", () => {
    const check = (error: unknown) => {
      if (isMcpCancellableError(error)) {
        expectTypeOf(error).toEqualTypeOf<CallError>();
        expectTypeOf(error.code).toEqualTypeOf<"REQUEST_TIMEOUT" | "MAX_TOTAL_TIMEOUT" | "CANCELLED" | "CONNECTION_CLOSED">();
        if (error.code === "REQUEST_TIMEOUT") expectTypeOf(error).toEqualTypeOf<CallTimeoutError>();
        if (error.code === "CANCELLED") expectTypeOf(error).toEqualTypeOf<CallCancelledError>();
        if (error.code === "CONNECTION_CLOSED") expectTypeOf(error).toEqualTypeOf<ConnectionClosedError>();
      }
      const found = callErrorOf(error);
      if (found?.code === "MAX_TOTAL_TIMEOUT") expectTypeOf(found.timeoutMs).toBeNumber();
    };
    void check;
  });
});
