import { afterEach, describe, expect, it, vi } from "vitest";
import { isCallCancelledError } from "../../src/index.js";
import { connectPeer, flush, settleOf } from "../helpers/peer.js";

// A signal shared by many pending calls settles them in slices (src/utils/slices.ts): a call whose
// turn has not come yet is still pending on the wire when its caller has already aborted. Rule 8:
// a response that arrives then is late; the abort came first, and the caller gets the abort.

const nextTask = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("a response that overtakes its call's abort in a mass settle", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("the call is cancelled (aborted), the response is counted late, and no cancel goes out for it", async () => {
    // The process's clock is the test's; every settle costs 20 ms of it (the slices are 5 ms).
    let now = 0;
    let costMs = 0;
    const { mcp, peer, records } = await connectPeer({ onRecord: () => void (now += costMs) });
    const ids: unknown[] = [];
    peer.onRequest((message) => ids.push(message.id));
    const controller = new AbortController();
    const calls = [0, 1, 2].map((i) => settleOf(mcp.callTool({ name: `t${i}`, arguments: {} }, { signal: controller.signal })));
    await flush();
    expect(ids).toHaveLength(3);
    await nextTask(); // the slicer's count starts anew
    vi.spyOn(performance, "now").mockImplementation(() => now);
    costMs = 20;
    controller.abort();
    // The first call settles in abort()'s own task; the other two wait for the next slice.
    await flush();
    expect(calls.map((c) => c.status)).toEqual(["rejected", "pending", "pending"]);
    // The server answers the second call before its turn.
    await peer.result(ids[1]);
    await flush();
    expect(calls[1]!.status).toBe("rejected");
    expect(isCallCancelledError(calls[1]!.error)).toBe(true);
    // Its caller reads that the tool ran (its answer came first), not only that it was cancelled.
    expect((calls[1]!.error as Error).message).toBe(
      "tools/call was cancelled by the caller (request id 2); it ran: the server's answer came as the call was given up and was discarded (late result discarded): check its effects before calling it again",
    );
    expect((calls[0]!.error as Error).message).toMatch(/; whether it ran is unknown \(outcome unverified\)/);
    for (let i = 0; i < 5 && calls[2]!.status === "pending"; i++) await nextTask();
    expect(calls.map((c) => c.status)).toEqual(["rejected", "rejected", "rejected"]);
    const second = records.find((r) => r.requestId === ids[1])!;
    expect(second.status).toBe("cancelled");
    expect(second.cancel?.trigger).toBe("aborted");
    expect(second.cancel?.mechanism).toBe("none");
    // Why nothing went, as the adapters' queues say it for a timer-fired cancel whose response came first (an outside tester's: null here).
    expect(second.cancel?.undelivered).toEqual({
      mechanism: "notification",
      error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)",
    });
    expect(second.cancel?.sentAt).toBeNull();
    const latest = mcp.records().find((r) => r.requestId === ids[1])!;
    expect(latest.outcome).toBe("late-result-discarded");
    expect(latest.late.results).toBe(1);
    // One cancel for each call whose response had not come: the first and the third, not the second.
    const cancelled = peer.cancels().map((m) => (m.params as { requestId: unknown }).requestId);
    expect(cancelled).toEqual([ids[0], ids[2]]);
    expect(mcp.pendingCount).toBe(0);
  });
});

describe("a shared signal aborted, then client.close() in the same tick (found from outside)", () => {
  it("every call settles as aborted with the signal's reason, also those the sliced abort had not reached when the close came", async () => {
    const { client, mcp, peer } = await connectPeer();
    peer.onRequest(() => {}); // never answers
    const shared = new AbortController();
    const calls = Array.from({ length: 3_000 }, (_, i) =>
      mcp.callTool({ name: `t${i}`, arguments: {} }, { signal: shared.signal, timeoutMs: 60_000 }).then(
        () => undefined,
        (error: unknown) => error,
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 50)); // every request on the wire
    const reason = new Error("user stop");
    shared.abort(reason);
    void client.close();
    const errors = await Promise.all(calls);
    const wrong = errors.filter((error) => !isCallCancelledError(error) || (error as Error).cause !== reason);
    expect(wrong).toHaveLength(0);
    expect(mcp.pendingCount).toBe(0);
  });
});
