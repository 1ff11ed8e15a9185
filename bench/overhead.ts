import { Bench } from "tinybench";
import { cpuMeter } from "./lib/cpu.js";
import { LINE_LABEL, openLine } from "./lib/lines.js";
import type { Line } from "./lib/lines.js";
import type { Subject } from "./lib/subject.js";
import { median, round, summarize } from "./lib/stats.js";

/** Sizes of the per-call overhead run. */
export interface OverheadPlan {
  /** Sequential calls measured per variant (split over `rounds`). */
  sequentialCalls: number;
  /** Rounds; the order raw/wrapped alternates each round (ABBA) so drift hits both alike. */
  rounds: number;
  /** Calls in flight at once in the concurrent run. */
  batch: number;
  /** Concurrent batches measured per variant (split over `concurrentRounds`). */
  batches: number;
  concurrentRounds: number;
}

/** µs per call for one variant. */
export interface VariantStats {
  /** Wall time per call (tinybench samples pooled over the rounds). */
  meanUs: number;
  p50Us: number;
  p99Us: number;
  /** Process CPU time (user + system, all threads) per call, over all rounds. */
  cpuUs: number;
}

export interface OverheadResult {
  /** The SDK line measured (raw and wrapped alike). */
  line: Line;
  method: string;
  sequential: {
    calls: number;
    raw: VariantStats;
    wrapped: VariantStats;
    /** tinybench's own cost per sample (an empty async task), µs wall / µs CPU: included in both sides above. */
    harnessUs: number;
    harnessCpuUs: number;
    /** Pooled mean wrapped / mean raw, wall. */
    ratio: number;
    /** Median over rounds of (wrapped − harness) / (raw − harness), wall: the figure held to the target. */
    ratioNet: number;
    /** The same from CPU time: steadier on a machine shared with other work. */
    cpuRatioNet: number;
    /** Median over rounds of wrapped − raw, µs per call (wall and CPU). */
    overheadUs: number;
    cpuOverheadUs: number;
    /** The net wall ratio of each round (its spread shows the noise). */
    roundRatios: number[];
  };
  concurrent: {
    batch: number;
    batches: number;
    rawUsPerCall: number;
    wrappedUsPerCall: number;
    rawCpuUsPerCall: number;
    wrappedCpuUsPerCall: number;
    /** Median over rounds, wall. */
    ratio: number;
    cpuRatio: number;
    overheadUs: number;
    roundRatios: number[];
  };
}

type Side = "raw" | "wrapped" | "harness";

/** One tinybench run of the given tasks; returns wall samples (ms) and CPU µs per iteration by side. */
async function round1(
  name: string,
  tasks: Array<[Side, () => Promise<unknown>]>,
  iterations: number,
  warmupIterations: number,
): Promise<Map<Side, { samples: number[]; mean: number; cpuUs: number }>> {
  const bench = new Bench({ name, iterations, time: 0, warmupIterations, warmupTime: 0, retainSamples: true, throws: true });
  const meters = new Map(tasks.map(([side]) => [side, cpuMeter()]));
  for (const [side, fn] of tasks) bench.add(side, fn, meters.get(side)!.hooks);
  await bench.run();
  const out = new Map<Side, { samples: number[]; mean: number; cpuUs: number }>();
  for (const [side] of tasks) {
    const task = bench.getTask(side)!;
    const result = task.result;
    if (!("latency" in result)) throw new Error(`${name}/${side} did not complete: ${result.state}`);
    out.set(side, {
      samples: [...(result.latency.samples ?? [])],
      mean: result.latency.mean,
      cpuUs: meters.get(side)!.perIterationUs(task),
    });
  }
  return out;
}

/**
 * Per-call overhead: the wrapped `mcp.callTool` against the raw v1 `client.callTool`, each over
 * the SDK's `InMemoryTransport` to its own v1 `McpServer` with a trivial tool, measured with
 * tinybench (one sample = one awaited call), in rounds whose order alternates.
 */
export async function runOverhead(
  plan: OverheadPlan,
  subject: Subject,
  log: (line: string) => void,
  line: Line = "v1",
): Promise<OverheadResult> {
  const raw = await openLine(line, null, false);
  const mcp = await openLine(line, subject.root.withCancellation, false);
  const callRaw = () => raw.call("echo");
  const callWrapped = () => mcp.call("echo");
  const net = (w: number, r: number, h: number): number => (w - h) / (r - h);

  // --- sequential ---
  const perRound = Math.ceil(plan.sequentialCalls / plan.rounds);
  const pooled = { raw: [] as number[], wrapped: [] as number[], harness: [] as number[] };
  const cpu = { raw: [] as number[], wrapped: [] as number[], harness: [] as number[] };
  const roundRatios: number[] = [];
  const cpuRatios: number[] = [];
  const wallDiffs: number[] = [];
  const cpuDiffs: number[] = [];
  for (let r = 0; r < plan.rounds; r++) {
    const tasks: Array<[Side, () => Promise<unknown>]> = [
      ["raw", callRaw],
      ["wrapped", callWrapped],
    ];
    if (r % 2 === 1) tasks.reverse();
    const m = await round1(`sequential ${r}`, [["harness", async () => {}], ...tasks], perRound, r === 0 ? 2_000 : 100);
    const [rw, ww, hw] = [m.get("raw")!, m.get("wrapped")!, m.get("harness")!];
    pooled.raw.push(...rw.samples);
    pooled.wrapped.push(...ww.samples);
    pooled.harness.push(...hw.samples);
    cpu.raw.push(rw.cpuUs);
    cpu.wrapped.push(ww.cpuUs);
    cpu.harness.push(hw.cpuUs);
    roundRatios.push(round4(net(ww.mean, rw.mean, hw.mean)));
    cpuRatios.push(net(ww.cpuUs, rw.cpuUs, hw.cpuUs));
    wallDiffs.push((ww.mean - rw.mean) * 1_000);
    cpuDiffs.push(ww.cpuUs - rw.cpuUs);
  }
  log(
    `  ${line} sequential: net ratio ${round4(median(roundRatios))} wall, ${round4(median(cpuRatios))} CPU (rounds ${Math.min(...roundRatios)}..${Math.max(...roundRatios)})`,
  );
  const us = (xs: number[]) => summarize(xs.map((ms) => ms * 1_000));
  const rawStats = us(pooled.raw);
  const wrappedStats = us(pooled.wrapped);
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

  // --- concurrent ---
  const batchesPerRound = Math.ceil(plan.batches / plan.concurrentRounds);
  const batchRaw = () => Promise.all(Array.from({ length: plan.batch }, callRaw));
  const batchWrapped = () => Promise.all(Array.from({ length: plan.batch }, callWrapped));
  const c = { raw: [] as number[], wrapped: [] as number[], rawCpu: [] as number[], wrappedCpu: [] as number[] };
  const concurrentRatios: number[] = [];
  const concurrentCpuRatios: number[] = [];
  for (let r = 0; r < plan.concurrentRounds; r++) {
    const tasks: Array<[Side, () => Promise<unknown>]> = [
      ["raw", batchRaw],
      ["wrapped", batchWrapped],
    ];
    if (r % 2 === 1) tasks.reverse();
    const m = await round1(`concurrent ${r}`, tasks, batchesPerRound, r === 0 ? 5 : 1);
    const [rw, ww] = [m.get("raw")!, m.get("wrapped")!];
    c.raw.push((rw.mean * 1_000) / plan.batch);
    c.wrapped.push((ww.mean * 1_000) / plan.batch);
    c.rawCpu.push(rw.cpuUs / plan.batch);
    c.wrappedCpu.push(ww.cpuUs / plan.batch);
    concurrentRatios.push(round4(ww.mean / rw.mean));
    concurrentCpuRatios.push(ww.cpuUs / rw.cpuUs);
  }
  log(`  ${line} concurrent: ratio ${round4(median(concurrentRatios))} wall, ${round4(median(concurrentCpuRatios))} CPU`);

  const left = mcp.counts().pending;
  if (left !== 0) throw new Error(`overhead: ${left} calls left pending`);
  await raw.close();
  await mcp.close();

  return {
    line,
    method:
      `tinybench, one sample = one awaited callTool; ${LINE_LABEL[line]}: the raw Client and the wrapped Client each over the SDK's InMemoryTransport to its own McpServer ` +
      `(tool \`echo\`), in the same process; ${plan.rounds} sequential rounds of ${perRound} calls per side, order alternating (ABBA); ` +
      "ratios are medians over rounds, net of tinybench's per-sample cost (an empty async task); CPU = process.cpuUsage() around each measured phase",
    sequential: {
      calls: pooled.raw.length,
      raw: { meanUs: round(rawStats.mean), p50Us: round(rawStats.p50), p99Us: round(rawStats.p99), cpuUs: round(avg(cpu.raw)) },
      wrapped: {
        meanUs: round(wrappedStats.mean),
        p50Us: round(wrappedStats.p50),
        p99Us: round(wrappedStats.p99),
        cpuUs: round(avg(cpu.wrapped)),
      },
      harnessUs: round(avg(pooled.harness) * 1_000),
      harnessCpuUs: round(avg(cpu.harness)),
      ratio: round4(wrappedStats.mean / rawStats.mean),
      ratioNet: round4(median(roundRatios)),
      cpuRatioNet: round4(median(cpuRatios)),
      overheadUs: round(median(wallDiffs)),
      cpuOverheadUs: round(median(cpuDiffs)),
      roundRatios,
    },
    concurrent: {
      batch: plan.batch,
      batches: plan.concurrentRounds * batchesPerRound,
      rawUsPerCall: round(avg(c.raw)),
      wrappedUsPerCall: round(avg(c.wrapped)),
      rawCpuUsPerCall: round(avg(c.rawCpu)),
      wrappedCpuUsPerCall: round(avg(c.wrappedCpu)),
      ratio: round4(median(concurrentRatios)),
      cpuRatio: round4(median(concurrentCpuRatios)),
      overheadUs: round(median(c.wrapped.map((w, i) => w - c.raw[i]!))),
      roundRatios: concurrentRatios,
    },
  };
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
