import { describe, expect, it, vi } from "vitest";
import type { CancelRequest } from "../../src/wire/types.js";
import { DeferredCancels } from "../../src/wire/deferred-cancels.js";
import { Slicer } from "../../src/utils/slices.js";

// The deferral of timer-fired cancels (src/wire/deferred-cancels.ts), with a hop run by hand and
// a slicer whose clock and yields the test drives: what goes out, in which order, and when.

function request(requestId: number): CancelRequest {
  return {
    requestId,
    reason: "Request timed out after 50 ms",
    notification: { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, reason: "Request timed out after 50 ms" } },
    byTimer: true,
    send: async () => {},
    reportError: () => {},
    delivery: vi.fn(),
  };
}

describe("DeferredCancels with a hop (stdio)", () => {
  it("the turn's cancels go at its hop, all of them, in order, whatever the slicer is doing; one that comes after the hop waits for the next", () => {
    const sent: number[] = [];
    const hops: (() => void)[] = [];
    const cancels = new DeferredCancels({
      send: (r) => (sent.push(r.requestId as number), "notification"),
      hop: (next) => hops.push(next),
    });
    let now = 0;
    const yields: (() => void)[] = [];
    // A slicer out of budget, with settles still waiting: the cancels do not wait for it (the soak
    // found cancels held back 130 ms behind a steady stream of settles, sent after the answers).
    const slicer = new Slicer({ clock: () => now, defer: (next) => yields.push(next), budgetMs: 5 });
    cancels.defer(request(1));
    cancels.defer(request(2));
    expect(hops).toHaveLength(1); // one hop for the turn
    expect(sent).toEqual([]); // not before the check phase: the turn's input first (rule 7)
    let steps = 0;
    slicer.run({
      step: () => {
        if (steps++ > 0) return false;
        now += 10; // the slice's budget is spent: the next step waits for the yield
        hops.shift()!(); // the check phase comes while settles are under way
        return true;
      },
    });
    expect(sent).toEqual([1, 2]);
    expect(slicer.pending).toBe(1); // the settle still waits for its slice; the cancels did not
    cancels.defer(request(3));
    expect(sent).toEqual([1, 2]);
    hops.shift()!();
    expect(sent).toEqual([1, 2, 3]);
    expect(cancels.size).toBe(0);
  });

  it("an answer read before the hop ends a cancel unsent; a close sends what waits, hop or not; a drop tells each record", () => {
    const sent: number[] = [];
    const hops: (() => void)[] = [];
    const unhop = vi.fn();
    const cancels = new DeferredCancels({
      send: (r) => (sent.push(r.requestId as number), "notification"),
      hop: (next) => hops.push(next),
      unhop,
    });
    const [a, b] = [request(1), request(2)];
    cancels.defer(a);
    cancels.defer(b);
    expect(hops).toHaveLength(1); // one hop for the turn
    cancels.answered({ jsonrpc: "2.0", id: 1, result: {} });
    expect(a.delivery).toHaveBeenCalledExactlyOnceWith({
      sent: "none",
      failed: { mechanism: "notification", error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" },
    });
    cancels.flush();
    expect(unhop).toHaveBeenCalledOnce();
    expect(sent).toEqual([2]);
    expect(cancels.size).toBe(0);

    const c = request(3);
    cancels.defer(c);
    cancels.drop("not sent: the connection closed before the line was written");
    expect(c.delivery).toHaveBeenCalledExactlyOnceWith({
      sent: "none",
      failed: { mechanism: "notification", error: "not sent: the connection closed before the line was written" },
    });
    expect(sent).toEqual([2]);
    expect(cancels.size).toBe(0);
  });
});
