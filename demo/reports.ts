import { join } from "node:path";

/** The three behaviours of the worked example, played by demo/report-server.ts. */
export const MODES = ["stop", "late", "ignore"] as const;
export type Mode = (typeof MODES)[number];

/** Where the report for `quarter` is written; the bot's verify read looks for this file. */
export function reportPath(dir: string, quarter: string): string {
  return join(dir, `${quarter}-summary.md`);
}
