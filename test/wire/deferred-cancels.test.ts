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
  it("a cancel that comes while earlier ones wait in the slices still waits for its own hop (the input of its turn first, rule 7)", () => {
    const sent: number[] = [];
    const hops: (() => void)[] = [];
    const cancels = new DeferredCancels({
      send: (r) => (sent.push(r.requestId as number), "notification"),
      hop: (next) => hops.push(next),
    });
    let now = 0;
    const yields: (() => void)[] = [];
    const slicer = new Slicer({ clock: () => now, defer: (next) => yields.push(next), budgetMs: 5 });

    // A settle in this slicer defers cancel 1, whose hop then ends while the slicer is out of budget.
    slicer.run({
      step: () => {
        cancels.defer(request(1));
        return false;
      },
    });
    expect(hops).toHaveLength(1);
    slicer.run({
      step: () => {
        now += 10; // this step spent the slice's budget: what comes after waits for the yield
        hops.shift()!(); // the check phase: cancel 1 joins the slices (behind the budget)
        return false;
      },
    });
    expect(sent).toEqual([]);
    // Cancel 2 comes now: cancel 1 is queued in the slices, but 2 must wait for a hop of its own.
    cancels.defer(request(2));
    expect(hops).toHaveLength(1);
    yields.shift()!(); // the slicer goes on: cancel 1 goes, cancel 2 does not
    expect(sent).toEqual([1]);
    hops.shift()!(); // cancel 2's check phase
    for (let i = 0; i < 3 && yields.length > 0; i++) yields.shift()!();
    expect(sent).toEqual([1, 2]);
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
      failed: { mechanism: "notification", error: "not sent: the response arrived first (rule 7)" },
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
