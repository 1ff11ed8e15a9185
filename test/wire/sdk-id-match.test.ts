import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CallTimeoutError } from "../../src/index.js";
import { connectPeer, flush, settleOf } from "../helpers/peer.js";

// A server that writes a request's id (or its progress token) as a string: "10" for 10. Both SDKs
// match a response by `Number(response.id)` and progress by `Number(progressToken)`, so they take
// it as that request's. The wire matches the same way: found from outside, a late "10" after
// the cancel reached the SDK as an unknown id (onerror) and the record stayed `unverified`, and
// progress for "2" was dropped as an unknown token while the SDK would have taken it.
// An in-memory peer, fake timers.

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe("ids and progress tokens as the SDK matches them", () => {
  it("a late result under the id as a string: cancelled, late result discarded (not an unknown id in onerror)", async () => {
    const { mcp, peer, errors, records } = await connectPeer();
    let id: unknown;
    peer.onRequest((message) => {
      if (message.method === "tools/call") id = message.id;
    });
    const call = settleOf(mcp.callTool({ name: "slow", arguments: {} }, { timeoutMs: 100 }));
    await vi.advanceTimersByTimeAsync(100);
    expect(call.error).toBeInstanceOf(CallTimeoutError);
    expect(typeof id).toBe("number");
    await peer.result(String(id));
    await flush();
    expect(records.at(-1)).toMatchObject({ outcome: "late-result-discarded", late: { results: 1 } });
    expect(errors).toEqual([]);
  });

  it("a result under the id as a string settles the call as the SDK does; the real id after it is late", async () => {
    const { mcp, peer, records } = await connectPeer();
    let id: unknown;
    peer.onRequest((message) => {
      if (message.method === "tools/call") id = message.id;
    });
    const call = settleOf(mcp.callTool({ name: "quick", arguments: {} }, { timeoutMs: 1_000 }));
    await flush();
    await peer.result(String(id));
    await flush();
    expect(call.status).toBe("fulfilled");
    await peer.result(id);
    await flush();
    expect(records.at(-1)).toMatchObject({ status: "succeeded", late: { results: 1 } });
  });

  it("progress under the token as a string reaches onprogress and resets the idle timeout, with no unknown-token anomaly", async () => {
    const anomalies: string[] = [];
    const { mcp, peer } = await connectPeer({ onAnomaly: (anomaly) => anomalies.push(anomaly.kind) });
    let token: unknown;
    let id: unknown;
    peer.onRequest((message) => {
      if (message.method !== "tools/call") return;
      id = message.id;
      token = (message.params as { _meta?: { progressToken?: unknown } })._meta?.progressToken;
    });
    const seen: number[] = [];
    const call = settleOf(
      mcp.callTool(
        { name: "slow", arguments: {} },
        { timeoutMs: 100, resetTimeoutOnProgress: true, onprogress: (p) => seen.push(p.progress) },
      ),
    );
    await vi.advanceTimersByTimeAsync(80);
    await peer.progress(String(token), 1);
    await vi.advanceTimersByTimeAsync(80);
    expect(call.status).toBe("pending"); // reset at 80 ms: not timed out at 160 ms
    await peer.result(id);
    await flush();
    expect(call.status).toBe("fulfilled");
    expect(seen).toEqual([1]);
    expect(anomalies).not.toContain("unknown-progress-token");
  });
});
