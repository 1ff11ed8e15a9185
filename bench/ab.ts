/**
 * A/B of two builds of the library beside the raw v1 SDK, in one process, alternating: the `src/` of a git ref
 * (default HEAD, taken with `git archive` into bench/.tmp/ab-base) against the working tree, both built with tsup.
 * Prints wall and CPU per call for sequential calls, 1,000 in flight, 10,000 aborted at once and cancels in sequence.
 * Used to measure each optimisation of issue 12 (bench/NOTES.md section 0) on a busy machine.
 *
 * Run: node --expose-gc --import tsx bench/ab.ts [ref] [seq,conc,mass,seqcancel]
 * (`AB_ROUNDS=N`: rounds of the 1,000-in-flight turn, default 6.)
 */
import { execFileSync, execSync } from "node:child_process";
import { setMaxListeners } from "node:events";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { inMemoryServer, silentPeer } from "./lib/servers.js";
const repo = new URL("../", import.meta.url).pathname;
const ref = process.argv[2] ?? "HEAD";
const only = process.argv[3] ?? "seq,conc,mass,seqcancel";
execSync(`rm -rf bench/.tmp/ab-base && mkdir -p bench/.tmp/ab-base && git archive ${ref} src | tar -x -C bench/.tmp/ab-base`, {
  cwd: repo,
});
for (const [out, src] of [
  ["bench/.tmp/ab-base/out", "bench/.tmp/ab-base/src"],
  ["bench/.tmp/ab-new", "src"],
] as const) {
  execFileSync(process.execPath, ["--import", "tsx", "bench/lib/build.ts", out, `index=${repo}${src}/index.ts`], {
    cwd: repo,
    stdio: "inherit",
  });
}
const base = await import(pathToFileURL(`${repo}bench/.tmp/ab-base/out/index.js`).href);
const neu = await import(pathToFileURL(`${repo}bench/.tmp/ab-new/index.js`).href);
const ECHO = { name: "echo", arguments: {} };
async function mk(lib: any) {
  const c = new Client({ name: "x", version: "1" });
  const t = (await inMemoryServer()).transport;
  if (!lib) {
    await c.connect(t);
    return () => c.callTool(ECHO);
  }
  const m = lib.withCancellation(c, t);
  await c.connect(m.transport);
  return () => m.callTool(ECHO);
}
const sides: Record<string, () => Promise<unknown>> = { raw: await mk(null), base: await mk(base), new: await mk(neu) };
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function measure(fn: () => Promise<unknown>, n: number, conc = 1) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n / conc; i++) {
    if (conc === 1) await fn();
    else await Promise.all(Array.from({ length: conc }, fn));
  }
  const c = process.cpuUsage(c0);
  return { wall: ((performance.now() - t0) * 1000) / n, cpu: (c.user + c.system) / n };
}
async function abRounds(label: string, rounds: number, run: (name: string) => Promise<{ wall: number; cpu: number }>) {
  const names = Object.keys(sides);
  const res: Record<string, { wall: number[]; cpu: number[] }> = {};
  for (const n of names) res[n] = { wall: [], cpu: [] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...names].reverse() : names;
    for (const n of order) {
      const m = await run(n);
      res[n]!.wall.push(m.wall);
      res[n]!.cpu.push(m.cpu);
    }
  }
  const rw = (n: string) => med(res[n]!.wall.map((w, i) => w / res.raw!.wall[i]!));
  const rc = (n: string) => med(res[n]!.cpu.map((w, i) => w / res.raw!.cpu[i]!));
  console.log(
    `${label}: raw ${med(res.raw!.wall).toFixed(1)}/${med(res.raw!.cpu).toFixed(1)}  base ${med(res.base!.wall).toFixed(1)}/${med(res.base!.cpu).toFixed(1)} (x${rw("base").toFixed(3)} wall, x${rc("base").toFixed(3)} cpu)  new ${med(res.new!.wall).toFixed(1)}/${med(res.new!.cpu).toFixed(1)} (x${rw("new").toFixed(3)} wall, x${rc("new").toFixed(3)} cpu)`,
  );
}
for (const n of Object.keys(sides)) await measure(sides[n]!, 3000);
if (only.includes("seq")) await abRounds("sequential us/call wall/cpu", 30, (n) => measure(sides[n]!, 1000));
if (only.includes("conc"))
  await abRounds("1000 in flight us/call", Number(process.env.AB_ROUNDS ?? 6), (n) => measure(sides[n]!, 5000, 1000));
async function massSide(lib: any) {
  const peer = silentPeer();
  const c = new Client({ name: "m", version: "1" });
  let call: (s: AbortSignal) => Promise<unknown>;
  if (!lib) {
    await c.connect(peer.transport);
    call = (s) => c.callTool({ name: "never", arguments: {} }, undefined, { signal: s });
  } else {
    const m = lib.withCancellation(c, peer.transport);
    await c.connect(m.transport);
    call = (s) => m.callTool({ name: "never", arguments: {} }, { signal: s });
  }
  return { c, call };
}
if (only.includes("mass")) {
  const libs: Record<string, any> = { raw: null, base, new: neu };
  await abRounds("10k aborted at once, total ms (reported as wall/cpu ms)", 6, async (n) => {
    const { c, call } = await massSide(libs[n]);
    const ctl = new AbortController();
    setMaxListeners(0, ctl.signal);
    const ps = Array.from({ length: 10000 }, () => call(ctl.signal).catch(() => {}));
    await new Promise((r) => setTimeout(r, 10));
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    ctl.abort();
    await Promise.all(ps);
    const w = performance.now() - t0;
    const cu = process.cpuUsage(c0);
    await c.close();
    (globalThis as any).gc?.();
    return { wall: w, cpu: (cu.user + cu.system) / 1000 };
  });
}
if (only.includes("seqcancel")) {
  const libs: Record<string, any> = { raw: null, base, new: neu };
  const opened: Record<string, any> = {};
  for (const n of Object.keys(libs)) opened[n] = await massSide(libs[n]);
  await abRounds("sequential cancel us/call", 8, async (n) => {
    const { call } = opened[n];
    return measure(async () => {
      const ctl = new AbortController();
      const p = call(ctl.signal);
      ctl.abort();
      await p.catch(() => {});
    }, 3000);
  });
}
process.exit(0);
