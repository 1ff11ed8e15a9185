import { LINE_LABEL, openLine } from "./lib/lines.js";
import type { Line } from "./lib/lines.js";
import type { Subject } from "./lib/subject.js";
import { round, summarize } from "./lib/stats.js";

/** Sizes of the per-call overhead run. */
export interface OverheadPlan {
  /** Sequential calls measured per side. */
  sequentialCalls: number;
  /**
   * Sequential calls per turn: the sides take turns chunk by chunk (ABBA), so the collections one
   * side's garbage sets off, and any drift of the machine, fall on both alike.
   */
  chunk: number;
  /** Calls in flight at once in the concurrent run. */
  batch: number;
  /** Concurrent batches measured per side, taking turns batch by batch (ABBA). */
  batches: number;
}

/** µs per call for one variant. */
export interface VariantStats {
  /** Wall time per call (pooled over the chunks). */
  meanUs: number;
  p50Us: number;
  p99Us: number;
  /** Process CPU time (user + system, all threads) per call, over the chunks. */
  cpuUs: number;
}

/** The spread of the per-turn ratios (wrapped / raw of one chunk or batch). */
export interface TurnSpread {
  p10: number;
  p50: number;
  p90: number;
  turns: number;
}

export interface OverheadResult {
  /** The SDK line measured (raw and wrapped alike). */
  line: Line;
  method: string;
  sequential: {
    calls: number;
    raw: VariantStats;
    wrapped: VariantStats;
    /** The loop's own cost per call (an empty async task, awaited and timed alike), µs wall / µs CPU: included in both sides above. */
    harnessUs: number;
    harnessCpuUs: number;
    /** Pooled mean wrapped / mean raw, wall. */
    ratio: number;
    /** Pooled (wrapped − harness) / (raw − harness), wall: the figure held to the target. */
    ratioNet: number;
    /** The same from CPU time. */
    cpuRatioNet: number;
    /** Pooled wrapped − raw, µs per call (wall and CPU). */
    overheadUs: number;
    cpuOverheadUs: number;
    /** The net wall ratio of the chunks (their spread shows the noise). */
    chunks: TurnSpread;
  };
  concurrent: {
    batch: number;
    batches: number;
    rawUsPerCall: number;
    wrappedUsPerCall: number;
    rawCpuUsPerCall: number;
    wrappedCpuUsPerCall: number;
    /** Pooled wrapped / raw, wall. */
    ratio: number;
    cpuRatio: number;
    overheadUs: number;
    turns: TurnSpread;
  };
}

type Side = "raw" | "wrapped" | "harness";

/** One turn of a side: its wall and CPU time, ms. */
interface Turn {
  wallMs: number;
  cpuMs: number;
}

/** Runs `fn` `count` times, each awaited, timing each call into `samples` (ms). */
async function sequentialTurn(fn: () => Promise<unknown>, count: number, samples: number[] | null): Promise<Turn> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const s = performance.now();
    await fn();
    samples?.push(performance.now() - s);
  }
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1_000 };
}

/** Runs `count` calls of `fn` at once and awaits them all. */
async function batchTurn(fn: () => Promise<unknown>, count: number): Promise<Turn> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: count }, fn));
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1_000 };
}

function spread(ratios: number[]): TurnSpread {
  const sorted = [...ratios].sort((a, b) => a - b);
  const at = (q: number): number => round4(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN);
  return { p10: at(0.1), p50: at(0.5), p90: at(0.9), turns: ratios.length };
}

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

/**
 * Per-call overhead: the wrapped `mcp.callTool` against the raw `client.callTool` of one SDK
 * line, each over the SDK's in-memory transport to its own server with a trivial tool, in one
 * process. The sides take turns (ABBA), a chunk of sequential calls or a batch of concurrent
 * calls at a time, and the figures are pooled over the turns: with turns that short, the young
 * generation's collections (a raw call allocates about 24 KB) fall on each side in proportion to
 * the garbage it makes, and neither pays the other's. (Rounds of a thousand calls or more, one
 * side after the other, left each round's second side the first one's collections: the
 * concurrent ratio swung with the order, 0.84 to 1.28 between rounds.)
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
  const callHarness = async (): Promise<void> => {};

  // --- sequential ---
  const chunks = Math.ceil(plan.sequentialCalls / plan.chunk);
  for (let i = 0; i < Math.max(4, Math.ceil(2_000 / plan.chunk)); i++) {
    await sequentialTurn(callRaw, plan.chunk, null);
    await sequentialTurn(callWrapped, plan.chunk, null);
  }
  const samples = { raw: [] as number[][], wrapped: [] as number[][] };
  const turns = { raw: [] as Turn[], wrapped: [] as Turn[], harness: [] as Turn[] };
  for (let c = 0; c < chunks; c++) {
    const order: Side[] = c % 2 === 0 ? ["harness", "raw", "wrapped"] : ["wrapped", "raw", "harness"];
    for (const side of order) {
      const list = side === "harness" ? null : [];
      turns[side].push(await sequentialTurn(side === "raw" ? callRaw : side === "wrapped" ? callWrapped : callHarness, plan.chunk, list));
      if (list !== null) samples[side as "raw" | "wrapped"].push(list);
    }
  }
  const calls = chunks * plan.chunk;
  const total = (list: Turn[], of: "wallMs" | "cpuMs"): number => sum(list.map((t) => t[of]));
  const wall = { raw: total(turns.raw, "wallMs"), wrapped: total(turns.wrapped, "wallMs"), harness: total(turns.harness, "wallMs") };
  const cpuMs = { raw: total(turns.raw, "cpuMs"), wrapped: total(turns.wrapped, "cpuMs"), harness: total(turns.harness, "cpuMs") };
  const net = (w: number, r: number, h: number): number => (w - h) / (r - h);
  const perCallUs = (ms: number): number => (ms * 1_000) / calls;
  const ratioNet = round4(net(wall.wrapped, wall.raw, wall.harness));
  const cpuRatioNet = round4(net(cpuMs.wrapped, cpuMs.raw, cpuMs.harness));
  const chunkSpread = spread(turns.raw.map((r, i) => net(turns.wrapped[i]!.wallMs, r.wallMs, turns.harness[i]!.wallMs)));
  log(
    `  ${line} sequential: net ratio ${ratioNet} wall, ${cpuRatioNet} CPU (one chunk's: p10 ${chunkSpread.p10}, p50 ${chunkSpread.p50}, p90 ${chunkSpread.p90})`,
  );
  const us = (xs: number[][]) => summarize(xs.flat().map((ms) => ms * 1_000));
  const rawStats = us(samples.raw);
  const wrappedStats = us(samples.wrapped);

  // --- concurrent ---
  for (let i = 0; i < 4; i++) {
    await batchTurn(callRaw, plan.batch);
    await batchTurn(callWrapped, plan.batch);
  }
  const batches = { raw: [] as Turn[], wrapped: [] as Turn[] };
  for (let b = 0; b < plan.batches; b++) {
    const order: Array<"raw" | "wrapped"> = b % 2 === 0 ? ["raw", "wrapped"] : ["wrapped", "raw"];
    for (const side of order) batches[side].push(await batchTurn(side === "raw" ? callRaw : callWrapped, plan.batch));
  }
  const batchCalls = plan.batches * plan.batch;
  const c = {
    raw: (total(batches.raw, "wallMs") * 1_000) / batchCalls,
    wrapped: (total(batches.wrapped, "wallMs") * 1_000) / batchCalls,
    rawCpu: (total(batches.raw, "cpuMs") * 1_000) / batchCalls,
    wrappedCpu: (total(batches.wrapped, "cpuMs") * 1_000) / batchCalls,
  };
  const batchSpread = spread(batches.raw.map((r, i) => batches.wrapped[i]!.wallMs / r.wallMs));
  log(
    `  ${line} concurrent: ratio ${round4(c.wrapped / c.raw)} wall, ${round4(c.wrappedCpu / c.rawCpu)} CPU (one batch's: p10 ${batchSpread.p10}, p50 ${batchSpread.p50}, p90 ${batchSpread.p90})`,
  );

  const left = mcp.counts().pending;
  if (left !== 0) throw new Error(`overhead: ${left} calls left pending`);
  await raw.close();
  await mcp.close();

  return {
    line,
    method:
      `${LINE_LABEL[line]}: the raw Client and the wrapped Client each over the SDK's InMemoryTransport to its own McpServer ` +
      `(tool \`echo\`), in the same process; ${plan.sequentialCalls.toLocaleString("en-US")} sequential calls per side in turns of ${plan.chunk}, ` +
      `and ${plan.batches} batches of ${plan.batch} in flight per side, the order alternating turn by turn (ABBA); ` +
      "figures pooled over all the turns; " +
      "sequential ratios net of the loop's own cost per call (an empty async task, awaited and timed alike); CPU = process.cpuUsage() around each turn",
    sequential: {
      calls,
      raw: { meanUs: round(rawStats.mean), p50Us: round(rawStats.p50), p99Us: round(rawStats.p99), cpuUs: round(perCallUs(cpuMs.raw)) },
      wrapped: {
        meanUs: round(wrappedStats.mean),
        p50Us: round(wrappedStats.p50),
        p99Us: round(wrappedStats.p99),
        cpuUs: round(perCallUs(cpuMs.wrapped)),
      },
      harnessUs: round(perCallUs(wall.harness)),
      harnessCpuUs: round(perCallUs(cpuMs.harness)),
      ratio: round4(wall.wrapped / wall.raw),
      ratioNet,
      cpuRatioNet,
      overheadUs: round(perCallUs(wall.wrapped - wall.raw)),
      cpuOverheadUs: round(perCallUs(cpuMs.wrapped - cpuMs.raw)),
      chunks: chunkSpread,
    },
    concurrent: {
      batch: plan.batch,
      batches: plan.batches,
      rawUsPerCall: round(c.raw),
      wrappedUsPerCall: round(c.wrapped),
      rawCpuUsPerCall: round(c.rawCpu),
      wrappedCpuUsPerCall: round(c.wrappedCpu),
      ratio: round4(c.wrapped / c.raw),
      cpuRatio: round4(c.wrappedCpu / c.rawCpu),
      overheadUs: round(c.wrapped - c.raw),
      turns: batchSpread,
    },
  };
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
