/**
 * `npm run bench` (short mode, CI: under 3 minutes on 2 cores) and `npm run bench:full` (the
 * README numbers). Runs every benchmark of issue 5 side by side with the raw v1 SDK and writes
 * results.json, results.md and cancel-latency.svg (default into bench/; `--out DIR` to change).
 * Never fails on speed: it exits non-zero only when a benchmark could not run.
 *
 * Run with `node --expose-gc --import tsx bench/run.ts [--short|--full] [--out DIR]`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { runHttpLatency } from "./http-latency.js";
import { collect, machine } from "./lib/env.js";
import { loadSubject } from "./lib/subject.js";
import { runMaxTimeout } from "./max-timeout.js";
import { runOverhead } from "./overhead.js";
import type { OverheadPlan } from "./overhead.js";
import { runProfile } from "./profile.js";
import { judge, machineLine, markdown, svg } from "./report.js";
import type { Results } from "./report.js";
import { runScale } from "./scale.js";
import { runStdioLatency } from "./stdio-latency.js";

interface Plan {
  overhead: OverheadPlan;
  profileCalls: number;
  stdioCalls: number;
  httpCalls: number;
  httpCapMs: number;
  maxTimeoutCalls: number;
  scale: { concurrent: number; sequenceCalls: number; sampleEvery: number; sequenceBudgetMs: number };
}

const PLANS: Record<"short" | "full", Plan> = {
  short: {
    overhead: { sequentialCalls: 20_000, rounds: 20, batch: 1_000, batches: 20, concurrentRounds: 4 },
    profileCalls: 0,
    stdioCalls: 50,
    httpCalls: 50,
    httpCapMs: 2_000,
    maxTimeoutCalls: 20,
    scale: { concurrent: 10_000, sequenceCalls: 100_000, sampleEvery: 10_000, sequenceBudgetMs: 70_000 },
  },
  full: {
    overhead: { sequentialCalls: 100_000, rounds: 40, batch: 1_000, batches: 100, concurrentRounds: 10 },
    profileCalls: 30_000,
    stdioCalls: 200,
    httpCalls: 200,
    httpCapMs: 2_000,
    maxTimeoutCalls: 100,
    scale: { concurrent: 10_000, sequenceCalls: 1_000_000, sampleEvery: 100_000, sequenceBudgetMs: 3_600_000 },
  },
};

async function main(): Promise<void> {
  const mode = process.argv.includes("--full") ? "full" : "short";
  const outIndex = process.argv.indexOf("--out");
  const outDir = outIndex > 0 ? process.argv[outIndex + 1]! : fileURLToPath(new URL(".", import.meta.url));
  const plan = PLANS[mode];
  const began = performance.now();
  const log = (line: string): void => {
    process.stdout.write(`[${((performance.now() - began) / 1_000).toFixed(1).padStart(6)} s] ${line}\n`);
  };
  collect(); // fails early without --expose-gc
  const host = machine();
  log(`mcp-cancellable bench, ${mode} mode: ${machineLine(host)}`);
  const subject = await loadSubject();
  log(`built the library: ${subject.build}${subject.http === null ? " (no Streamable HTTP adapter yet)" : ""}`);

  log("1. per-call overhead");
  const overhead = await runOverhead(plan.overhead, subject, log);
  const profile = plan.profileCalls > 0 ? await runProfile(plan.profileCalls, subject.root.withCancellation) : null;
  log("2a. cancel latency, stdio");
  const stdio = await runStdioLatency(plan.stdioCalls, subject, log);
  log("2b. cancel latency, Streamable HTTP");
  const http = await runHttpLatency(plan.httpCalls, plan.httpCapMs, subject, log);
  log("3. maximum-timeout precision");
  const maxTimeout = await runMaxTimeout(plan.maxTimeoutCalls, subject, log);
  log("4. scale");
  const scale = await runScale(plan.scale, subject, log);

  const partial = { mode, machine: host, build: subject.build, overhead, profile, stdio, http, maxTimeout, scale } as const;
  const results: Results = {
    ...partial,
    durationS: Math.round((performance.now() - began) / 1_000),
    targets: judge(partial),
  };
  mkdirSync(outDir, { recursive: true });
  writeFileSync(`${outDir}/results.json`, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(`${outDir}/results.md`, markdown(results));
  writeFileSync(`${outDir}/cancel-latency.svg`, svg(results));
  log(`wrote ${outDir}/results.{json,md} and cancel-latency.svg`);
  for (const t of results.targets) {
    log(`${t.met === null ? "n/a   " : t.met ? "met   " : "MISSED"} ${t.name}: ${t.value} (target ${t.target})`);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
