/**
 * Ablation of the per-call cost (issue 30, item 1): builds patched copies of src/ (in
 * bench/.tmp/ablation; src/ itself is never touched), each removing one piece of what a call
 * does, and measures every copy beside the unpatched build and the raw SDK, in one process per
 * variant, on each SDK line (v1, v2 legacy, v2 pinned 2026-07-28), sequential and 1,000 in
 * flight. Two figures per piece: CPU µs per call (process.cpuUsage, steady on a shared machine)
 * and bytes allocated per call (heapUsed growth over batches that saw no GC). The difference
 * from the unpatched build is what that piece costs. A patch whose target text is no longer in
 * src/ is reported as `stale`.
 *
 * Run: node --expose-gc --import tsx bench/ablation.ts [--lines=v1,v2-legacy,v2-2026] [--modes=seq,conc]
 *   [--rounds=8] [--calls=2000] [--passes=1] [--only=name,name]
 * Writes bench/.tmp/ablation/ablation.json and prints a table.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "tsup";
import type * as Root from "../src/index.js";
import { machine } from "./lib/env.js";
import { LINES, openLine } from "./lib/lines.js";
import type { Line, LineClient } from "./lib/lines.js";
import { median, round } from "./lib/stats.js";

/** A change to one file of src/: returns the patched text, or null when its target is gone (stale). */
type Patch = { file: string; apply: (text: string) => string | null };

interface Variant {
  name: string;
  /** The piece it removes (or adds), as the table names it. */
  what: string;
  patches: Patch[];
  /** Options given to withCancellation (the baseline gets none). */
  options?: Parameters<typeof Root.withCancellation>[2];
  /** Per-call options of the variant's calls (the baseline's calls have none). */
  callOptions?: { timeoutMs?: number };
  /** The saving is divided by this (a variant that adds N copies of a piece). */
  per?: number;
}

const CALL = "core/cancellable-call.ts";
const RUNNER = "runner/runner.ts";
const WIRE = "wire/wire.ts";

/** Replaces `find` (which must occur once) with `replace`. */
function swap(file: string, find: string, replace: string): Patch {
  return { file, apply: (text) => (text.split(find).length === 2 ? text.replace(find, replace) : null) };
}

/** Replaces what `pattern` matches (once) with `replace`. */
function swapRe(file: string, pattern: RegExp, replace: string): Patch {
  return { file, apply: (text) => (pattern.test(text) ? text.replace(pattern, replace) : null) };
}

export const VARIANTS: Variant[] = [
  { name: "baseline", what: "src/ as it is", patches: [] },
  {
    name: "call-options",
    what: "option resolution: every call made with { timeoutMs: 60000 } (zod, a resolved options object per call) instead of none",
    patches: [],
    callOptions: { timeoutMs: 60_000 },
    per: -1,
  },
  {
    name: "no-option-check",
    what: "option resolution for a call without options: the options and verifiers checks in run() removed",
    patches: [
      swapRe(
        RUNNER,
        / {4}if \(options !== undefined\) \{\n[\s\S]*?\n {4}\}\n {4}\/\/ A tool call without its own `verify`[\s\S]*?\n {4}\}\n/,
        "",
      ),
    ],
  },
  {
    name: "no-facts",
    what: "the record's facts: the settle keeps one shared facts object instead of the call's own (no object, no Date.now, no elapsed time)",
    patches: [
      swapRe(
        CALL,
        / {4}const facts: SettledFacts = \{\n([\s\S]*?)\n {4}\};\n/,
        "    const facts: SettledFacts = (SHARED_FACTS ??= {\n$1\n    });\n",
      ),
      {
        file: CALL,
        apply: (text) => `${text}\nlet SHARED_FACTS: SettledFacts | undefined;\n`,
      },
    ],
  },
  {
    name: "no-deadline",
    what: "the deadline entry: the call is never queued (no heap push and remove, no timer armed or cleared)",
    patches: [
      swap(CALL, "    const deadline = Math.min(this.#idle(), this.#totalDeadline());\n", "    return;\n    const deadline = 0;\n"),
    ],
  },
  {
    name: "plus-8-layers",
    what: "the pipeline's layers: 8 more pass-through layers (the saving, negative, is per layer; a connection has 3 and the transport's edges)",
    patches: [
      swap(
        WIRE,
        "        ...adapterLayers(adapter),\n",
        "        ...adapterLayers(adapter),\n        ...Array.from({ length: 8 }, () => (below: Port) => new Layer(below)),\n",
      ),
    ],
    per: -8,
  },
  {
    name: "no-observer-check",
    what: "the observer check in run() removed",
    patches: [
      swapRe(
        RUNNER,
        / {4}const observation =\n {6}defaults\.observer === undefined\n[\s\S]*? {10}\}\);\n/,
        "    const observation = undefined;\n",
      ),
    ],
  },
  {
    name: "no-tombstones",
    what: "id bookkeeping: no tombstone (settled id and token remembered for late messages) per call",
    patches: [
      swapRe(
        WIRE,
        /( {2}#tombstone\(id: RequestId, call: LateSink \| null, token: string \| number \| undefined\): void \{\n)/,
        "$1    return;\n",
      ),
    ],
  },
  {
    name: "no-marker-copy",
    what: "id bookkeeping: the call's marker put on the caller's params (mutated) instead of on a copy",
    patches: [
      swapRe(
        RUNNER,
        / {2}const copy: Record<string \| symbol, unknown> = \{ \[CALL_MARKER\]: key, \.\.\.params \};\n {2}if \(copy\[CALL_MARKER\] !== key\) copy\[CALL_MARKER\] = key;\n {2}return copy;/,
        "  (params as Record<string | symbol, unknown>)[CALL_MARKER] = key;\n  return params;",
      ),
    ],
  },
  { name: "no-ledger", what: "the in-memory ledger off (public option maxRecords: 0)", patches: [], options: { maxRecords: 0 } },
];

const repo = fileURLToPath(new URL("../", import.meta.url));
const work = `${repo}bench/.tmp/ablation`;

async function buildVariant(variant: Variant): Promise<"built" | "stale"> {
  const dir = `${work}/${variant.name}`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(`${repo}src`, `${dir}/src`, { recursive: true });
  for (const patch of variant.patches) {
    const path = `${dir}/src/${patch.file}`;
    const patched = patch.apply(readFileSync(path, "utf8"));
    if (patched === null) return "stale";
    writeFileSync(path, patched);
  }
  await build({
    config: false,
    entry: { index: `${dir}/src/index.ts` },
    format: ["esm"],
    outDir: `${dir}/out`,
    target: "node20",
    dts: false,
    clean: true,
    silent: true,
    noExternal: ["p-timeout"],
    external: [/^@modelcontextprotocol\//],
  });
  return "built";
}

type Mode = "seq" | "conc";
type Side = "raw" | "baseline" | "variant";

/** Per line and mode, per side: CPU µs per call (one per round) and bytes allocated per call (one per clean batch). */
type Measured = Record<string, Record<Side, { cpuUs: number[]; bytes: number[] }>>;

const CONCURRENT = 1_000;

/** GC pauses seen (start and end, performance.now() ms), to drop allocation batches a GC ran in. */
const gcs: Array<[number, number]> = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcs.push([entry.startTime, entry.startTime + entry.duration]);
}).observe({ entryTypes: ["gc"] });

async function runCalls(call: () => Promise<unknown>, mode: Mode, calls: number): Promise<void> {
  if (mode === "seq") {
    for (let i = 0; i < calls; i++) await call();
    return;
  }
  for (let done = 0; done < calls; done += CONCURRENT) {
    const batch: Promise<unknown>[] = new Array(CONCURRENT);
    for (let i = 0; i < CONCURRENT; i++) batch[i] = call();
    await Promise.all(batch);
  }
}

/** Bytes allocated per call: heapUsed growth over a batch of calls during which no GC ran (median of the clean batches). */
async function allocation(call: () => Promise<unknown>, mode: Mode, batches: number): Promise<number[]> {
  const size = mode === "seq" ? 200 : CONCURRENT;
  const samples: Array<{ t0: number; t1: number; bytes: number }> = [];
  for (let b = 0; b < batches; b++) {
    const t0 = performance.now();
    const h0 = process.memoryUsage().heapUsed;
    await runCalls(call, mode, size);
    const h1 = process.memoryUsage().heapUsed;
    samples.push({ t0, t1: performance.now(), bytes: (h1 - h0) / size });
  }
  await new Promise((resolve) => setTimeout(resolve, 20)); // the gc entries are delivered asynchronously
  return samples.filter((s) => s.bytes > 0 && !gcs.some(([start, end]) => end >= s.t0 && start <= s.t1)).map((s) => s.bytes);
}

/**
 * In a fresh process: the raw SDK, the unpatched build and one variant side by side, per line and
 * mode, in rounds whose order rotates.
 */
async function measure(variant: Variant, lines: Line[], modes: Mode[], calls: number, rounds: number): Promise<Measured> {
  const load = async (name: string) => (await import(pathToFileURL(`${work}/${name}/out/index.js`).href)) as typeof Root;
  const baselineLib = await load("baseline");
  const variantLib = variant.patches.length > 0 ? await load(variant.name) : baselineLib;
  const out: Measured = {};
  for (const line of lines) {
    const sides: Record<Side, LineClient> = {
      raw: await openLine(line, null, false),
      baseline: await openLine(line, baselineLib.withCancellation, false),
      variant: await openLine(
        line,
        ((client, transport) => variantLib.withCancellation(client, transport, variant.options)) as typeof Root.withCancellation,
        false,
      ),
    };
    const callOf: Record<Side, () => Promise<unknown>> = {
      raw: () => sides.raw.call("echo"),
      baseline: () => sides.baseline.call("echo"),
      variant: variant.callOptions === undefined ? () => sides.variant.call("echo") : () => sides.variant.call("echo", variant.callOptions),
    };
    // Warm up, and fill the tombstone tables (10,000 by default), so every build is in its steady state.
    for (const side of ["raw", "baseline", "variant"] as const) await runCalls(callOf[side], "conc", 12_000);
    for (const mode of modes) {
      const key = `${line} ${mode}`;
      const sample: Measured[string] = {
        raw: { cpuUs: [], bytes: [] },
        baseline: { cpuUs: [], bytes: [] },
        variant: { cpuUs: [], bytes: [] },
      };
      const n = mode === "seq" ? calls : Math.max(CONCURRENT, Math.round(calls / CONCURRENT) * CONCURRENT);
      for (let r = 0; r < rounds; r++) {
        const order: Side[] = (["raw", "baseline", "variant"] as const)
          .slice(r % 3)
          .concat((["raw", "baseline", "variant"] as const).slice(0, r % 3));
        if (Math.floor(r / 3) % 2 === 1) order.reverse();
        for (const side of order) {
          const cpu0 = process.cpuUsage();
          await runCalls(callOf[side], mode, n);
          const cpu = process.cpuUsage(cpu0);
          sample[side].cpuUs.push((cpu.user + cpu.system) / n);
        }
      }
      for (const side of ["raw", "baseline", "variant"] as const) sample[side].bytes = await allocation(callOf[side], mode, 12);
      out[key] = sample;
    }
    for (const side of Object.values(sides)) await side.close();
  }
  return out;
}

function spawnMeasure(variant: Variant, lines: Line[], modes: Mode[], calls: number, rounds: number): Measured {
  const output = execFileSync(
    process.execPath,
    [
      "--expose-gc",
      "--max-semi-space-size=64",
      "--import",
      "tsx",
      fileURLToPath(import.meta.url),
      "--measure",
      variant.name,
      lines.join(","),
      modes.join(","),
      String(calls),
      String(rounds),
    ],
    { cwd: repo, encoding: "utf8", maxBuffer: 16 << 20 },
  );
  return JSON.parse(output.trim().split("\n").at(-1)!) as Measured;
}

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

async function main(): Promise<void> {
  const measureAt = process.argv.indexOf("--measure");
  if (measureAt > 0) {
    const [name, lines, modes, calls, rounds] = process.argv.slice(measureAt + 1);
    const variant = VARIANTS.find((v) => v.name === name)!;
    const result = await measure(variant, lines!.split(",") as Line[], modes!.split(",") as Mode[], Number(calls), Number(rounds));
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  const lines = (arg("lines")?.split(",") ?? [...LINES]) as Line[];
  const modes = (arg("modes")?.split(",") ?? ["seq", "conc"]) as Mode[];
  const rounds = Number(arg("rounds") ?? 8);
  const calls = Number(arg("calls") ?? 2_000);
  const passes = Number(arg("passes") ?? 1);
  const only = arg("only")?.split(",");
  const usable: Variant[] = [];
  const stale: Variant[] = [];
  for (const variant of VARIANTS) {
    if (variant.name !== "baseline" && only !== undefined && !only.includes(variant.name)) continue;
    ((await buildVariant(variant)) === "stale" ? stale : usable).push(variant);
  }
  for (const v of stale) console.log(`stale: ${v.name} (src/ changed under its patch)`);
  const measured = usable.filter((v) => v.name !== "baseline");
  const all = new Map<string, Measured>();
  for (let pass = 0; pass < passes; pass++) {
    for (const variant of pass % 2 === 0 ? measured : [...measured].reverse()) {
      const m = spawnMeasure(variant, lines, modes, calls, rounds);
      const acc = all.get(variant.name);
      if (acc === undefined) all.set(variant.name, m);
      else
        for (const [key, sides] of Object.entries(m))
          for (const side of ["raw", "baseline", "variant"] as const) {
            acc[key]![side].cpuUs.push(...sides[side].cpuUs);
            acc[key]![side].bytes.push(...sides[side].bytes);
          }
      console.log(`pass ${pass + 1}/${passes}: ${variant.name} measured`);
    }
  }
  const rows = [];
  for (const variant of measured) {
    const m = all.get(variant.name)!;
    for (const [key, s] of Object.entries(m)) {
      const per = variant.per ?? 1;
      const savedUs = median(s.baseline.cpuUs.map((b, i) => b - s.variant.cpuUs[i]!)) / per;
      const savedBytes = (median(s.baseline.bytes) - median(s.variant.bytes)) / per;
      rows.push({
        variant: variant.name,
        what: variant.what,
        line: key,
        rawUs: round(median(s.raw.cpuUs)),
        baselineUs: round(median(s.baseline.cpuUs)),
        variantUs: round(median(s.variant.cpuUs)),
        overheadUs: round(median(s.baseline.cpuUs.map((b, i) => b - s.raw.cpuUs[i]!))),
        savedUs: round(savedUs),
        cheaperIn: `${s.baseline.cpuUs.filter((b, i) => b > s.variant.cpuUs[i]!).length}/${s.baseline.cpuUs.length}`,
        rawBytes: Math.round(median(s.raw.bytes)),
        baselineBytes: Math.round(median(s.baseline.bytes)),
        savedBytes: Math.round(savedBytes),
      });
    }
  }
  console.log(
    "\nvariant              line             raw µs  ours µs  +µs   saved µs  cheaper  raw B  ours B  saved B   (CPU per call and bytes allocated per call, medians)",
  );
  for (const r of rows) {
    console.log(
      `${r.variant.padEnd(20)} ${r.line.padEnd(15)} ${String(r.rawUs).padStart(7)} ${String(r.baselineUs).padStart(8)} ${String(r.overheadUs).padStart(5)} ${String(r.savedUs).padStart(9)}  ${r.cheaperIn.padStart(7)} ${String(r.rawBytes).padStart(6)} ${String(r.baselineBytes).padStart(7)} ${String(r.savedBytes).padStart(8)}`,
    );
  }
  mkdirSync(work, { recursive: true });
  writeFileSync(
    `${work}/ablation.json`,
    `${JSON.stringify(
      {
        machine: machine(),
        calls,
        rounds,
        passes,
        method:
          "each variant in its own process (--max-semi-space-size=64) beside the raw SDK and the unpatched build, per line and mode, rounds in rotating order; " +
          "CPU = process.cpuUsage() (user+system) per call; saved = median over rounds of (baseline − variant), divided by `per` for variants that add N copies; " +
          "bytes = heapUsed growth per call over batches (200 sequential or 1,000 in flight) that no GC ran in, median; tombstone tables pre-filled with 12,000 calls",
        rows,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`wrote ${work}/ablation.json`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
