import { SHORT_DURATION_WARNING_MS } from "./defaults.js";

// The library's warnings and their state: the short-duration warning (at most once per option and
// process) and the usage-mistake warning (once per distinct mistake).

const warned = new Set<string>();

/** Warns once per option and process when a duration is under `SHORT_DURATION_WARNING_MS` (likely seconds meant). */
export function warnIfShort(option: "timeoutMs" | "maxTotalTimeoutMs" | "verifyTimeoutMs", value: number | undefined): void {
  if (value === undefined || value >= SHORT_DURATION_WARNING_MS || warned.has(option)) return;
  warned.add(option);
  // The SDK's request options (`timeout`, `maxTotalTimeout`, as an attached client or a framework
  // passes them) are mapped to the first two: the text names both, so it names what the caller wrote.
  const sdk = option === "timeoutMs" ? "timeout" : option === "maxTotalTimeoutMs" ? "maxTotalTimeout" : undefined;
  const text =
    `${option} is ${value} ms (given as ${option}${sdk === undefined ? "" : `, or as the SDK's request option ${sdk}`}). ` +
    `Durations are in milliseconds: for ${value} seconds write ${value * 1000}. (Shown once per option.)`;
  emitWarning(text, "MCP_CANCELLABLE_SHORT_DURATION");
}

/** Distinct warnings given so far, usage mistakes and the rest (bounded: past it, mistakes are still thrown and recorded, no longer warned). */
const mistakes = new Set<string>();
const MAX_MISTAKES_WARNED = 1_000;

/**
 * Warns once per distinct usage mistake and process (`McpCancellableWarning`, code
 * `MCP_CANCELLABLE_INVALID_OPTION`): for an invalid option a framework would otherwise hand to
 * its model as tool text (an option hook such as `callOptions`), so the developer sees it in
 * their terminal too. Returns whether it warned.
 */
export function warnMistakeOnce(text: string): boolean {
  return warnOnce(text, "MCP_CANCELLABLE_INVALID_OPTION");
}

/**
 * Warns once per distinct text and process (`McpCancellableWarning`, with `code`), bounded as the
 * mistakes are: `MCP_CANCELLABLE_INVALID_OPTION` (`warnMistakeOnce`), `MCP_CANCELLABLE_UNPROTECTED`
 * for calls that will not go through the library (a framework's server it could not attach to),
 * `MCP_CANCELLABLE_HOOK_THREW` for a throwing `onRecord` (its records are lost; the calls settle
 * as they would) or a failing `awaitVerification` text function (the library's own text is used).
 * Returns whether it warned.
 */
export function warnOnce(
  text: string,
  code: "MCP_CANCELLABLE_INVALID_OPTION" | "MCP_CANCELLABLE_UNPROTECTED" | "MCP_CANCELLABLE_HOOK_THREW",
): boolean {
  if (mistakes.has(text) || mistakes.size >= MAX_MISTAKES_WARNED) return false;
  mistakes.add(text);
  emitWarning(text, code);
  return true;
}

function emitWarning(text: string, code: string): void {
  const proc = (globalThis as { process?: { emitWarning?: (text: string, options: { type: string; code: string }) => void } }).process;
  if (typeof proc?.emitWarning === "function") {
    proc.emitWarning(text, { type: "McpCancellableWarning", code });
  } else {
    console.warn(`McpCancellableWarning: ${text}`);
  }
}
