import { z } from "zod";
import type { RunRecord } from "../types/record.js";
import { parseOptions } from "../options/schemas.js";
import { BoundedMap } from "../utils/bounded-map.js";
import { InvalidOptionError } from "../errors/InvalidOptionError.js";

/** Options of `jsonLines`. */
export interface JsonLinesOptions {
  /**
   * Which revisions of a record are written:
   * - `"changed"` (the default): the record when its call settles, then again only when what
   *   it says changes (its `summary`: a late result discarded, a verification's answer; its
   *   `cancel`: when it went, what did not get through; its `task`) or a late answer comes
   *   (`late.results`, `late.errors`: a server that answers one request twice), or the first late
   *   progress notification comes (the server went on working after the cancel); later late
   *   progress alone writes nothing, so a log has one line per call, plus one per change of
   *   outcome, late answer or the first late progress. The counts in a line are those at the time
   *   it was written.
   * - `"all"`: every revision (`revision` 0, 1, 2, ...), as `onRecord` receives them.
   * @default "changed"
   */
  revisions?: "changed" | "all" | undefined;
  /**
   * With `"changed"`: how many calls' last written summaries are remembered, oldest forgotten
   * first (a call forgotten and updated later is written again). Integer from 1 to 2_147_483_647.
   * @default 10_000
   */
  maxCalls?: number | undefined;
}

/** Default number of calls whose last written line `jsonLines` remembers. */
export const DEFAULT_JSON_LINES_MAX_CALLS = 10_000;

const optionsSchema = z
  .strictObject({
    revisions: z.enum(["changed", "all"], { error: 'must be "changed" or "all"' }),
    maxCalls: z
      .number({ error: "must be an integer from 1 to 2147483647" })
      .int({ error: "must be an integer from 1 to 2147483647" })
      .min(1, { error: "must be an integer from 1 to 2147483647" })
      .max(2_147_483_647, { error: "must be an integer from 1 to 2147483647" }),
  })
  .partial();

/**
 * Makes an `onRecord` callback that writes records as JSON Lines (one JSON object per line),
 * for a log file or stdout: `onRecord: jsonLines((line) => stream.write(line))`. Every line
 * carries `callId` (unique in the process) and `connectionId`, so a log written by several
 * connections is read without de-duplication: with the default `revisions: "changed"`, the
 * last line of a `callId` is what is known of that call.
 *
 * @param write receives one line per record written, ending in `\n`.
 * @param options `revisions` (`"changed"` by default, or `"all"`) and `maxCalls`.
 * @throws {InvalidOptionError} `write` is not a function, or an option is invalid, naming it.
 */
export function jsonLines(write: (line: string) => unknown, options: JsonLinesOptions = {}): (record: RunRecord) => unknown {
  if (typeof write !== "function") {
    throw new InvalidOptionError(
      "write",
      `jsonLines: write must be a function that takes each line (a string ending in \\n), such as (line) => process.stdout.write(line); got ${write === null ? "null" : typeof write}`,
    );
  }
  const { revisions = "changed", maxCalls = DEFAULT_JSON_LINES_MAX_CALLS } = parseOptions(optionsSchema, options, "jsonLines options");
  if (revisions === "all") return (record) => write(`${JSON.stringify(record)}\n`);
  const written = new BoundedMap<number, string>(maxCalls);
  // What `write` returns goes back to the caller (`onRecord`): an async write's rejection is the
  // library's to handle (warned about once), never an unhandled one.
  return (record) => {
    // What it says: its summary and late answers, and what its cancel and its task became (when
    // the notification went, what did not get through, the task a late CreateTaskResult named),
    // so the last line of a call is what is known of it (an outside tester's finding: a log's
    // last line said nothing was sent for a task the record named, or `sentAt: null`).
    const { cancel, task } = record as { cancel?: RunRecord["cancel"]; task?: { taskId?: unknown; status?: unknown } };
    // Late progress: only its first, a fact of its own (the work went on after the cancel); a
    // count in every line would write one line per notification.
    const says =
      `${record.late.results},${record.late.errors},${record.late.progress > 0} ${record.summary}` +
      (cancel == null ? "" : ` ${cancel.mechanism} ${cancel.sentAt} ${cancel.undelivered?.error ?? ""}`) +
      (task === undefined ? "" : ` ${String(task.taskId)} ${String(task.status)}`);
    if (record.revision > 0 && written.get(record.callId) === says) return undefined;
    written.set(record.callId, says);
    return write(`${JSON.stringify(record)}\n`);
  };
}
