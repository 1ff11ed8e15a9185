// The stdio queue's timer-fired cancels (byTimer): their line waits for the check phase of the
// turn (input first, rule 7), then goes with the rest of that turn's, at once. A fake port and a fake stdin: what matters is the order of sends,
// answers and closes, and that every deferred cancel's record is told what happened to its line.
import { describe, expect, it, vi } from "vitest";
import type { CancelRequest } from "../../src/adapters/types.js";
import type { Message } from "../../src/wire/messages.js";
import { fakeStdioQueue } from "./fake-stdio.js";

function cancelRequest(requestId: number, byTimer: boolean) {
  const delivery = vi.fn();
  const request: CancelRequest = {
    requestId,
    reason: "Request timed out after 50 ms",
    notification: { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, reason: "Request timed out after 50 ms" } },
    ...(byTimer ? { byTimer: true } : {}),
    send: async () => {},
    reportError: () => {},
    delivery,
  };
  return { request, delivery };
}

const checkPhase = () => new Promise((resolve) => setImmediate(resolve));
const cancels = (sent: Message[]) => sent.filter((m) => m.method === "notifications/cancelled").length;

describe("stdio queue: timer-fired cancels wait for the turn's input", () => {
  it("a user's abort goes out at once; a timer's waits for the check phase, then goes", async () => {
    const { queue, sent } = fakeStdioQueue();
    const aborted = cancelRequest(1, false);
    expect(queue.cancel(aborted.request)).toBe("notification");
    expect(cancels(sent)).toBe(1);
    expect(aborted.delivery).not.toHaveBeenCalled(); // it went when it could: the settle's time is its own
    const timed = cancelRequest(2, true);
    expect(queue.cancel(timed.request)).toBe("notification");
    expect(cancels(sent)).toBe(1);
    await checkPhase();
    expect(cancels(sent)).toBe(2);
    // Nothing failed: at most the time it went, when that was 1 ms or more after the check phase.
    for (const [report] of timed.delivery.mock.calls)
      expect(report).toEqual({ sent: "notification", failed: null, sentWall: expect.any(Number) });
  });

  it("a message sent after a timer's cancel (the caller's retry in the timeout's own continuation) goes after it: the waiting line goes first, at once", async () => {
    // An outside tester's: the retry reached the server before the timed-out call's notification,
    // every time (the line waited for the check phase; the retry was written at once).
    const { queue, sent } = fakeStdioQueue();
    const first = cancelRequest(1, true);
    const second = cancelRequest(2, true);
    queue.cancel(first.request);
    queue.cancel(second.request);
    expect(sent).toEqual([]);
    await queue.send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "retry" } });
    expect(sent.map((m) => (m.method === "notifications/cancelled" ? `cancel ${m.params!.requestId}` : `${m.method} ${m.id}`))).toEqual([
      "cancel 1",
      "cancel 2",
      "tools/call 3",
    ]);
    await checkPhase();
    expect(cancels(sent)).toBe(2); // not twice
    for (const { delivery } of [first, second]) for (const [report] of delivery.mock.calls) expect(report.sent).toBe("notification");
  });

  it("a user's abort of another call after a timer's cancel: the waiting line goes first, then the abort's, both at once", async () => {
    // An outside tester's: B timed out, B's rejection handler aborted A (a shared controller), and
    // A's cancel reached the server before B's.
    const { queue, sent } = fakeStdioQueue();
    const timed = cancelRequest(2, true);
    const aborted = cancelRequest(1, false);
    queue.cancel(timed.request);
    queue.cancel(aborted.request);
    expect(sent.map((m) => m.params!.requestId)).toEqual([2, 1]);
    await checkPhase();
    expect(cancels(sent)).toBe(2);
  });

  it("a busy turn: the line goes at the check phase 2 ms or more after its settle, and its record learns when it left", async () => {
    const { queue, sent } = fakeStdioQueue();
    const timed = cancelRequest(2, true);
    queue.cancel(timed.request);
    const end = performance.now() + 2;
    while (performance.now() < end); // the rest of the turn holds the loop
    const beforeCheck = Date.now();
    await checkPhase();
    expect(cancels(sent)).toBe(1);
    expect(timed.delivery).toHaveBeenCalledExactlyOnceWith({ sent: "notification", failed: null, sentWall: expect.any(Number) });
    expect(timed.delivery.mock.calls[0]![0].sentWall).toBeGreaterThanOrEqual(beforeCheck);
  });

  it("its answer read before the check phase: nothing is sent, the record says why (rule 7)", async () => {
    const { queue, sent, answer } = fakeStdioQueue();
    const timed = cancelRequest(3, true);
    queue.cancel(timed.request);
    answer(3);
    await checkPhase();
    expect(cancels(sent)).toBe(0);
    expect(timed.delivery).toHaveBeenCalledExactlyOnceWith({
      sent: "none",
      failed: { mechanism: "notification", error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" },
    });
  });

  it('its answer read before the check phase with its id as a string ("3" for request 3): nothing is sent either (rule 7)', async () => {
    const { queue, sent, answer } = fakeStdioQueue();
    const timed = cancelRequest(3, true);
    const other = cancelRequest(4, true);
    queue.cancel(timed.request);
    queue.cancel(other.request);
    answer("3");
    await checkPhase();
    expect(sent.filter((m) => m.method === "notifications/cancelled").map((m) => m.params!.requestId)).toEqual([4]);
    expect(timed.delivery).toHaveBeenCalledExactlyOnceWith({
      sent: "none",
      failed: { mechanism: "notification", error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" },
    });
  });

  it("the connection closed before the check phase: nothing is sent, and the record is told so (never a notification it never wrote)", async () => {
    const { queue, sent } = fakeStdioQueue();
    const timed = [cancelRequest(4, true), cancelRequest(5, true)];
    for (const { request } of timed) queue.cancel(request);
    queue.closed();
    await checkPhase();
    expect(cancels(sent)).toBe(0);
    for (const { delivery } of timed) {
      expect(delivery).toHaveBeenCalledExactlyOnceWith({
        sent: "none",
        failed: { mechanism: "notification", error: "not sent: the connection closed before the line was written" },
      });
    }
  });

  it("many at once: none before the check phase, then each once, in the order they came, in that check phase (deferred-cancels.ts)", async () => {
    const { queue, sent, answer } = fakeStdioQueue();
    const timed = Array.from({ length: 2_000 }, (_, i) => cancelRequest(100 + i, true));
    for (const { request } of timed) queue.cancel(request);
    // An answer read in this turn: that one is not sent (rule 7).
    answer(100 + 7);
    expect(cancels(sent)).toBe(0);
    await checkPhase();
    const ids = sent.filter((m) => m.method === "notifications/cancelled").map((m) => (m.params as { requestId: number }).requestId);
    expect(ids).toEqual(timed.map(({ request }) => request.requestId).filter((id) => id !== 107));
    expect(timed[7]!.delivery).toHaveBeenCalledExactlyOnceWith({
      sent: "none",
      failed: { mechanism: "notification", error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" },
    });
    // The rest: no failure told; at most a later sentWall (a line that went 1 ms or more after the check phase).
    for (const [i, { delivery }] of timed.entries()) {
      if (i === 7) continue;
      for (const [report] of delivery.mock.calls)
        expect(report).toEqual({ sent: "notification", failed: null, sentWall: expect.any(Number) });
    }
  });
});
