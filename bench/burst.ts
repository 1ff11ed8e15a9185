/**
 * 10,000 calls to a silent peer timing out together (bench/scale.ts's row), on one SDK line, with
 * its timeline: lateness percentiles, settles and deadlines per 10 ms from the first deadline,
 * and the garbage collections in the burst (PerformanceObserver "gc"). PROF=1 writes a CPU
 * profile of the burst to /tmp/burst.cpuprofile.
 * Run: node --expose-gc --import tsx bench/burst.ts [v1|v2-legacy|v2-2026] [ours|raw]
 */
import { PerformanceObserver } from "node:perf_hooks";
import { openLine } from "./lib/lines.js";
import { loadSubject } from "./lib/subject.js";
const line = (process.argv[2] ?? "v2-2026") as "v1" | "v2-legacy" | "v2-2026";
const kind = process.argv[3] ?? "ours";
const calls = 10_000,
  timeoutMs = 3_000;
const subject = await loadSubject();
const gcs: Array<{ t: number; ms: number; kind: number }> = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    gcs.push({ t: e.startTime, ms: e.duration, kind: (e as { detail?: { kind?: number } }).detail?.kind ?? 0 });
}).observe({ entryTypes: ["gc"] });
const side = await openLine(line, kind === "raw" ? null : subject.root.withCancellation, true);
for (let i = 0; i < 50; i++) await side.call("never", { timeoutMs: 1 }).catch(() => {});
const deadlines: number[] = new Array(calls);
const settledAt: number[] = new Array(calls);
const first = performance.now();
const all = Array.from({ length: calls }, (_, i) => {
  deadlines[i] = performance.now() + timeoutMs;
  return side.call("never", { timeoutMs }).then(
    () => void (settledAt[i] = performance.now()),
    () => void (settledAt[i] = performance.now()),
  );
});
const spread = performance.now() - first;
let session: import("node:inspector/promises").Session | undefined;
if (process.env.PROF) {
  const { Session } = await import("node:inspector/promises");
  session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  await new Promise((r) => setTimeout(r, Math.max(0, deadlines[0]! - performance.now() - 20)));
  await session.post("Profiler.start");
}
await Promise.all(all);
if (session) {
  const { profile } = await session.post("Profiler.stop");
  (await import("node:fs")).writeFileSync("/tmp/burst.cpuprofile", JSON.stringify(profile));
}
const lat = settledAt.map((a, i) => a - deadlines[i]!);
const sorted = [...lat].sort((a, b) => a - b);
const d0 = deadlines[0]!;
console.log(
  `${line} ${kind}: spread ${spread.toFixed(0)} ms; lateness p50 ${sorted[calls / 2]!.toFixed(1)} p90 ${sorted[calls * 0.9]!.toFixed(1)} max ${sorted[calls - 1]!.toFixed(1)}; first settle at +${(Math.min(...settledAt) - d0).toFixed(1)} after first deadline, last at +${(Math.max(...settledAt) - d0).toFixed(1)}`,
);
for (const g of gcs.filter((g) => g.t > d0 - 50 && g.t < d0 + spread + 300))
  console.log(`  gc kind ${g.kind} at +${(g.t - d0).toFixed(1)} for ${g.ms.toFixed(1)} ms`);
// settle timeline: settled count per 10 ms bucket
const buckets = new Map<number, number>();
for (const a of settledAt) {
  const b = Math.floor((a - d0) / 10) * 10;
  buckets.set(b, (buckets.get(b) ?? 0) + 1);
}
console.log(
  "  settles per 10ms from first deadline:",
  [...buckets]
    .sort((a, b) => a[0] - b[0])
    .map(([b, n]) => `${b}:${n}`)
    .join(" "),
);
const dl = new Map<number, number>();
for (const d of deadlines) {
  const b = Math.floor((d - d0) / 10) * 10;
  dl.set(b, (dl.get(b) ?? 0) + 1);
}
console.log(
  "  deadlines per 10ms:",
  [...dl]
    .sort((a, b) => a[0] - b[0])
    .map(([b, n]) => `${b}:${n}`)
    .join(" "),
);
await side.close();
process.exit(0);
