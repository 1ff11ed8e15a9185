import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getEventListeners, setMaxListeners } from "node:events";
import { activeResources, collect, heapUsed, resourceDiff, tick } from "./lib/env.js";
import { silentPeer } from "./lib/servers.js";
import { LINES, openLine } from "./lib/lines.js";
import type { Line, LineClient, PeerOptions } from "./lib/lines.js";
import type { Subject } from "./lib/subject.js";
import { round } from "./lib/stats.js";

/** 10,000 pending calls cancelled at once, one side. */
export interface ConcurrentCancelSide {
  calls: number;
  /** Time from `abort()` until every call's promise settled, ms. */
  settleAllMs: number;
  /** Heap growth while the calls were pending, per call, bytes (after full GCs). */
  heapPerPendingCallBytes: number;
  /** Heap after everything settled minus the baseline, bytes (records and tombstones kept by design count here). */
  heapRetainedAfterBytes: number;
  /** Calls the library still counts as pending afterwards (ours only). */
  pendingAfter: number | null;
  tombstonesAfter: number | null;
  recordsAfter: number | null;
  /** `abort` listeners left on the caller's shared signal afterwards. */
  listenersLeftOnSignal: number;
  /** `process.getActiveResourcesInfo()` beyond the baseline afterwards, by kind (should be `{}`). */
  resourcesLeft: Record<string, number>;
  /** `process.getActiveResourcesInfo()` beyond the baseline while the calls were pending, by kind. */
  resourcesWhilePending: Record<string, number>;
  /** `notifications/cancelled` the peer received. */
  cancelsSent: number;
  /** What the first call rejected with. */
  error: string;
}

/** 1,000,000 (or 100,000) calls cancelled one after another. */
export interface SequenceResult {
  /** Calls made (fewer than planned only when the mode's time budget ran out; stops at a heap sample). */
  calls: number;
  plannedCalls: number;
  driver: string;
  maxTombstones: number;
  maxRecords: number;
  /** Heap after full GCs every `sampleEvery` calls, MB, starting before the first call. */
  heapMB: number[];
  sampleEvery: number;
  /** Tombstone count at each sample. */
  tombstones: number[];
  /** Heap at the end minus heap at the first sample once the tombstone table was full, MB. */
  growthAfterFullMB: number;
  tombstonesMax: number;
  pendingAfter: number;
  resourcesLeft: Record<string, number>;
  usPerCancelledCall: number;
  /** The raw v1 SDK doing the same (its own AbortController per call, aborted at once), over `rawCalls` calls, µs. */
  rawUsPerCancelledCall: number;
  rawCalls: number;
  cancelsSent: number;
}

/** `calls` pending calls whose idle timeouts expire at (nearly) the same moment, one side. */
export interface TimeoutsSide {
  calls: number;
  timeoutMs: number;
  /** How long making the calls took, ms (each call's deadline is its own start + timeoutMs). */
  spreadMs: number;
  /** Settle time minus the call's own deadline, ms: median and the last call to settle. */
  latenessP50Ms: number;
  latenessMaxMs: number;
  /** Calls that settled before their deadline (must be 0). */
  early: number;
  /** `notifications/cancelled` the peer was handed (v2 lines; null on v1). */
  peerCancels: number | null;
}

/** Calls cancelled one after another, raw beside wrapped in alternating chunks, µs per call. */
export interface CancelSequenceLine {
  calls: number;
  rawUs: number;
  oursUs: number;
  rawCpuUs: number;
  oursCpuUs: number;
  /** Median over chunks of ours / raw (wall). */
  ratio: number;
  cpuRatio: number;
}

/** Every scale figure of one SDK line, raw beside wrapped. */
export interface ScaleLine {
  /**
   * `oursPeerDrops` (v2 lines): ours again with the in-memory peer dropping the notifications
   * unread, so the peer's handling of them (on the client's thread here, never with a real
   * server) is left out. Both sides send one a call; raw settles every call in the abort's one
   * listener run, before most of the peer's work, while ours settles in slices with the peer's
   * work on each slice's notifications between them.
   */
  concurrent: { ours: ConcurrentCancelSide; raw: ConcurrentCancelSide; oursPeerDrops?: ConcurrentCancelSide };
  timeouts: { ours: TimeoutsSide; raw: TimeoutsSide };
  cancelSequence: CancelSequenceLine;
}

export interface ScaleResult {
  method: string;
  /** The v1 line's 10,000-at-once figures (also under `lines.v1`). */
  concurrent: { ours: ConcurrentCancelSide; raw: ConcurrentCancelSide };
  sequence: SequenceResult;
  lines: Record<Line, ScaleLine>;
}

interface Pending {
  client: Client;
  call(signal: AbortSignal): Promise<unknown>;
  counts(): { pending: number | null; tombstones: number | null; records: number | null };
  received: { requests: number; cancels: number };
}

async function open(kind: "ours" | "raw", subject: Subject): Promise<Pending> {
  const peer = silentPeer();
  const client = new Client({ name: `bench-scale-${kind}`, version: "1.0.0" });
  if (kind === "raw") {
    await client.connect(peer.transport);
    return {
      client,
      call: (signal) => client.callTool({ name: "never", arguments: {} }, undefined, { signal }),
      counts: () => ({ pending: null, tombstones: null, records: null }),
      received: peer.received,
    };
  }
  const mcp = subject.root.withCancellation(client, peer.transport);
  await client.connect(mcp.transport);
  return {
    client,
    call: (signal) => mcp.callTool({ name: "never", arguments: {} }, { signal }),
    counts: () => ({ pending: mcp.pendingCount, tombstones: mcp.tombstoneCount, records: mcp.records().length }),
    received: peer.received,
  };
}

/** A line's silent side as the concurrent-cancel run needs it. */
async function openSilentLine(line: Line, kind: "ours" | "raw", subject: Subject, peer: PeerOptions = {}): Promise<Pending> {
  if (line === "v1") return open(kind, subject);
  const side = await openLine(line, kind === "raw" ? null : subject.root.withCancellation, true, peer);
  return {
    client: { close: () => side.close() } as unknown as Client,
    call: (signal) => side.call("never", { signal }),
    counts: side.counts,
    received: {
      requests: 0,
      get cancels() {
        return side.peerCancels() ?? Number.NaN;
      },
    },
  };
}

async function concurrentCancel(
  kind: "ours" | "raw",
  calls: number,
  subject: Subject,
  line: Line = "v1",
  peer: PeerOptions = {},
): Promise<ConcurrentCancelSide> {
  const side = await openSilentLine(line, kind, subject, peer);
  // Warm up the code paths so JIT state is not counted as heap.
  for (let i = 0; i < 200; i++) {
    const warm = new AbortController();
    const p = side.call(warm.signal).catch(() => {});
    warm.abort();
    await p;
  }
  await tick();
  const baseResources = activeResources();
  const baseHeap = heapUsed();
  const cancelsBefore = side.received.cancels;

  const controller = new AbortController();
  setMaxListeners(calls * 2, controller.signal); // silences MaxListenersExceededWarning; listeners are counted below
  let error = "";
  const settled = Array.from({ length: calls }, () =>
    side.call(controller.signal).catch((reason: unknown) => {
      if (error === "") error = reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason);
    }),
  );
  await tick();
  const pendingHeap = heapUsed();
  const resourcesWhilePending = resourceDiff(baseResources, activeResources());

  const start = performance.now();
  controller.abort();
  await Promise.all(settled);
  const settleAllMs = performance.now() - start;

  await tick();
  const counts = side.counts();
  const listenersLeftOnSignal = getEventListeners(controller.signal, "abort").length;
  settled.length = 0;
  const afterHeap = heapUsed();
  const resourcesLeft = resourceDiff(baseResources, activeResources());
  const cancelsSent = side.received.cancels - cancelsBefore;
  await side.client.close();
  return {
    calls,
    settleAllMs: round(settleAllMs),
    heapPerPendingCallBytes: Math.round((pendingHeap - baseHeap) / calls),
    heapRetainedAfterBytes: afterHeap - baseHeap,
    pendingAfter: counts.pending,
    tombstonesAfter: counts.tombstones,
    recordsAfter: counts.records,
    listenersLeftOnSignal,
    resourcesLeft,
    resourcesWhilePending,
    cancelsSent,
    error,
  };
}

async function sequence(
  plannedCalls: number,
  sampleEvery: number,
  budgetMs: number,
  subject: Subject,
  log: (line: string) => void,
): Promise<SequenceResult> {
  // The raw SDK's cost of the same cancelled call, for scale (no memory readings: it keeps no table).
  const rawSide = await open("raw", subject);
  const rawCalls = Math.min(plannedCalls, 20_000);
  const rawStart = performance.now();
  for (let i = 0; i < rawCalls; i++) {
    const controller = new AbortController();
    const call = rawSide.call(controller.signal);
    controller.abort();
    await call.catch(() => {});
  }
  const rawUsPerCancelledCall = ((performance.now() - rawStart) * 1_000) / rawCalls;
  await rawSide.client.close();

  const side = await open("ours", subject);
  const { DEFAULT_MAX_TOMBSTONES, DEFAULT_MAX_RECORDS } = subject.root;
  await tick();
  const baseResources = activeResources();
  const heapMB: number[] = [round(heapUsed() / 2 ** 20)];
  const tombstones: number[] = [side.counts().tombstones ?? 0];
  let tombstonesMax = 0;
  const cancelsBefore = side.received.cancels;
  const start = performance.now();
  let calls = plannedCalls;
  for (let i = 1; i <= plannedCalls; i++) {
    const controller = new AbortController();
    const call = side.call(controller.signal);
    controller.abort();
    await call.catch(() => {});
    if (i % 1_000 === 0) tombstonesMax = Math.max(tombstonesMax, side.counts().tombstones ?? 0);
    if (i % sampleEvery === 0) {
      heapMB.push(round(heapUsed() / 2 ** 20));
      tombstones.push(side.counts().tombstones ?? 0);
      log(`  sequence: ${i.toLocaleString("en-US")} cancelled, heap ${heapMB.at(-1)} MB, tombstones ${tombstones.at(-1)}`);
      if (performance.now() - start > budgetMs && i < plannedCalls) {
        calls = i;
        log(`  sequence: stopped at ${i.toLocaleString("en-US")} calls, over the ${budgetMs / 1_000} s budget of this mode`);
        break;
      }
    }
  }
  const elapsed = performance.now() - start; // includes the forced GCs of the heap samples
  await tick();
  const counts = side.counts();
  const resourcesLeft = resourceDiff(baseResources, activeResources());
  const cancelsSent = side.received.cancels - cancelsBefore;
  await side.client.close();
  const fullAt = tombstones.findIndex((count) => count >= DEFAULT_MAX_TOMBSTONES);
  const reference = heapMB[fullAt >= 0 ? fullAt : 1] ?? heapMB[0]!;
  return {
    calls,
    plannedCalls,
    driver:
      "the facade (withCancellation around a v1 Client) over InMemoryTransport to a silent peer; per call: new AbortController, callTool, abort(), await the rejection",
    maxTombstones: DEFAULT_MAX_TOMBSTONES,
    maxRecords: DEFAULT_MAX_RECORDS,
    heapMB,
    sampleEvery,
    tombstones,
    growthAfterFullMB: round(heapMB.at(-1)! - reference),
    tombstonesMax,
    pendingAfter: counts.pending ?? 0,
    resourcesLeft,
    usPerCancelledCall: round((elapsed * 1_000) / calls),
    rawUsPerCancelledCall: round(rawUsPerCancelledCall),
    rawCalls,
    cancelsSent,
  };
}

/** `calls` calls to a silent peer with the same idle timeout, made at once; when does each settle? */
async function timeoutsAtOnce(line: Line, kind: "ours" | "raw", calls: number, timeoutMs: number, subject: Subject): Promise<TimeoutsSide> {
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
  const spreadMs = performance.now() - first;
  await Promise.all(all);
  const peerCancels = side.peerCancels();
  await side.close();
  const lateness = settledAt.map((at, i) => at - deadlines[i]!).sort((a, b) => a - b);
  return {
    calls,
    timeoutMs,
    spreadMs: round(spreadMs),
    latenessP50Ms: round(lateness[Math.floor(calls / 2)]!),
    latenessMaxMs: round(lateness[calls - 1]!),
    early: lateness.filter((x) => x < -0.5).length,
    peerCancels,
  };
}

/** Calls cancelled one after another (new AbortController, call, abort, await), raw and ours in alternating chunks. */
async function cancelSequence(line: Line, calls: number, subject: Subject): Promise<CancelSequenceLine> {
  const sides: Record<"raw" | "ours", LineClient> = {
    raw: await openLine(line, null, true),
    ours: await openLine(line, subject.root.withCancellation, true),
  };
  const chunk = 1_000;
  const chunks = Math.max(2, Math.ceil(calls / chunk));
  const run = async (side: LineClient, n: number) => {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const controller = new AbortController();
      const call = side.call("never", { signal: controller.signal });
      controller.abort();
      await call.catch(() => {});
    }
    const cpu = process.cpuUsage(cpu0);
    return { us: ((performance.now() - t0) * 1_000) / n, cpuUs: (cpu.user + cpu.system) / n };
  };
  await run(sides.raw, 200);
  await run(sides.ours, 200);
  const acc = { raw: [] as number[], ours: [] as number[], rawCpu: [] as number[], oursCpu: [] as number[] };
  for (let c = 0; c < chunks; c++) {
    const order: Array<"raw" | "ours"> = c % 2 === 0 ? ["raw", "ours"] : ["ours", "raw"];
    for (const kind of order) {
      const m = await run(sides[kind], chunk);
      acc[kind].push(m.us);
      acc[kind === "raw" ? "rawCpu" : "oursCpu"].push(m.cpuUs);
    }
  }
  await sides.raw.close();
  await sides.ours.close();
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return {
    calls: chunks * chunk,
    rawUs: round(avg(acc.raw)),
    oursUs: round(avg(acc.ours)),
    rawCpuUs: round(avg(acc.rawCpu)),
    oursCpuUs: round(avg(acc.oursCpu)),
    ratio: round(med(acc.ours.map((x, i) => x / acc.raw[i]!))),
    cpuRatio: round(med(acc.oursCpu.map((x, i) => x / acc.rawCpu[i]!))),
  };
}

/** How many calls each scale measure makes (`npm run bench` is short, `bench:full` full). */
export interface ScalePlan {
  concurrent: number;
  sequenceCalls: number;
  sampleEvery: number;
  sequenceBudgetMs: number;
  timeoutCalls: number;
  timeoutMs: number;
  cancelSequenceCalls: number;
}

/**
 * Scale: (1) `concurrent` calls to a silent peer (never answers), all cancelled by one shared
 * AbortController, ours beside the raw v1 SDK; (2) `sequenceCalls` calls cancelled one after
 * another through the facade, heap sampled (after full GCs) every `sampleEvery` calls.
 */
export async function runScale(plan: ScalePlan, subject: Subject, log: (line: string) => void): Promise<ScaleResult> {
  collect();
  const lines = {} as Record<Line, ScaleLine>;
  for (const line of LINES) {
    // Raw and ours alternate: ours first on v1, raw first on the v2 lines.
    const order: Array<"ours" | "raw"> = line === "v2-legacy" ? ["raw", "ours"] : ["ours", "raw"];
    const concurrent = {} as ScaleLine["concurrent"];
    for (const kind of order) {
      concurrent[kind] = await concurrentCancel(kind, plan.concurrent, subject, line);
      collect();
    }
    if (line !== "v1") {
      concurrent.oursPeerDrops = await concurrentCancel("ours", plan.concurrent, subject, line, { dropCancels: true });
      collect();
    }
    log(
      `  ${line}: ${plan.concurrent} cancelled at once: ours ${concurrent.ours.settleAllMs} ms, raw ${concurrent.raw.settleAllMs} ms; heap/pending ours ${concurrent.ours.heapPerPendingCallBytes} B, raw ${concurrent.raw.heapPerPendingCallBytes} B`,
    );
    const timeouts = {} as ScaleLine["timeouts"];
    for (const kind of order) {
      timeouts[kind] = await timeoutsAtOnce(line, kind, plan.timeoutCalls, plan.timeoutMs, subject);
      collect();
    }
    log(
      `  ${line}: ${plan.timeoutCalls} timeouts: last settles ours +${timeouts.ours.latenessMaxMs} ms, raw +${timeouts.raw.latenessMaxMs} ms`,
    );
    const cancelSeq = await cancelSequence(line, plan.cancelSequenceCalls, subject);
    log(
      `  ${line}: cancels in sequence: ours ${cancelSeq.oursUs} µs, raw ${cancelSeq.rawUs} µs (x${cancelSeq.ratio} wall, x${cancelSeq.cpuRatio} CPU)`,
    );
    lines[line] = { concurrent, timeouts, cancelSequence: cancelSeq };
    collect();
  }
  const { ours, raw } = lines.v1.concurrent;
  const seq = await sequence(plan.sequenceCalls, plan.sampleEvery, plan.sequenceBudgetMs, subject, log);
  return {
    lines,
    method:
      "silent in-memory peer (answers initialize only, never a tools/call); heap = process.memoryUsage().heapUsed after 4 forced GCs (--expose-gc); " +
      "resources = process.getActiveResourcesInfo() counted by kind, minus a baseline taken before the calls",
    concurrent: { ours, raw },
    sequence: seq,
  };
}
