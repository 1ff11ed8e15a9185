import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CallCancelledError, CallTimeoutError, isCallCancelledError, isCallTimeoutError } from "../../src/index.js";
import type { Anomaly } from "../../src/index.js";
import { connectPeer, flush, settleOf } from "../helpers/peer.js";

// The cases of shared/cases.md, each named after its id, against the real v1 SDK Client over
// its in-memory transport, with a scripted peer and fake timers fixing the order of every race.
// The same cases over real stdio child processes are in test/e2e/stdio.test.ts.

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** What the SDK itself still holds for requests: must be empty once every call settled. */
function sdkMaps(client: object) {
  const c = client as {
    _responseHandlers: Map<unknown, unknown>;
    _progressHandlers: Map<unknown, unknown>;
    _timeoutInfo: Map<unknown, unknown>;
  };
  return { responses: c._responseHandlers.size, progress: c._progressHandlers.size, timeouts: c._timeoutInfo.size };
}

describe("C01 response still written after notifications/cancelled (rules 6, 8)", () => {
  it("C01 rejects at the cancel, sends one cancel, drops the result at 150, and the next call works", async () => {
    const { mcp, peer, errors, client } = await connectPeer();
    const controller = new AbortController();
    const call = settleOf(mcp.callTool({ name: "report", arguments: {} }, { signal: controller.signal }));
    await flush();
    const [request] = peer.requests("tools/call");
    expect(request!.id).toBe(1);
    await vi.advanceTimersByTimeAsync(50);
    controller.abort();
    await flush();
    expect(call.status).toBe("rejected");
    expect(call.error).toBeInstanceOf(CallCancelledError);
    expect(peer.cancels()).toEqual([
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1, reason: "Cancelled by the client" } },
    ]);
    await vi.advanceTimersByTimeAsync(100);
    await peer.result(1);
    await flush();
    expect(call.status).toBe("rejected"); // never resolves
    expect(mcp.records()[0]).toMatchObject({
      requestId: 1,
      status: "cancelled",
      outcome: "late-result-discarded",
      late: { results: 1 },
      summary: "cancelled (aborted), late result discarded",
    });
    expect(errors).toEqual([]); // no "unknown message ID" from the SDK
    peer.onRequest((m) => void peer.result(m.id, { content: [{ type: "text", text: "second" }] }));
    await expect(mcp.callTool({ name: "report" })).resolves.toMatchObject({ content: [{ text: "second" }] });
    expect(sdkMaps(client)).toEqual({ responses: 0, progress: 0, timeouts: 0 });
  });
});

describe("C02 cancel path sends a JSON-RPC response (rule 8)", () => {
  const variants = [
    {
      name: "an error with code 0",
      send: (peer: Awaited<ReturnType<typeof connectPeer>>["peer"]) => peer.error(1, 0, "Request cancelled"),
      late: { errors: 1, results: 0 },
    },
    {
      name: "a result with no content",
      send: (peer: Awaited<ReturnType<typeof connectPeer>>["peer"]) => peer.result(1, {}),
      late: { errors: 0, results: 1 },
    },
  ];
  for (const variant of variants) {
    it(`C02 ${variant.name} after the cancel is discarded before any validation`, async () => {
      const { mcp, peer, errors } = await connectPeer({ timeoutMs: 50 });
      const call = settleOf(mcp.callTool({ name: "report" }));
      await vi.advanceTimersByTimeAsync(50);
      expect(call.error).toBeInstanceOf(CallTimeoutError);
      await vi.advanceTimersByTimeAsync(100);
      await variant.send(peer);
      await flush();
      expect(errors).toEqual([]); // no validation error, no unknown-id error
      expect(mcp.records()[0]).toMatchObject({ outcome: "late-result-discarded", late: variant.late });
      peer.onRequest((m) => void peer.result(m.id));
      await expect(mcp.callTool({ name: "report" })).resolves.toBeDefined(); // no reconnect needed
    });
  }
});

describe("C03 the client sends notifications/cancelled (rules 14, 15)", () => {
  it("C03 A: a timeout rejects at 100 and sends exactly one cancel with a reason", async () => {
    const { mcp, peer } = await connectPeer();
    const call = settleOf(mcp.callTool({ name: "silent" }, { timeoutMs: 100 }));
    await vi.advanceTimersByTimeAsync(99);
    expect(call.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(isCallTimeoutError(call.error)).toBe(true);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(peer.cancels()).toEqual([
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1, reason: "Request timed out after 100 ms" } },
    ]);
  });

  it("C03 B: an abort at 40 rejects at 40 as cancelled, and nothing is sent twice", async () => {
    const { mcp, peer } = await connectPeer();
    const controller = new AbortController();
    const call = settleOf(mcp.callTool({ name: "silent" }, { timeoutMs: 100, signal: controller.signal, reason: "user left" }));
    await vi.advanceTimersByTimeAsync(40);
    controller.abort();
    await flush();
    expect(isCallCancelledError(call.error)).toBe(true);
    expect((call.error as CallCancelledError).elapsedMs).toBe(40);
    await vi.advanceTimersByTimeAsync(1_000); // the timeout would have fired at 100
    controller.abort();
    expect(peer.cancels()).toEqual([{ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1, reason: "user left" } }]);
  });
});

describe("C04 progress reset measured from the original start (rule 17)", () => {
  it("C04 max timeout holds while progress keeps arriving", async () => {
    const { mcp, peer, errors } = await connectPeer();
    const call = settleOf(mcp.callTool({ name: "long" }, { timeoutMs: 100, resetTimeoutOnProgress: true, maxTotalTimeoutMs: 300 }));
    await flush();
    const token = (peer.requests("tools/call")[0]!.params!._meta as { progressToken: number }).progressToken;
    let step = 0;
    for (let t = 40; t < 300; t += 40) {
      await vi.advanceTimersByTimeAsync(40);
      await peer.progress(token, ++step);
      await flush();
    }
    expect(call.status).toBe("pending"); // t=280: no idle timeout despite 100 ms budget
    await vi.advanceTimersByTimeAsync(20);
    expect((call.error as CallTimeoutError).code).toBe("MAX_TOTAL_TIMEOUT");
    expect((call.error as CallTimeoutError).elapsedMs).toBe(300);
    await peer.progress(token, ++step); // after 300: does not revive the call
    await flush();
    expect(mcp.records()[0]).toMatchObject({ status: "cancelled", cancel: { trigger: "max-total-timeout" }, late: { progress: 1 } });
    expect(errors).toEqual([]);
  });

  it("C04 without progress the idle timeout fires at 100", async () => {
    const { mcp } = await connectPeer();
    const call = settleOf(mcp.callTool({ name: "long" }, { timeoutMs: 100, resetTimeoutOnProgress: true, maxTotalTimeoutMs: 300 }));
    await vi.advanceTimersByTimeAsync(100);
    expect((call.error as CallTimeoutError).code).toBe("REQUEST_TIMEOUT");
  });
});

describe("C05 resetTimeoutOnProgress works without onprogress (rule 20)", () => {
  it("C05 a progress token is sent, unique per request, and its progress extends the timer", async () => {
    const { mcp, peer } = await connectPeer({ timeoutMs: 100, resetTimeoutOnProgress: true });
    const first = settleOf(mcp.callTool({ name: "a" }));
    const second = settleOf(mcp.callTool({ name: "b" }));
    await flush();
    const tokens = peer.requests("tools/call").map((m) => (m.params!._meta as { progressToken?: unknown }).progressToken);
    expect(tokens.every((t) => t !== undefined)).toBe(true);
    expect(new Set(tokens).size).toBe(2);
    await vi.advanceTimersByTimeAsync(90);
    await peer.progress(tokens[0], 1);
    await vi.advanceTimersByTimeAsync(10);
    expect(first.status).toBe("pending"); // extended by its progress
    expect(second.status).toBe("rejected"); // no progress: timed out at 100
    await vi.advanceTimersByTimeAsync(90);
    expect(first.status).toBe("rejected");
  });

  it("C05 with reset off and no callback, no token is sent", async () => {
    const { mcp, peer } = await connectPeer();
    const call = settleOf(mcp.callTool({ name: "a" }));
    await flush();
    expect(peer.requests("tools/call")[0]!.params!._meta).toBeUndefined();
    await peer.result(1);
    await flush();
    expect(call.status).toBe("fulfilled");
  });
});

describe("C06 progress arriving with the response (rule 22)", () => {
  it("C06 progress 100/100 then the result in one go: the result is delivered, nothing is raised", async () => {
    const { mcp, peer, errors } = await connectPeer();
    const seen: number[] = [];
    const call = settleOf(mcp.callTool({ name: "a" }, { onprogress: (p) => seen.push(p.progress) }));
    await flush();
    void peer.progress(1, 100, 100);
    void peer.result(1);
    void peer.progress(1, 100, 100); // a straggler after the result
    await flush();
    expect(call.status).toBe("fulfilled");
    expect(seen).toEqual([100]);
    expect(errors).toEqual([]);
    expect(mcp.records()[0]).toMatchObject({ status: "succeeded", progress: { count: 1 }, late: { progress: 1 } });
  });

  it("C06 progress 20 after a cancel is dropped and counted; a token never issued is an anomaly", async () => {
    const anomalies: Anomaly[] = [];
    const { mcp, peer, errors } = await connectPeer({ onAnomaly: (a) => anomalies.push(a) });
    const seen: number[] = [];
    settleOf(mcp.callTool({ name: "a" }, { timeoutMs: 50, onprogress: (p) => seen.push(p.progress) }));
    await vi.advanceTimersByTimeAsync(70);
    await peer.progress(1, 5);
    await peer.progress("never-issued", 1);
    await flush();
    expect(seen).toEqual([]);
    expect(errors).toEqual([]);
    expect(mcp.records()[0]!.late.progress).toBe(1);
    expect(anomalies.map((a) => a.kind)).toEqual(["unknown-progress-token"]);
  });
});

describe("C07 the timeout covers the whole wait, not only send() (rule 14)", () => {
  it("C07 a transport that accepts the send and never replies: rejects at 100", async () => {
    const { mcp } = await connectPeer();
    const call = settleOf(mcp.callTool({ name: "a" }, { timeoutMs: 100 }));
    await vi.advanceTimersByTimeAsync(99);
    expect(call.status).toBe("pending");
    await vi.advanceTimersByTimeAsync(1);
    expect(call.status).toBe("rejected");
  });
});

describe("C08 every call settles and nothing is held afterwards", () => {
  it("C08 100 calls, half aborted at 10 and half timed out at 20: all settle, all maps empty, late replies discarded", async () => {
    const { mcp, peer, client, errors } = await connectPeer();
    const controller = new AbortController();
    const calls = Array.from({ length: 100 }, (_, i) =>
      settleOf(
        mcp.callTool(
          { name: "silent" },
          i % 2 === 0 ? { signal: controller.signal, timeoutMs: 1_000, resetTimeoutOnProgress: true } : { timeoutMs: 20 },
        ),
      ),
    );
    await vi.advanceTimersByTimeAsync(10);
    controller.abort();
    await vi.advanceTimersByTimeAsync(10);
    expect(calls.filter((c) => c.status === "rejected")).toHaveLength(100);
    expect(calls.filter((c) => isCallCancelledError(c.error))).toHaveLength(50);
    expect(calls.filter((c) => isCallTimeoutError(c.error))).toHaveLength(50);
    expect(mcp.pendingCount).toBe(0);
    expect(sdkMaps(client)).toEqual({ responses: 0, progress: 0, timeouts: 0 });
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    expect(peer.cancels()).toHaveLength(100);
    for (let id = 1; id <= 100; id++) void peer.result(id);
    await flush();
    expect(errors).toEqual([]);
    expect(mcp.records().filter((r) => r.outcome === "late-result-discarded")).toHaveLength(100);
    expect(mcp.tombstoneCount).toBe(100);
  });

  it("C08 tombstones stay within maxTombstones", async () => {
    const { mcp } = await connectPeer({ maxTombstones: 10, timeoutMs: 5 });
    for (let i = 0; i < 30; i++) settleOf(mcp.callTool({ name: "silent" }));
    await vi.advanceTimersByTimeAsync(5);
    expect(mcp.tombstoneCount).toBe(10);
    expect(mcp.pendingCount).toBe(0);
  });
});

describe("C09 no automatic re-send (rules 1, 7, 39)", () => {
  it("C09 a timed-out tools/call is not re-sent; a retry by the caller uses a new id after the old id's cancel", async () => {
    const { mcp, peer } = await connectPeer({ timeoutMs: 100 });
    const first = settleOf(mcp.callTool({ name: "a" }));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(first.status).toBe("rejected");
    expect(peer.requests("tools/call")).toHaveLength(1);
    peer.onRequest((m) => void peer.result(m.id));
    await mcp.callTool({ name: "a" });
    const wire = peer.received.filter((m) => m.method === "tools/call" || m.method === "notifications/cancelled");
    expect(wire.map((m) => [m.method, m.id ?? (m.params as { requestId: number }).requestId])).toEqual([
      ["tools/call", 1],
      ["notifications/cancelled", 1],
      ["tools/call", 2],
    ]);
  });

  it("C09 an initialize that times out is never cancelled: the client fails instead", async () => {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { InMemoryTransport } = await import("@modelcontextprotocol/sdk/inMemory.js");
    const { withCancellation } = await import("../../src/index.js");
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const received: Array<{ method?: string }> = [];
    serverTransport.onmessage = (m) => void received.push(m as { method?: string }); // never answers
    await serverTransport.start();
    const client = new Client({ name: "t", version: "1" });
    const mcp = withCancellation(client, clientTransport);
    const connecting = settleOf(client.connect(mcp.transport, { timeout: 100 }));
    await vi.advanceTimersByTimeAsync(100);
    await flush();
    expect(connecting.status).toBe("rejected");
    expect(received.map((m) => m.method)).toEqual(["initialize"]); // no notifications/cancelled
    await expect(mcp.request({ method: "initialize" })).rejects.toMatchObject({ code: "INVALID_OPTION", option: "request.method" });
  });
});

describe("C10 a cancel from the server never hits the client's call (rule 12)", () => {
  it("C10 notifications/cancelled for client call 7 is ignored and reported as an anomaly", async () => {
    const anomalies: Anomaly[] = [];
    const { mcp, peer } = await connectPeer({ onAnomaly: (a) => anomalies.push(a) });
    peer.onRequest((m) => {
      if (m.id !== 7) void peer.result(m.id);
    });
    for (let i = 0; i < 6; i++) await mcp.callTool({ name: "warmup" });
    const call = settleOf(mcp.callTool({ name: "seven" }));
    await flush();
    expect(peer.requests("tools/call").at(-1)!.id).toBe(7);
    await peer.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7, reason: "server says stop" } });
    await flush();
    expect(call.status).toBe("pending");
    expect(anomalies).toEqual([expect.objectContaining({ kind: "server-cancelled-client-request", requestId: 7 })]);
    await peer.result(7);
    await flush();
    expect(call.status).toBe("fulfilled");
  });
});

describe("C13 the session is not poisoned by a cancel (rules 6, 8)", () => {
  it("C13 A's late result is discarded and tools/list, sent after the cancel, gets its own payload", async () => {
    const { mcp, peer, client, errors } = await connectPeer();
    const a = settleOf(mcp.callTool({ name: "slow" }, { timeoutMs: 50 }));
    await vi.advanceTimersByTimeAsync(50);
    expect(a.status).toBe("rejected");
    await vi.advanceTimersByTimeAsync(10);
    const list = settleOf(client.listTools());
    await flush();
    // the serial server finishes A first, then answers tools/list
    await peer.result(1);
    await peer.result(2, { tools: [{ name: "slow", inputSchema: { type: "object" } }] });
    await flush();
    expect(list.status).toBe("fulfilled");
    expect(list.value).toMatchObject({ tools: [{ name: "slow" }] });
    expect(mcp.records()[0]!.summary).toBe("cancelled (timeout), late result discarded");
    expect(errors).toEqual([]);
  });
});

describe("C14 a timeout releases everything, even with a long-lived caller signal", () => {
  it("C14 10,000 calls with mixed outcomes leave no timers, listeners, or pending entries", async () => {
    const { mcp, peer, client, errors } = await connectPeer({ timeoutMs: 50 });
    const session = new AbortController(); // lives for the whole bot session
    peer.onRequest((m) => {
      const n = m.id as number;
      if (n % 3 === 0) void peer.result(n);
      else if (n % 3 === 1) void peer.error(n, -32602, "Invalid params");
      // n % 3 === 2: silent, times out at 50
    });
    const outcomes = { fulfilled: 0, failed: 0, timeout: 0 };
    for (let batch = 0; batch < 10; batch++) {
      const calls = Array.from({ length: 1_000 }, () => settleOf(mcp.callTool({ name: "x" }, { signal: session.signal })));
      await vi.advanceTimersByTimeAsync(50);
      for (const c of calls) {
        if (c.status === "fulfilled") outcomes.fulfilled++;
        else if (isCallTimeoutError(c.error)) outcomes.timeout++;
        else outcomes.failed++;
      }
    }
    expect(outcomes.fulfilled + outcomes.failed + outcomes.timeout).toBe(10_000);
    expect(outcomes.timeout).toBeGreaterThan(3_000);
    expect(getEventListeners(session.signal, "abort")).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(mcp.pendingCount).toBe(0);
    expect(sdkMaps(client)).toEqual({ responses: 0, progress: 0, timeouts: 0 });
    expect(mcp.records()).toHaveLength(1_000); // maxRecords bound
    expect(errors).toEqual([]);
    session.abort(); // aborting the session afterwards touches no settled call
    expect(peer.cancels()).toHaveLength(outcomes.timeout);
  });
});
