import { SHORT_DURATION_WARNING_MS } from "./defaults.js";

// The short-duration warning and its state: each option warns at most once per process.

const warned = new Set<string>();

/** Warns once per option and process when a duration is under `SHORT_DURATION_WARNING_MS` (likely seconds meant). */
export function warnIfShort(option: "timeoutMs" | "maxTotalTimeoutMs", value: number | undefined): void {
  if (value === undefined || value >= SHORT_DURATION_WARNING_MS || warned.has(option)) return;
  warned.add(option);
  const text =
    `${option} is ${value} ms. Durations are in milliseconds: for ${value} seconds write ${option}: ${value * 1000}. ` +
    `(Shown once per option.)`;
  const proc = (globalThis as { process?: { emitWarning?: (text: string, options: { type: string; code: string }) => void } }).process;
  if (typeof proc?.emitWarning === "function") {
    proc.emitWarning(text, { type: "McpCancellableWarning", code: "MCP_CANCELLABLE_SHORT_DURATION" });
  } else {
    console.warn(`McpCancellableWarning: ${text}`);
  }
}
