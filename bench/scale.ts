import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getEventListeners, setMaxListeners } from "node:events";
import { activeResources, collect, heapUsed, resourceDiff, tick } from "./lib/env.js";
import { silentPeer } from "./lib/servers.js";
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

export interface ScaleResult {
  method: string;
  concurrent: { ours: ConcurrentCancelSide; raw: ConcurrentCancelSide };
  sequence: SequenceResult;
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

async function concurrentCancel(kind: "ours" | "raw", calls: number, subject: Subject): Promise<ConcurrentCancelSide> {
  const side = await open(kind, subject);
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

/**
 * Scale: (1) `concurrent` calls to a silent peer (never answers), all cancelled by one shared
 * AbortController, ours beside the raw v1 SDK; (2) `sequenceCalls` calls cancelled one after
 * another through the facade, heap sampled (after full GCs) every `sampleEvery` calls.
 */
export async function runScale(
  plan: { concurrent: number; sequenceCalls: number; sampleEvery: number; sequenceBudgetMs: number },
  subject: Subject,
  log: (line: string) => void,
): Promise<ScaleResult> {
  collect();
  const ours = await concurrentCancel("ours", plan.concurrent, subject);
  const raw = await concurrentCancel("raw", plan.concurrent, subject);
  log(`  scale: ${plan.concurrent} cancelled at once: ours ${ours.settleAllMs} ms, raw ${raw.settleAllMs} ms`);
  const seq = await sequence(plan.sequenceCalls, plan.sampleEvery, plan.sequenceBudgetMs, subject, log);
  return {
    method:
      "silent in-memory peer (answers initialize only, never a tools/call); heap = process.memoryUsage().heapUsed after 4 forced GCs (--expose-gc); " +
      "resources = process.getActiveResourcesInfo() counted by kind, minus a baseline taken before the calls",
    concurrent: { ours, raw },
    sequence: seq,
  };
}
