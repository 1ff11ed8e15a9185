// The library's numeric defaults and bounds, in one place: every constant carries its unit in its
// name. The public ones are re-exported from the root entry (src/index.ts).

/**
 * The largest delay Node, browsers, Deno and Bun honour for `setTimeout`, in ms (2^31 - 1).
 * A larger delay, `Infinity` or `0` fires after about 1 ms in Node, so the library never passes
 * one to a timer: `Infinity` means "no timer at all" instead.
 */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/** Default idle timeout per request, in ms (the same as the MCP SDK's `DEFAULT_REQUEST_TIMEOUT_MSEC`). */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** Default bound, in ms, on how long waiting for the client's answer to a server request pauses a call's idle timeout. */
export const DEFAULT_CLIENT_WAIT_TIMEOUT_MS = 300_000;

/**
 * Default maximum total timeout per request, in ms: 10 minutes. It is never lower than the
 * call's own idle timeout, so a long `timeoutMs` is not silently cut (rule 17: a maximum
 * timeout always holds, even while progress keeps resetting the idle timeout).
 */
export const DEFAULT_MAX_TOTAL_TIMEOUT_MS = 600_000;

/** Default time a `verify` read may take, in ms. */
export const DEFAULT_VERIFY_TIMEOUT_MS = 10_000;

/** Default verification window, in ms: 0, one read. */
export const DEFAULT_VERIFY_WINDOW_MS = 0;

/** Default time from the start of one `verify` read to the start of the next within the window, in ms. */
export const DEFAULT_VERIFY_INTERVAL_MS = 1_000;

/** Default number of run records kept by the in-memory ledger. */
export const DEFAULT_MAX_RECORDS = 1_000;

/** Default number of settled request ids remembered so that late messages for them are dropped. */
export const DEFAULT_MAX_TOMBSTONES = 10_000;

/** The longest cancel reason put on the wire, and the longest error message kept in a run record, in characters; longer ones are cut. */
export const MAX_REASON_LENGTH = 1_000;

/**
 * Below this a duration is more likely seconds given by mistake (`timeoutMs: 30`) than a real
 * budget, in ms: `timeoutMs` and `maxTotalTimeoutMs` under it are accepted, with a warning
 * (`process.emitWarning`, name `McpCancellableWarning`), once per option and process.
 */
export const SHORT_DURATION_WARNING_MS = 100;
