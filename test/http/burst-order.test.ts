// A 2025-era cancel whose notification cannot leave at once (its fetch queued behind a burst's
// others, or a client whose event loop is busy): the server must still read the notification
// before the request's stream closes (rule 40; docs/delivery.md, step 3), and the record's
// `sentAt` is when the notification left, not when its send was called. An outside tester's: 300
// calls cancelled together, every stream closed before its notifications/cancelled POST arrived,
// by up to 0.8 s, and `sentAt` was up to 1.1 s before the POST's arrival: the close's bound
// (flushTimeoutMs) ran from the send, and the sends queued behind each other. The bound now runs
// from the notification's body written (the library's fetch reports it). Here the client's loop is
// held past that bound right after the abort, before any byte of the POST can leave. A raw server
// on 127.0.0.1 (test/fixtures/reliability/raw-http-server.ts) logs each POST and each stream's close.
import { afterEach, describe, expect, it } from "vitest";
import { startRawHttp } from "../fixtures/reliability/raw-http-server.js";
import { connectV1 } from "./clients.js";
import { eventually } from "../helpers/timing.js";
import type { RunRecord } from "../../src/index.js";

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
});

/** Holds the thread `ms` or more (a busy event loop). */
const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe("a 2025-era notification that leaves late: the notification first, then the stream's close", () => {
  it("the loop held 400 ms (past flushTimeoutMs) right after the aborts of 20 calls: the server reads each notification before its stream closes; sentAt is when it left", async () => {
    const server = await startRawHttp();
    cleanup.push(() => server.stop());
    const records: RunRecord[] = [];
    const { mcp, close } = await connectV1(server.url, { onRecord: (record) => records.push(record) });
    cleanup.push(close);
    const calls = 20;
    const controllers = Array.from({ length: calls }, () => new AbortController());
    const settled = controllers.map((controller) =>
      mcp.callTool({ name: "hang" }, { signal: controller.signal, timeoutMs: 30_000 }).then(
        () => "answered",
        () => "rejected",
      ),
    );
    const heads = () => server.events.filter((e) => e.kind === "request" && e.rpc === "tools/call").length;
    expect(await eventually(() => heads() === calls, 10_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100)); // every SSE head read: each notification goes at its abort
    const abortedAt = Date.now();
    for (const controller of controllers) controller.abort();
    busy(400);
    const heldUntil = Date.now();
    expect(await Promise.all(settled)).toEqual(Array.from({ length: calls }, () => "rejected"));
    const cancelOf = (id: unknown) =>
      server.events.find((e) => e.kind === "request" && e.rpc === "notifications/cancelled" && e.cancelOf === id);
    const closeOf = (id: unknown) => server.events.find((e) => e.kind === "close" && e.rpc === "tools/call" && e.id === id);
    const ids = mcp.records().map((record) => record.requestId);
    expect(await eventually(() => ids.every((id) => cancelOf(id) !== undefined && closeOf(id) !== undefined), 10_000)).toBe(true);
    expect(ids.filter((id) => closeOf(id)!.t < cancelOf(id)!.t)).toEqual([]);
    expect(server.events.filter((e) => e.kind === "request" && e.rpc === "notifications/cancelled")).toHaveLength(calls);
    // Each record's last sentAt: when its notification left, after the held loop, not at the abort.
    expect(await eventually(() => mcp.records().every((record) => Date.parse(record.cancel!.sentAt!) >= heldUntil - 1), 5_000)).toBe(true);
    expect(abortedAt).toBeLessThan(heldUntil);
  });
});
