// The verified outcome of a cancelled tool call, as a framework hands it to its model: the
// framework shells (the Agents server, the AI SDK transport) wait for a cancelled call's `verify`
// when asked (`awaitVerification`) and answer the tool call with what is known, so the model is
// not told "please try again" about a side effect that may have happened.
import { InvalidOptionError } from "../errors/InvalidOptionError.js";
import type { McpCancellableError } from "../errors/McpCancellableError.js";
import type { RunRecord } from "../types/record.js";

/**
 * Wait for a cancelled tool call's `verify` before the framework gets the tool's outcome, and
 * answer it with what the verification found (a tool result with `isError: true`, the one way MCP
 * tells a model that a tool failed) instead of the timeout's error:
 *
 * - `true`: the library's text, such as `The tool call "generate_quarterly_summary" was cancelled
 *   after 30.0 s (timed out); a check afterwards found that its effect was applied
 *   (applied at 2.0 s). Do not call it again to repeat it.`
 * - a function of the final run record: your own text (`"cancelled after 30 s; the report was created"`).
 * - `false` (the default): the framework gets the error at once; the verification goes on after.
 *
 * Only a cancelled call with a `verify` read waits; the wait is bounded by the read's own limits
 * (`verifyDelayMs`, `verifyWindowMs`, `verifyTimeoutMs` per read). A caller's abort is never
 * waited for: the run is being stopped.
 */
export type AwaitVerification = boolean | ((record: RunRecord) => string);

/** Checks an `awaitVerification` value. @throws {InvalidOptionError} naming it and where. */
export function checkAwaitVerification(value: unknown, where: string): AwaitVerification | undefined {
  if (value === undefined || typeof value === "boolean" || typeof value === "function") return value as AwaitVerification | undefined;
  throw new InvalidOptionError("awaitVerification", `${where}: "awaitVerification" must be true, false or a function (record) => string`);
}

const TRIGGER_WORDS: Record<string, string> = {
  timeout: "timed out",
  "max-total-timeout": "reached its maximum total time",
  aborted: "was aborted",
  "connection-closed": "lost its connection",
};

/** The library's text for a verified (or failed-to-verify) cancelled call. */
export function verifiedOutcomeText(record: RunRecord): string {
  const tool = record.name === null ? `The ${record.method} request` : `The tool call ${JSON.stringify(record.name)}`;
  const trigger = TRIGGER_WORDS[record.cancel?.trigger ?? "aborted"] ?? "was cancelled";
  const head = `${tool} was cancelled after ${(record.elapsedMs / 1_000).toFixed(1)} s (${trigger})`;
  const summary = record.verification?.summary ?? "";
  switch (record.outcome) {
    case "verified-applied":
      return `${head}; a check afterwards found that its effect was applied (${summary}). Do not call it again to repeat it.`;
    case "verified-not-applied":
      return `${head}; a check afterwards found that its effect was not applied (${summary}): nothing was done.`;
    default:
      return `${head}; the check afterwards could not tell whether its effect was applied (${record.verification?.error ?? summary}). Check before calling it again.`;
  }
}

/**
 * For a cancelled call whose `verify` read runs: waits for it and returns the text to answer the
 * tool call with; `undefined` when there is nothing to wait for (no `verify`, not a cancel, the
 * request never left) or `awaitVerification` is off. Never rejects: a throwing text function
 * falls back to the library's text.
 */
export async function awaitVerifiedText(error: unknown, wait: AwaitVerification | undefined): Promise<string | undefined> {
  if (wait === undefined || wait === false || !isCancelled(error)) return undefined;
  const record = await error.verification;
  if (record.verification === null) return undefined;
  if (typeof wait === "function") {
    try {
      const text = wait(record);
      if (typeof text === "string") return text;
    } catch {
      // The developer's text function failed: the library's text says the same facts.
    }
  }
  return verifiedOutcomeText(record);
}

function isCancelled(error: unknown): error is McpCancellableError {
  if (!(error instanceof Error) || !("record" in error) || !("verification" in error)) return false;
  const { record, verification } = error as Partial<McpCancellableError>;
  return record?.status === "cancelled" && record.outcome !== "not-sent" && verification instanceof Promise;
}
