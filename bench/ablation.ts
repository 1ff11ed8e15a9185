/**
 * Ablation of the per-call overhead: builds patched copies of src/ (in bench/.tmp/ablation;
 * src/ itself is never touched), one change each, and measures every copy against the raw v1
 * SDK with the same tinybench harness as bench/overhead.ts, interleaved. The difference from
 * the unpatched build is what that part of the library costs per call. The measure is CPU time
 * per call (process.cpuUsage), which other processes on a shared machine hardly disturb. A patch whose target
 * text is no longer in src/ is reported as `stale` (src changed since this script was written).
 *
 * Also runs the unpatched build with the public options `maxTombstones` (100, 100_000) and
 * `maxRecords: 0`, which need no patch.
 *
 * Run: node --expose-gc --import tsx bench/ablation.ts [roundCalls=2000] [rounds=6] [passes=3] [--only=name,name]
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Bench } from "tinybench";
import { build } from "tsup";
import type * as Root from "../src/index.js";
import { cpuMeter } from "./lib/cpu.js";
import { machine } from "./lib/env.js";
import { inMemoryServer } from "./lib/servers.js";
import { median, round } from "./lib/stats.js";

interface Patch {
  file: string;
  find: string;
  replace: string;
}

interface Variant {
  name: string;
  what: string;
  patches: Patch[];
  options?: Parameters<typeof Root.withCancellation>[2];
}

const WIRE = "wire/wire.ts";
const CALL = "core/cancellable-call.ts";

/**
 * The candidates left after 74ae52d (which landed the ring-evicted tombstones, no per-call
 * AbortController, the Symbol marker and cached ISO times). Patches name text in src/: when src/
 * changes under them they are reported stale, not applied.
 */
const VARIANTS: Variant[] = [
  { name: "baseline", what: "src/ as it is", patches: [] },
  {
    name: "typeof-response-checks",
    what: "the response's id and shape checked with typeof instead of requestIdSchema.safeParse + responseSchema.safeParse (zod)",
    patches: [
      {
        file: WIRE,
        find: "const parsed = requestIdSchema.safeParse(message.id);\n    if (!parsed.success) return true;",
        replace:
          'const parsed = { success: typeof message.id === "string" || Number.isInteger(message.id), data: message.id as RequestId };\n    if (!parsed.success) return true;',
      },
      {
        file: WIRE,
        find: "if (entry.call !== null && !responseSchema.safeParse(message).success) {",
        replace: 'if (entry.call !== null && !("result" in message || "error" in message)) {',
      },
    ],
  },
  {
    name: "no-call-timer",
    what: "CancellableCall arms no timer (measures the per-call setTimeout/clearTimeout of the idle and total timeouts)",
    patches: [{ file: CALL, find: "    this.#timer = this.#init.timers.setTimeout(this.#onTimer, delay);\n", replace: "" }],
  },
  {
    name: "all-of-the-above",
    what: "every patch above together",
    patches: [],
  },
  { name: "maxRecords-0", what: "public option maxRecords: 0 (no in-memory ledger)", patches: [], options: { maxRecords: 0 } },
];

VARIANTS.find((v) => v.name === "all-of-the-above")!.patches = VARIANTS.filter(
  (v) => v.name !== "all-of-the-above" && v.patches.length > 0,
).flatMap((v) => v.patches);

const repo = fileURLToPath(new URL("../", import.meta.url));
const work = `${repo}bench/.tmp/ablation`;

async function buildVariant(variant: Variant): Promise<"built" | "stale"> {
  const dir = `${work}/${variant.name}`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(`${repo}src`, `${dir}/src`, { recursive: true });
  for (const patch of variant.patches) {
    const path = `${dir}/src/${patch.file}`;
    const text = readFileSync(path, "utf8");
    if (!text.includes(patch.find)) return "stale";
    writeFileSync(path, text.replace(patch.find, patch.replace));
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

const ECHO = { name: "echo", arguments: {} };

interface Measured {
  rawUs: number[];
  baselineUs: number[];
  variantUs: number[];
}

/**
 * In a fresh process: the raw SDK, the unpatched build and one variant side by side, in rounds
 * whose order rotates, CPU µs per call each. The variant is compared with the baseline in the
 * same process and the same rounds, so what one process's JIT and memory layout add cancels out.
 */
async function measure(variant: Variant, roundCalls: number, rounds: number): Promise<Measured> {
  const load = async (name: string) => (await import(pathToFileURL(`${work}/${name}/out/index.js`).href)) as typeof Root;
  const raw = new Client({ name: "ablation-raw", version: "1.0.0" });
  await raw.connect((await inMemoryServer()).transport);
  const wrap = async (lib: typeof Root, options: Variant["options"]) => {
    const client = new Client({ name: "ablation-wrapped", version: "1.0.0" });
    const mcp = lib.withCancellation(client, (await inMemoryServer()).transport, options);
    await client.connect(mcp.transport);
    return { client, call: () => mcp.callTool(ECHO) };
  };
  const baseline = await wrap(await load("baseline"), undefined);
  const patched = await wrap(await load(variant.patches.length > 0 ? variant.name : "baseline"), variant.options);
  const calls = { raw: () => raw.callTool(ECHO), baseline: baseline.call, variant: patched.call };
  // Fill the tombstone tables first, so every build is measured in its steady state.
  for (let i = 0; i < 12_000; i++) {
    await calls.baseline();
    await calls.variant();
  }
  const out: Measured = { rawUs: [], baselineUs: [], variantUs: [] };
  const sides = ["raw", "baseline", "variant"] as const;
  for (let r = 0; r < rounds; r++) {
    const bench = new Bench({ iterations: roundCalls, time: 0, warmupIterations: 100, warmupTime: 0, throws: true });
    const meters = { raw: cpuMeter(), baseline: cpuMeter(), variant: cpuMeter() };
    const order = [...sides.slice(r % 3), ...sides.slice(0, r % 3)];
    if (Math.floor(r / 3) % 2 === 1) order.reverse();
    for (const side of order) bench.add(side, calls[side], meters[side].hooks);
    await bench.run();
    out.rawUs.push(meters.raw.perIterationUs(bench.getTask("raw")!));
    out.baselineUs.push(meters.baseline.perIterationUs(bench.getTask("baseline")!));
    out.variantUs.push(meters.variant.perIterationUs(bench.getTask("variant")!));
  }
  await baseline.client.close();
  await patched.client.close();
  await raw.close();
  return out;
}

function spawnMeasure(variant: Variant, roundCalls: number, rounds: number): Measured {
  const output = execFileSync(
    process.execPath,
    ["--expose-gc", "--import", "tsx", fileURLToPath(import.meta.url), "--measure", variant.name, String(roundCalls), String(rounds)],
    { cwd: repo, encoding: "utf8", maxBuffer: 1 << 20 },
  );
  return JSON.parse(output.trim().split("\n").at(-1)!) as Measured;
}

async function main(): Promise<void> {
  const measureAt = process.argv.indexOf("--measure");
  if (measureAt > 0) {
    const variant = VARIANTS.find((v) => v.name === process.argv[measureAt + 1])!;
    const result = await measure(variant, Number(process.argv[measureAt + 2]), Number(process.argv[measureAt + 3]));
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  const positional = process.argv.slice(2).filter((arg) => !arg.startsWith("--"));
  const roundCalls = Number(positional[0] ?? 2_000);
  const rounds = Number(positional[1] ?? 6);
  const passes = Number(positional[2] ?? 3);
  const only = process.argv
    .find((arg) => arg.startsWith("--only="))
    ?.slice(7)
    .split(",");
  const usable: Variant[] = [];
  const stale: Variant[] = [];
  for (const variant of VARIANTS) {
    if (variant.name !== "baseline" && only !== undefined && !only.includes(variant.name)) continue;
    ((await buildVariant(variant)) === "stale" ? stale : usable).push(variant);
  }
  const measured = usable.filter((v) => v.name !== "baseline");
  const samples = new Map<string, Measured>(measured.map((v) => [v.name, { rawUs: [], baselineUs: [], variantUs: [] }]));
  for (let pass = 0; pass < passes; pass++) {
    const order = pass % 2 === 0 ? measured : [...measured].reverse();
    for (const variant of order) {
      const m = spawnMeasure(variant, roundCalls, rounds);
      const all = samples.get(variant.name)!;
      all.rawUs.push(...m.rawUs);
      all.baselineUs.push(...m.baselineUs);
      all.variantUs.push(...m.variantUs);
      const saved = median(m.baselineUs.map((b, i) => b - m.variantUs[i]!));
      console.log(`pass ${pass + 1}/${passes} ${variant.name}: saves ${saved.toFixed(1)} µs CPU per call against the baseline`);
    }
  }
  interface Row {
    name: string;
    what: string;
    rawUs?: number;
    baselineUs?: number;
    variantUs?: number;
    baselineOverheadUs?: number;
    variantOverheadUs?: number;
    savedUs?: number;
    cheaperIn?: string;
  }
  const results: Row[] = [
    ...measured.map((variant): Row => {
      const m = samples.get(variant.name)!;
      return {
        name: variant.name,
        what: variant.what,
        rawUs: round(median(m.rawUs)),
        baselineUs: round(median(m.baselineUs)),
        variantUs: round(median(m.variantUs)),
        baselineOverheadUs: round(median(m.baselineUs.map((b, i) => b - m.rawUs[i]!))),
        variantOverheadUs: round(median(m.variantUs.map((v, i) => v - m.rawUs[i]!))),
        savedUs: round(median(m.baselineUs.map((b, i) => b - m.variantUs[i]!))),
        /** Rounds in which the variant was cheaper than the baseline. */
        cheaperIn: `${m.baselineUs.filter((b, i) => b > m.variantUs[i]!).length}/${m.baselineUs.length}`,
      };
    }),
    ...stale.map((variant): Row => ({ name: variant.name, what: `${variant.what} (stale: src/ changed)` })),
  ];
  console.log("\nvariant                  raw µs  baseline µs  variant µs  saved µs  cheaper in   (CPU per call, medians)");
  for (const r of results) {
    if (r.savedUs === undefined) {
      console.log(`${r.name.padEnd(24)} stale`);
      continue;
    }
    console.log(
      `${r.name.padEnd(24)} ${String(r.rawUs).padStart(6)} ${String(r.baselineUs).padStart(12)} ${String(r.variantUs).padStart(11)} ${String(r.savedUs).padStart(9)}  ${(r.cheaperIn ?? "").padStart(9)}`,
    );
  }
  const out = {
    machine: machine(),
    roundCalls,
    rounds,
    passes,
    method:
      "each variant in its own process beside the raw v1 SDK and the unpatched build, rounds of tinybench in rotating order; process CPU time " +
      "(user+system) per call; saved = median over all rounds of all passes of (baseline − variant) from the same round; tombstone tables pre-filled with 12,000 calls",
    results,
  };
  writeFileSync(`${work}/ablation.json`, `${JSON.stringify(out, null, 2)}\n`);
  console.log(`wrote ${work}/ablation.json`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
