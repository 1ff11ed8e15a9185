/**
 * Where the wrapper's per-call overhead goes: a CPU profile (node:inspector, the same sampler
 * as `node --cpu-prof`) of N sequential wrapped calls and of N raw calls over the in-memory
 * transport, with every sample charged to the nearest frame of ours (src/) or the SDK's;
 * zod, Node built-ins and native frames are charged to the caller that led into them.
 *
 * Run: node --expose-gc --import tsx bench/profile.ts [calls] [--cancel] [--source] [--line=v1|v2-legacy|v2-2026] [--concurrent] [--alloc]
 *   --cancel: profile cancelled calls (to a silent peer) instead of answered ones;
 *   --line, --concurrent: answered calls on that SDK line (bench/lib/lines.ts), sequential or 1,000 in flight;
 *   --alloc: with --line, a sampling allocation profile (bytes allocated per call, by owner) instead of a CPU profile;
 *   --lines: name each frame with its line too (tells apart same-named methods);
 *   --source: profile src/ through tsx instead of the tsup build (adds tsx's `__name` wrappers);
 *   --lib=PATH: profile another build of the library (such as an ablation variant's out/index.js).
 * The .cpuprofile files themselves go to /tmp/mcp-cancellable-bench-*.cpuprofile (open in Chrome DevTools).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Session } from "node:inspector/promises";
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import * as source from "../src/index.js";
import { loadSubject } from "./lib/subject.js";
import { inMemoryServer, silentPeer } from "./lib/servers.js";
import { collect } from "./lib/env.js";
import { openLine } from "./lib/lines.js";
import type { Line } from "./lib/lines.js";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Per-bucket µs per call. */
export interface ProfileBreakdown {
  calls: number;
  totalUsPerCall: number;
  gcUsPerCall: number;
  /** Owner → µs per call (self time of the owner and of the zod/built-in/native frames it called). */
  owners: Record<string, number>;
}

const ECHO = { name: "echo", arguments: {} };

function category(url: string): "ours" | "sdk" | "zod" | "tinybench" | "bench" | "other" {
  if (url.includes("/node_modules/@modelcontextprotocol/")) return "sdk";
  if (url.includes("/node_modules/zod/")) return "zod";
  if (url.includes("/node_modules/")) return "other";
  if (url.includes("/src/") || url.includes("/bench/.tmp/build/") || url.includes("/bench/.tmp/ablation/")) return "ours";
  if (url.includes("/bench/")) return "bench";
  return "other";
}

function shortName(node: ProfileNode): string {
  const file = node.callFrame.url
    .replace(/^.*\/src\//, "src/")
    .replace(/^.*\/bench\/.tmp\/build\//, "build/")
    .replace(/^.*\/bench\/.tmp\/ablation\/[^/]+\/out\//, "build/")
    .replace(/^.*\/sdk\/dist\/esm\//, "sdk/")
    .replace(/^.*\/@modelcontextprotocol\/([^/]+)\/dist\//, "$1/");
  const line = process.argv.includes("--lines") ? `:${node.callFrame.lineNumber + 1}` : "";
  return `${file}:${node.callFrame.functionName || "(anonymous)"}${line}`;
}

/** Charges each sample to its nearest ours/SDK frame, tagging what the leaf was (zod, builtin, ...). */
export function attribute(profile: Profile, calls: number): ProfileBreakdown {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const ownerCache = new Map<number, string>();
  const ownerOf = (id: number): string => {
    const cached = ownerCache.get(id);
    if (cached !== undefined) return cached;
    const leaf = byId.get(id)!;
    const leafCat = category(leaf.callFrame.url);
    const leafTag = leafCat === "zod" ? " → zod" : leafCat === "other" ? ` → ${leaf.callFrame.functionName || "(native)"}` : "";
    let current: number | undefined = id;
    let owner = "unattributed";
    while (current !== undefined) {
      const node = byId.get(current)!;
      const cat = category(node.callFrame.url);
      if (cat === "ours") {
        owner = `ours ${shortName(node)}${leafTag}`;
        break;
      }
      if (cat === "sdk") {
        owner = `sdk ${shortName(node)}${leafTag}`;
        break;
      }
      if (cat === "bench" || cat === "tinybench") {
        owner = "bench harness";
        break;
      }
      current = parent.get(current);
    }
    if (owner === "unattributed") owner = `unattributed ${leaf.callFrame.functionName || leaf.callFrame.url || "(root)"}`;
    ownerCache.set(id, owner);
    return owner;
  };
  const owners = new Map<string, number>();
  let total = 0;
  let gc = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    const dt = profile.timeDeltas[i + 1] ?? 0; // the delta after a sample is the time it stands for
    const node = byId.get(id)!;
    const name = node.callFrame.functionName;
    if (name === "(idle)" || name === "(program)") continue;
    total += dt;
    if (name === "(garbage collector)") {
      gc += dt;
      continue;
    }
    const owner = ownerOf(id);
    owners.set(owner, (owners.get(owner) ?? 0) + dt);
  }
  const perCall = (us: number) => Math.round((us / calls) * 100) / 100;
  return {
    calls,
    totalUsPerCall: perCall(total),
    gcUsPerCall: perCall(gc),
    owners: Object.fromEntries([...owners.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, perCall(v)])),
  };
}

async function profiled(session: Session, calls: number, fn: () => Promise<unknown>): Promise<Profile> {
  for (let i = 0; i < 3_000; i++) await fn(); // warm up (JIT)
  collect();
  await session.post("Profiler.start");
  for (let i = 0; i < calls; i++) await fn();
  const { profile } = await session.post("Profiler.stop");
  return profile as unknown as Profile;
}

/** Profiles `calls` raw and `calls` wrapped sequential calls; returns both breakdowns. */
export async function runProfile(
  calls: number,
  withCancellation: typeof source.withCancellation,
  saveTo?: string,
): Promise<{ raw: ProfileBreakdown; wrapped: ProfileBreakdown }> {
  const raw = new Client({ name: "profile-raw", version: "1.0.0" });
  await raw.connect((await inMemoryServer()).transport);
  const wrappedClient = new Client({ name: "profile-wrapped", version: "1.0.0" });
  const mcp = withCancellation(wrappedClient, (await inMemoryServer()).transport);
  await wrappedClient.connect(mcp.transport);

  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 50 });
  const rawProfile = await profiled(session, calls, () => raw.callTool(ECHO));
  const wrappedProfile = await profiled(session, calls, () => mcp.callTool(ECHO));
  await session.post("Profiler.disable");
  session.disconnect();
  if (saveTo !== undefined) {
    writeFileSync(`${saveTo}-raw.cpuprofile`, JSON.stringify(rawProfile));
    writeFileSync(`${saveTo}-wrapped.cpuprofile`, JSON.stringify(wrappedProfile));
  }
  await raw.close();
  await wrappedClient.close();
  return { raw: attribute(rawProfile, calls), wrapped: attribute(wrappedProfile, calls) };
}

/**
 * Profiles `calls` cancelled calls, raw and wrapped: each to a silent peer (never answers), with
 * its own AbortController aborted right after the call is made, awaiting the rejection.
 */
export async function runCancelProfile(
  calls: number,
  withCancellation: typeof source.withCancellation,
  saveTo?: string,
): Promise<{ raw: ProfileBreakdown; wrapped: ProfileBreakdown }> {
  const raw = new Client({ name: "profile-cancel-raw", version: "1.0.0" });
  await raw.connect(silentPeer().transport);
  const wrappedClient = new Client({ name: "profile-cancel-wrapped", version: "1.0.0" });
  const mcp = withCancellation(wrappedClient, silentPeer().transport);
  await wrappedClient.connect(mcp.transport);
  const cancelled = (call: (signal: AbortSignal) => Promise<unknown>) => async (): Promise<void> => {
    const controller = new AbortController();
    const pending = call(controller.signal);
    controller.abort();
    await pending.catch(() => {});
  };
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 50 });
  const rawProfile = await profiled(
    session,
    calls,
    cancelled((signal) => raw.callTool({ name: "never" }, undefined, { signal })),
  );
  const wrappedProfile = await profiled(
    session,
    calls,
    cancelled((signal) => mcp.callTool({ name: "never" }, { signal })),
  );
  await session.post("Profiler.disable");
  session.disconnect();
  if (saveTo !== undefined) {
    writeFileSync(`${saveTo}-cancel-raw.cpuprofile`, JSON.stringify(rawProfile));
    writeFileSync(`${saveTo}-cancel-wrapped.cpuprofile`, JSON.stringify(wrappedProfile));
  }
  await raw.close();
  await wrappedClient.close();
  return { raw: attribute(rawProfile, calls), wrapped: attribute(wrappedProfile, calls) };
}

/** A sampling allocation profile node (HeapProfiler.stopSampling). */
interface AllocNode {
  callFrame: ProfileNode["callFrame"];
  selfSize: number;
  children: AllocNode[];
}

/** Bytes allocated per call by owner (the nearest frame of ours or of the SDK), from a sampling allocation profile. */
export function attributeAllocations(head: AllocNode, calls: number): { totalBytesPerCall: number; owners: Record<string, number> } {
  const owners = new Map<string, number>();
  let total = 0;
  const walk = (node: AllocNode, owner: string): void => {
    const cat = category(node.callFrame.url);
    const mine =
      cat === "ours" || cat === "sdk"
        ? `${cat} ${shortName(node as unknown as ProfileNode)}`
        : cat === "bench" || cat === "tinybench"
          ? "bench harness"
          : owner;
    // zod, Node built-ins and native frames are charged to the frame of ours or the SDK's that led into them.
    if (node.selfSize > 0) {
      owners.set(mine, (owners.get(mine) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const child of node.children) walk(child, mine);
  };
  walk(head, "unattributed");
  const perCall = (bytes: number) => Math.round(bytes / calls);
  return {
    totalBytesPerCall: perCall(total),
    owners: Object.fromEntries([...owners.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, perCall(v)])),
  };
}

/**
 * Answered calls on one SDK line, raw then wrapped, sequential or 1,000 in flight: a CPU profile
 * (or, with `alloc`, a sampling allocation profile at 256 bytes) of each, attributed by owner.
 */
export async function runLineProfile(
  line: Line,
  concurrent: boolean,
  calls: number,
  withCancellation: typeof source.withCancellation,
  alloc: boolean,
  saveTo?: string,
): Promise<{ raw: unknown; wrapped: unknown }> {
  const session = new Session();
  session.connect();
  const loop = (call: () => Promise<unknown>) => async (): Promise<void> => {
    if (!concurrent) {
      for (let i = 0; i < calls; i++) await call();
      return;
    }
    for (let done = 0; done < calls; done += 1_000) await Promise.all(Array.from({ length: 1_000 }, call));
  };
  const one = async (client: Awaited<ReturnType<typeof openLine>>, name: string) => {
    const run = loop(() => client.call("echo"));
    await run(); // warm up (JIT), and fill the tombstone tables
    collect();
    if (alloc) {
      await session.post("HeapProfiler.enable");
      await session.post("HeapProfiler.startSampling", {
        samplingInterval: 256,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      } as never);
      await run();
      const { profile } = await session.post("HeapProfiler.stopSampling");
      await session.post("HeapProfiler.disable");
      if (saveTo !== undefined)
        writeFileSync(`${saveTo}-${line}-${concurrent ? "conc" : "seq"}-${name}.heapprofile`, JSON.stringify(profile));
      return attributeAllocations((profile as unknown as { head: AllocNode }).head, calls);
    }
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 50 });
    await session.post("Profiler.start");
    await run();
    const { profile } = await session.post("Profiler.stop");
    await session.post("Profiler.disable");
    if (saveTo !== undefined) writeFileSync(`${saveTo}-${line}-${concurrent ? "conc" : "seq"}-${name}.cpuprofile`, JSON.stringify(profile));
    return attribute(profile as unknown as Profile, calls);
  };
  const rawClient = await openLine(line, null, false);
  const raw = await one(rawClient, "raw");
  await rawClient.close();
  const wrappedClient = await openLine(line, withCancellation, false);
  const wrapped = await one(wrappedClient, "wrapped");
  await wrappedClient.close();
  session.disconnect();
  return { raw, wrapped };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const fromSource = process.argv.includes("--source");
  const calls = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 50_000);
  const libArg = process.argv.find((arg) => arg.startsWith("--lib="))?.slice(6);
  const subject = fromSource
    ? source
    : libArg !== undefined
      ? ((await import(pathToFileURL(libArg).href)) as typeof source)
      : (await loadSubject()).root;
  const line = process.argv.find((arg) => arg.startsWith("--line="))?.slice(7) as Line | undefined;
  const run = process.argv.includes("--cancel") ? runCancelProfile : runProfile;
  const result =
    line !== undefined
      ? await runLineProfile(
          line,
          process.argv.includes("--concurrent"),
          calls,
          subject.withCancellation,
          process.argv.includes("--alloc"),
          "/tmp/mcp-cancellable-bench",
        )
      : await run(calls, subject.withCancellation, "/tmp/mcp-cancellable-bench");
  console.log(JSON.stringify(result, null, 2));
  process.exit(0);
}
