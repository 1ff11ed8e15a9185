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

describe("DeferredCancels without a hop (the settle slicer's after-queue)", () => {
  it("sends a burst in the order it came, the answered left out and those deferred meanwhile taken, in one pass over what waits", () => {
    const sent: number[] = [];
    let cancels: DeferredCancels;
    const burst = 2_000;
    cancels = new DeferredCancels({
      send: (r) => {
        sent.push(r.requestId as number);
        if (r.requestId === 10) {
          cancels.answered({ jsonrpc: "2.0", id: 20, result: {} }); // its answer read meanwhile (rule 7)
          cancels.defer(request(burst + 1)); // another timer-fired cancel: behind the rest
        }
        return "notification";
      },
    });
    const now = 0;
    const yields: (() => void)[] = [];
    const slicer = new Slicer({ clock: () => now, defer: (next) => yields.push(next), budgetMs: 5 });
    // Each step of the drain used to take the next cancel from an iterator made afresh, which
    // walks every entry deleted before the first one left: one `entries()` a cancel, and a drain
    // quadratic in the burst (1.5 s for 100,000). One iterator for the whole drain now.
    const entries = vi.spyOn(Map.prototype, "entries");
    try {
      slicer.run({
        step: () => {
          for (let id = 1; id <= burst; id++) cancels.defer(request(id));
          return false;
        },
      });
      for (let i = 0; i < 100 && (yields.length > 0 || cancels.size > 0); i++) yields.shift()?.();
      expect(entries.mock.calls.length).toBeLessThanOrEqual(2);
    } finally {
      entries.mockRestore();
    }
    const expected = Array.from({ length: burst + 1 }, (_, i) => i + 1).filter((id) => id !== 20);
    expect(sent).toEqual(expected);
    expect(cancels.size).toBe(0);
  });
});
