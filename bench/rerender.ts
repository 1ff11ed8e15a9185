/**
 * Renders `results.md` and `cancel-latency.svg` again from a run's `results.json` (default: the
 * committed run of record in bench/), after a change to the report's wording (bench/report.ts);
 * the figures are the run's own and are not touched.
 * Run: node --import tsx bench/rerender.ts [dir]
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { markdown, svg } from "./report.js";
import type { Results } from "./report.js";

const dir = process.argv[2] ?? fileURLToPath(new URL(".", import.meta.url));
const results = JSON.parse(readFileSync(join(dir, "results.json"), "utf8")) as Results;
writeFileSync(join(dir, "results.md"), markdown(results));
writeFileSync(join(dir, "cancel-latency.svg"), svg(results));
console.log(`rendered ${join(dir, "results.md")} and ${join(dir, "cancel-latency.svg")} from ${join(dir, "results.json")}`);
