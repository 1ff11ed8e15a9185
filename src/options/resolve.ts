import type { CallOptions, CancellationOptions, LimitNames, ResolvedCallOptions } from "../types/options.js";
import {
  DEFAULT_CLIENT_WAIT_TIMEOUT_MS,
  DEFAULT_MAX_TOTAL_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_VERIFY_INTERVAL_MS,
  DEFAULT_VERIFY_TIMEOUT_MS,
  DEFAULT_VERIFY_WINDOW_MS,
} from "./defaults.js";
import {
  SDK_OPTION_NAMES,
  callOptionsSchema,
  clientOptionsSchema,
  isOptionsObject,
  isSignalOnly,
  isValidCallOptions,
  parseOptions,
  readCallOptions,
} from "./schemas.js";
import { warnIfShort } from "./warnings.js";

// Options at the boundary: the client-wide ones validated once, and each call's merged over them.

/**
 * On call options mapped from the SDK's request options: the names the limits came from (see
 * `ResolvedCallOptions.limitNames`). A symbol key: never an option, never validated. @internal
 */
export const LIMIT_NAMES: unique symbol = Symbol("mcp-cancellable.limitNames");

/**
 * Validates client-wide options once, at the boundary.
 * @throws {InvalidOptionError} naming the first option at fault.
 */
export function parseCancellationOptions(
  options: CancellationOptions | undefined,
  where = "withCancellation options",
): CancellationOptions {
  if (options === undefined) return {};
  parseOptions(clientOptionsSchema, options, where, SDK_OPTION_NAMES);
  warnIfShort("timeoutMs", options.timeoutMs);
  warnIfShort("maxTotalTimeoutMs", options.maxTotalTimeoutMs);
  warnIfShort("verifyTimeoutMs", options.verifyTimeoutMs);
  return options;
}

/**
 * Validates one call's options and merges them over the client-wide defaults.
 * @throws {InvalidOptionError} naming the first option at fault.
 */
export function resolveCallOptions(defaults: CancellationOptions, given: CallOptions | undefined): ResolvedCallOptions {
  let options = given;
  if (given !== undefined && !isSignalOnly(given)) {
    // Not an object of options (a Date, an array, a number): refused as it is.
    if (!isOptionsObject(given)) parseOptions(callOptionsSchema, given, "call options", SDK_OPTION_NAMES);
    // Read once: what is validated is what the call uses (see `readCallOptions`).
    options = readCallOptions(given) as CallOptions;
    if (!isValidCallOptions(options)) parseOptions(callOptionsSchema, options, "call options", SDK_OPTION_NAMES);
    warnIfShort("timeoutMs", options.timeoutMs);
    warnIfShort("maxTotalTimeoutMs", options.maxTotalTimeoutMs);
    warnIfShort("verifyTimeoutMs", options.verifyTimeoutMs);
  }
  const timeoutMs = options?.timeoutMs ?? defaults.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return {
    timeoutMs,
    limitNames: (options as { [LIMIT_NAMES]?: LimitNames } | undefined)?.[LIMIT_NAMES],
    maxTotalTimeoutMs: options?.maxTotalTimeoutMs ?? defaults.maxTotalTimeoutMs ?? Math.max(DEFAULT_MAX_TOTAL_TIMEOUT_MS, timeoutMs),
    resetTimeoutOnProgress: options?.resetTimeoutOnProgress ?? defaults.resetTimeoutOnProgress ?? false,
    clientWaitTimeoutMs: options?.clientWaitTimeoutMs ?? defaults.clientWaitTimeoutMs ?? DEFAULT_CLIENT_WAIT_TIMEOUT_MS,
    signal: options?.signal,
    reason: options?.reason ?? defaults.reason,
    forwardAbortReason: options?.forwardAbortReason ?? defaults.forwardAbortReason ?? false,
    onprogress: options?.onprogress,
    verify: options?.verify,
    verifyTimeoutMs: options?.verifyTimeoutMs ?? defaults.verifyTimeoutMs ?? DEFAULT_VERIFY_TIMEOUT_MS,
    verifyDelayMs: options?.verifyDelayMs ?? defaults.verifyDelayMs ?? 0,
    verifyWindowMs: options?.verifyWindowMs ?? defaults.verifyWindowMs ?? DEFAULT_VERIFY_WINDOW_MS,
    verifyIntervalMs: options?.verifyIntervalMs ?? defaults.verifyIntervalMs ?? DEFAULT_VERIFY_INTERVAL_MS,
  };
}
