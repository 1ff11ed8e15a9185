/**
 * `npm run bench` (short mode, CI: about a minute on 2 idle cores) and `npm run bench:full` (the
 * README numbers). Runs every benchmark of issues 5 and 12 side by side with the raw SDK (v1,
 * and for overhead and scale also v2 in its legacy era and pinned to 2026-07-28) and writes
 * results.json, results.md and cancel-latency.svg (default into bench/; `--out DIR` to change).
 * Never fails on speed: it exits non-zero only when a benchmark could not run.
 *
 * Run with `node --expose-gc --import tsx bench/run.ts [--short|--full] [--out DIR]`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { runHttpLatency } from "./http-latency.js";
import { gatewayTargets, runGateway } from "./gateway.js";
import type { GatewayPlan } from "./gateway.js";
import { collect, machine } from "./lib/env.js";
import { loadSubject } from "./lib/subject.js";
import { runMaxTimeout } from "./max-timeout.js";
import { runOverhead } from "./overhead.js";
import type { OverheadPlan } from "./overhead.js";
import { runProfile } from "./profile.js";
import { frontTargets, runFront } from "./front.js";
import type { FrontPlan } from "./front.js";
import { proxyTargets, runProxy } from "./proxy.js";
import type { ProxyPlan } from "./proxy.js";
import { judge, machineLine, markdown, svg } from "./report.js";
import type { Results } from "./report.js";
import { runScale } from "./scale.js";
import type { ScalePlan } from "./scale.js";
import { runStdioLatency } from "./stdio-latency.js";

interface Plan {
  overhead: OverheadPlan;
  /** The same for each v2 line (its calls cost more, so fewer). */
  overheadV2: OverheadPlan;
  profileCalls: number;
  stdioCalls: number;
  httpCalls: number;
  httpCapMs: number;
  maxTimeoutCalls: number;
  scale: ScalePlan;
  /** `mcp-cancellable proxy` beside a direct connection (bench/proxy.ts, issue 22). */
  proxy: ProxyPlan;
  /** `mcp-cancellable proxy --listen`, the HTTP front (bench/front.ts, issue 31). */
  front: FrontPlan;
  /** Gateway scale: many pending calls over many connections, timed out and aborted together (bench/gateway.ts, issue 23). */
  gateway: GatewayPlan;
}

const PLANS: Record<"short" | "full", Plan> = {
  // Under a minute on 2 idle cores: enough to see every path run and a rough ratio, never a verdict.
  short: {
    overhead: { sequentialCalls: 6_000, chunk: 100, batch: 500, batches: 6 },
    overheadV2: { sequentialCalls: 1_200, chunk: 100, batch: 200, batches: 4 },
    profileCalls: 0,
    stdioCalls: 20,
    httpCalls: 20,
    httpCapMs: 1_000,
    maxTimeoutCalls: 10,
    scale: {
      concurrent: 1_000,
      sequenceCalls: 10_000,
      sampleEvery: 5_000,
      sequenceBudgetMs: 10_000,
      timeoutCalls: 500,
      timeoutMs: 500,
      cancelSequenceCalls: 2_000,
    },
    proxy: {
      latencyCalls: 300,
      warmup: 30,
      concurrent: 1_000,
      concurrentRounds: 2,
      pendingCalls: 1_000,
      settleCalls: 10_000,
      settleTimeoutMs: 5_000,
    },
    front: { latencyCalls: 200, warmup: 30, clients: 1_000, cancels: 50, killInFlight: 100 },
    // A fifth of the full run's calls over the same 100 connections (the full size takes two
    // minutes here, most of it waiting for the common deadline); stdio with fewer (a child process each).
    gateway: { inMemory: { calls: 20_000, connections: 100 }, stdio: { calls: 2_000, connections: 4 }, timeoutMs: 2_000 },
  },
  full: {
    overhead: { sequentialCalls: 100_000, chunk: 100, batch: 1_000, batches: 100 },
    overheadV2: { sequentialCalls: 40_000, chunk: 100, batch: 1_000, batches: 40 },
    profileCalls: 30_000,
    stdioCalls: 5_000, // a p99 of 200 samples was their second worst, of 1,000 it swung 0.3x to 5.5x: noise on 2 cores
    httpCalls: 200,
    httpCapMs: 2_000,
    maxTimeoutCalls: 100,
    scale: {
      concurrent: 10_000,
      sequenceCalls: 1_000_000,
      sampleEvery: 100_000,
      sequenceBudgetMs: 3_600_000,
      timeoutCalls: 10_000,
      timeoutMs: 3_000,
      cancelSequenceCalls: 20_000,
    },
    proxy: {
      latencyCalls: 3_000,
      warmup: 300,
      concurrent: 1_000,
      concurrentRounds: 10,
      pendingCalls: 10_000,
      settleCalls: 10_000,
      settleTimeoutMs: 10_000,
    },
    gateway: { inMemory: { calls: 100_000, connections: 100 }, stdio: { calls: 20_000, connections: 20 }, timeoutMs: 3_000 },
    front: { latencyCalls: 2_000, warmup: 200, clients: 1_000, cancels: 300, killInFlight: 500 },
  },
};

async function main(): Promise<void> {
  const mode = process.argv.includes("--full") ? "full" : "short";
  const outIndex = process.argv.indexOf("--out");
  const outDir = outIndex > 0 ? process.argv[outIndex + 1]! : fileURLToPath(new URL(".", import.meta.url));
  const plan = PLANS[mode];
  // `--only proxy`: that benchmark alone, into OUT/proxy.json (results.json is left as it is).
  const only = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : undefined;
  const alone = ["proxy", "gateway", "front", "overhead", "scale", "max-timeout", "stdio", "http"];
  if (only !== undefined && !alone.includes(only)) {
    throw new Error(`--only: the benchmarks that run alone are ${alone.join(", ")}, got ${only}`);
  }
  const loadStart = os.loadavg();
  const began = performance.now();
  const log = (line: string): void => {
    process.stdout.write(`[${((performance.now() - began) / 1_000).toFixed(1).padStart(6)} s] ${line}\n`);
  };
  collect(); // fails early without --expose-gc
  const host = machine();
  log(`mcp-cancellable bench, ${mode} mode: ${machineLine(host)}`);
  if (only === "proxy") {
    log("5. mcp-cancellable proxy (alone)");
    const proxy = await runProxy(plan.proxy, log);
    mkdirSync(outDir, { recursive: true });
    writeFileSync(`${outDir}/proxy.json`, `${JSON.stringify({ mode, machine: host, proxy, targets: proxyTargets(proxy) }, null, 2)}\n`);
    for (const t of proxyTargets(proxy)) log(`${t.met === null ? "n/a   " : t.met ? "met   " : "MISSED"} ${t.name}: ${t.value}`);
    return;
  }
  if (only === "front") {
    log("7. mcp-cancellable proxy --listen (alone)");
    const front = await runFront(plan.front, log);
    mkdirSync(outDir, { recursive: true });
    writeFileSync(`${outDir}/front.json`, `${JSON.stringify({ mode, machine: host, front, targets: frontTargets(front) }, null, 2)}\n`);
    for (const t of frontTargets(front)) log(`${t.met === null ? "n/a   " : t.met ? "met   " : "MISSED"} ${t.name}: ${t.value}`);
    return;
  }
  const subject = await loadSubject();
  log(`built the library: ${subject.build}${subject.http === null ? " (no Streamable HTTP adapter yet)" : ""}`);
  if (only === "overhead" || only === "scale" || only === "max-timeout" || only === "stdio" || only === "http") {
    log(`${only} (alone)`);
    const result =
      only === "overhead"
        ? {
            v1: await runOverhead(plan.overhead, subject, log, "v1"),
            "v2-legacy": await runOverhead(plan.overheadV2, subject, log, "v2-legacy"),
            "v2-2026": await runOverhead(plan.overheadV2, subject, log, "v2-2026"),
          }
        : only === "scale"
          ? await runScale(plan.scale, subject, log)
          : only === "max-timeout"
            ? await runMaxTimeout(plan.maxTimeoutCalls, subject, log)
            : only === "stdio"
              ? await runStdioLatency(plan.stdioCalls, subject, log)
              : await runHttpLatency(plan.httpCalls, plan.httpCapMs, subject, log);
    mkdirSync(outDir, { recursive: true });
    writeFileSync(`${outDir}/${only}.json`, `${JSON.stringify({ mode, machine: host, [only]: result }, null, 2)}\n`);
    log(`wrote ${outDir}/${only}.json`);
    return;
  }
  if (only === "gateway") {
    log("6. gateway scale (alone)");
    const gateway = await runGateway(plan.gateway, subject, log);
    mkdirSync(outDir, { recursive: true });
    writeFileSync(
      `${outDir}/gateway.json`,
      `${JSON.stringify({ mode, machine: host, gateway, targets: gatewayTargets(gateway) }, null, 2)}
`,
    );
    for (const t of gatewayTargets(gateway)) log(`${t.met === null ? "n/a   " : t.met ? "met   " : "MISSED"} ${t.name}: ${t.value}`);
    return;
  }

  log("1. per-call overhead");
  const overhead = await runOverhead(plan.overhead, subject, log, "v1");
  const overheadV2 = {
    legacy: await runOverhead(plan.overheadV2, subject, log, "v2-legacy"),
    modern: await runOverhead(plan.overheadV2, subject, log, "v2-2026"),
  };
  const profile = plan.profileCalls > 0 ? await runProfile(plan.profileCalls, subject.root.withCancellation) : null;
  log("2a. cancel latency, stdio");
  const stdio = await runStdioLatency(plan.stdioCalls, subject, log);
  log("2b. cancel latency, Streamable HTTP");
  const http = await runHttpLatency(plan.httpCalls, plan.httpCapMs, subject, log);
  log("3. maximum-timeout precision");
  const maxTimeout = await runMaxTimeout(plan.maxTimeoutCalls, subject, log);
  log("4. scale");
  const scale = await runScale(plan.scale, subject, log);
  log("5. mcp-cancellable proxy");
  const proxy = await runProxy(plan.proxy, log);
  log("6. gateway scale");
  const gateway = await runGateway(plan.gateway, subject, log);
  log("7. mcp-cancellable proxy --listen");
  const front = await runFront(plan.front, log);

  const load = { start: loadStart.map((x) => Math.round(x * 100) / 100), end: os.loadavg().map((x) => Math.round(x * 100) / 100) };
  log(`load average at the end: ${load.end.join(", ")} (at the start ${load.start.join(", ")})`);
  const partial = {
    mode,
    machine: host,
    build: subject.build,
    overhead,
    overheadV2,
    load,
    profile,
    stdio,
    http,
    maxTimeout,
    scale,
  } as const;
  const results: Results & { proxy: typeof proxy; gateway: typeof gateway; front: typeof front } = {
    ...partial,
    proxy,
    gateway,
    front,
    durationS: Math.round((performance.now() - began) / 1_000),
    targets: [...judge(partial), ...proxyTargets(proxy), ...gatewayTargets(gateway), ...frontTargets(front)],
  };
  mkdirSync(outDir, { recursive: true });
  writeFileSync(`${outDir}/results.json`, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(`${outDir}/results.md`, markdown(results));
  writeFileSync(`${outDir}/cancel-latency.svg`, svg(results));
  log(`wrote ${outDir}/results.{json,md} and cancel-latency.svg`);
  for (const t of results.targets) {
    log(
      `${t.met === null ? "n/a   " : t.met ? "met   " : "MISSED"} ${t.name}: raw ${t.raw}, wrapped ${t.wrapped}, ratio ${t.ratio ?? "—"} (target ${t.target}); ${t.value}`,
    );
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
