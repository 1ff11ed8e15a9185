/**
 * The building blocks of the wrapper's per-call cost, each measured alone with tinybench, so the
 * findings in bench/NOTES.md can be checked on any machine. Nothing here imports src/: each
 * block is the same JavaScript the library runs (or its obvious alternative), written out.
 *
 * Run: node --expose-gc --import tsx bench/micro.ts
 */
import { setMaxListeners } from "node:events";
import { Bench } from "tinybench";
import { z } from "zod";
import { machine } from "./lib/env.js";

const requestIdSchema = z.union([z.string(), z.number().int()]);
const cancelledParamsSchema = z.looseObject({ requestId: requestIdSchema, reason: z.string().optional() });
const CAP = 10_000;

/** A Map at its cap, evicting the oldest entry per insert the way the wire and the ledger do. */
function mapAtCap(): () => void {
  const map = new Map<number, null>();
  let next = 0;
  for (; next < CAP; next++) map.set(next, null);
  return () => {
    map.set(next++, null);
    map.delete(map.keys().next().value!);
  };
}

/** The same bound with a ring of ids beside the Map: O(1) eviction. */
function mapWithRing(): () => void {
  const map = new Map<number, null>();
  const ring = new Array<number>(CAP);
  let head = 0;
  let next = 0;
  for (; next < CAP; next++) {
    map.set(next, null);
    ring[next] = next;
  }
  return () => {
    map.delete(ring[head]!);
    ring[head] = next;
    head = (head + 1) % CAP;
    map.set(next++, null);
  };
}

/** `n` calls sharing one signal, each with a once-listener that also calls removeEventListener (as CancellableCall#dispose does), aborted: ms. */
function sharedSignalAbort(n: number, removeInHandler: boolean): number {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  for (let i = 0; i < n; i++) {
    const listener = (): void => {
      if (removeInHandler) controller.signal.removeEventListener("abort", listener);
    };
    controller.signal.addEventListener("abort", listener, { once: true });
  }
  const start = performance.now();
  controller.abort();
  return performance.now() - start;
}

async function main(): Promise<void> {
  const evictAtCap = mapAtCap();
  const evictRing = mapWithRing();
  const params = { name: "echo", arguments: {} as Record<string, unknown>, _meta: undefined as Record<string, unknown> | undefined };
  const tasks: Array<[string, () => unknown]> = [
    ["new AbortController()", () => new AbortController()],
    [
      "new AbortController() + signal.addEventListener (the SDK's, per call)",
      () => new AbortController().signal.addEventListener("abort", () => {}),
    ],
    ["new EventTarget() + addEventListener (for comparison)", () => new EventTarget().addEventListener("abort", () => {})],
    ["new Date(ms).toISOString()", () => new Date(Date.now()).toISOString()],
    ["Date.now()", () => Date.now()],
    ["performance.now()", () => performance.now()],
    ["requestIdSchema.safeParse(7) (zod, per response)", () => requestIdSchema.safeParse(7)],
    [
      'typeof id === "string" || Number.isInteger(id)',
      () => {
        const id: unknown = 7;
        return typeof id === "string" || Number.isInteger(id);
      },
    ],
    ["cancelledParamsSchema.safeParse (zod, per SDK cancel)", () => cancelledParamsSchema.safeParse({ requestId: 7, reason: "x" })],
    [`Map at ${CAP.toLocaleString("en-US")}: set + delete(keys().next()) (tombstones, ledger)`, evictAtCap],
    [`Map at ${CAP.toLocaleString("en-US")} + ring of ids: set + delete(oldest)`, evictRing],
    ["setTimeout + clearTimeout", () => clearTimeout(setTimeout(() => {}, 60_000))],
    ["new Error() (stack captured)", () => new Error("x")],
    [
      "mark _meta + strip copy (facade + wire)",
      () => {
        const marked = { ...params, _meta: { ...params._meta, "mcp-cancellable/call": 1 } };
        const message = { jsonrpc: "2.0", id: 1, method: "tools/call", params: marked };
        const { "mcp-cancellable/call": _mark, ...rest } = message.params._meta;
        const copy: Record<string, unknown> = { ...message.params };
        if (Object.keys(rest).length === 0) delete copy._meta;
        else copy._meta = rest;
        return { ...message, params: copy };
      },
    ],
  ];
  const rows: Array<{ block: string; ns: number }> = [];
  for (const [name, fn] of tasks) {
    const bench = new Bench({ time: 400, warmupTime: 100 });
    bench.add(name, fn);
    await bench.run();
    const result = bench.tasks[0]!.result;
    if (!("latency" in result)) throw new Error(`${name}: ${result.state}`);
    rows.push({ block: name, ns: Math.round(result.latency.p50 * 1e6) });
  }
  const m = machine();
  console.log(`${m.cpu}, ${m.cores} cores, Node ${m.node}, ${m.date}\n`);
  console.log("| block | median ns |\n| --- | ---: |");
  for (const row of rows) console.log(`| ${row.block} | ${row.ns.toLocaleString("en-US")} |`);
  console.log(
    "\n| calls sharing one signal, aborted | once-listener only | + removeEventListener in the handler |\n| ---: | ---: | ---: |",
  );
  for (const n of [1_000, 10_000, 20_000]) {
    console.log(
      `| ${n.toLocaleString("en-US")} | ${sharedSignalAbort(n, false).toFixed(1)} ms | ${sharedSignalAbort(n, true).toFixed(1)} ms |`,
    );
  }
}

await main();
