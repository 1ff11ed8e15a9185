import type { RunRecord } from "../types/record.js";

/**
 * Makes an `onRecord` callback that writes each record as one JSON line (JSON Lines), for a
 * log file or stdout: `onRecord: jsonLines((line) => stream.write(line))`. A record that is
 * updated later (late message, verification) is written again with a higher `revision`.
 * @param write receives one line per record, ending in `\n`.
 */
export function jsonLines(write: (line: string) => void): (record: RunRecord) => void {
  return (record) => write(`${JSON.stringify(record)}\n`);
}
