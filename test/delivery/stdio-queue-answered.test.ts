// A cancel line waiting behind a full pipe whose request is answered meanwhile (rule 7): a server
// that stops reading stdin while it works lets its answer and the pipe's `drain` reach the client
// together. The line must then never be written: the answer ends the request. The queue writes what
// waits at the check phase after the `drain`, so the answers read by the same poll come first, and
// an answer drops its request's waiting line, with the record saying why. One fake stdin (the two
// orders of `drain` and answer, driven by hand) and one real child process (the soak found the
// crossing there: the notification written 0.4 to 7 ms after the server had written the response).
import { afterEach, describe, expect, it, vi } from "vitest";
import type { CancelRequest } from "../../src/adapters/types.js";
import type { Message } from "../../src/wire/messages.js";
import { fakeStdioQueue } from "./fake-stdio.js";
import { CallCancelledError } from "../../src/index.js";
import { spawnServer } from "../helpers/stdio.js";
import { until } from "../helpers/timing.js";
import { sleep } from "../helpers/reliability.js";

/** What a line still queued behind the full pipe tells its record at once: not out yet. */
const HELD = { sent: "notification", failed: null, sentWall: null };
const ANSWERED_FIRST = {
  sent: "none",
  failed: { mechanism: "notification", error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" },
};

function cancelRequest(requestId: number) {
  const delivery = vi.fn();
  const request: CancelRequest = {
    requestId,
    reason: "Cancelled by the client",
    notification: { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, reason: "Cancelled by the client" } },
    send: async () => {},
    reportError: () => {},
    delivery,
  };
  return { request, delivery };
}

const checkPhase = () => new Promise((resolve) => setImmediate(resolve));
/** Holds the thread `ms` or more (a busy event loop). */
const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};
const cancelled = (sent: Message[]) => sent.filter((m) => m.method === "notifications/cancelled").map((m) => m.params!.requestId);

describe("a waiting cancel line whose request is answered is never written (rule 7)", () => {
  it("the answer read while the pipe is still full: the line goes, the other waiting line is written at the drain", async () => {
    const { queue, sent, answer, drain } = fakeStdioQueue({ full: true });
    const one = cancelRequest(1);
    const two = cancelRequest(2);
    expect(queue.cancel(one.request)).toBe("notification");
    expect(queue.cancel(two.request)).toBe("notification");
    expect(queue.waiting).toBe(2);
    answer(1);
    expect(queue.waiting).toBe(1);
    // Its first record said "not out yet" (sentWall null), then that it never went (rule 7).
    expect(one.delivery.mock.calls.map(([report]) => report)).toEqual([HELD, ANSWERED_FIRST]);
    busy(2); // the pipe stays full 2 ms or more
    const beforeDrain = Date.now();
    drain();
    await checkPhase();
    expect(cancelled(sent)).toEqual([2]);
    // Written as planned; its record said "not out yet" (sentWall null) while it waited, then when it left (at the drain, not the settle).
    expect(two.delivery.mock.calls.map(([report]) => report)).toEqual([
      { sent: "notification", failed: null, sentWall: null },
      { sent: "notification", failed: null, sentWall: expect.any(Number) },
    ]);
    expect(two.delivery.mock.calls[1]![0].sentWall).toBeGreaterThanOrEqual(beforeDrain);
  });

  it("the drain first and the answer after it in the same turn: the lines wait for the check phase, so the answer still drops its own", async () => {
    const { queue, sent, answer, drain } = fakeStdioQueue({ full: true });
    const one = cancelRequest(1);
    const two = cancelRequest(2);
    queue.cancel(one.request);
    queue.cancel(two.request);
    drain(); // the poll's writable event before its readable one
    expect(cancelled(sent)).toEqual([]); // not in the drain callback
    answer(2);
    await checkPhase();
    expect(cancelled(sent)).toEqual([1]);
    expect(two.delivery.mock.calls.map(([report]) => report)).toEqual([HELD, ANSWERED_FIRST]);
    expect(queue.waiting).toBe(0);
  });

  it('an answer whose id is a string ("1" for request 1) drops the line too: the wire takes it as that request\'s response', async () => {
    const { queue, sent, answer, drain } = fakeStdioQueue({ full: true });
    const one = cancelRequest(1);
    const two = cancelRequest(2);
    queue.cancel(one.request);
    queue.cancel(two.request);
    answer("1");
    expect(queue.waiting).toBe(1);
    expect(one.delivery.mock.calls.map(([report]) => report)).toEqual([HELD, ANSWERED_FIRST]);
    answer("x2"); // no SDK reads a request id in it: it answers nothing here
    drain();
    await checkPhase();
    expect(cancelled(sent)).toEqual([2]);
  });

  it("closing while the lines wait for the check phase writes them at once, before the transport ends", async () => {
    const { queue, sent, drain } = fakeStdioQueue({ full: true });
    queue.cancel(cancelRequest(1).request);
    drain();
    await queue.close();
    expect(cancelled(sent)).toEqual([1]);
    await checkPhase();
    expect(cancelled(sent)).toEqual([1]); // once
  });
});

describe("a real server that stops reading while it works", () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => {});
  });

  it("a call aborted while the pipe is full, its line written when the server reads again: the record's sentAt is when it left, between the drain and the server's read", async () => {
    const server = await spawnServer("scripted-server.mjs", {}, ["--log-times"]);
    cleanup.push(() => server.client.close());
    const controller = new AbortController();
    const call = server.mcp.callTool({ name: "silent", arguments: {} }, { signal: controller.signal, timeoutMs: 20_000 });
    const settled = call.catch((error: unknown) => error);
    void server.mcp.callTool({ name: "block", arguments: { ms: 600 } }, { timeoutMs: 20_000 }).catch(() => {});
    await until(() => server.received().some((m) => m.params?.name === "block"));
    void server.mcp.callTool({ name: "silent", arguments: { pad: "x".repeat(256 * 1024) } }, { timeoutMs: 20_000 }).catch(() => {});
    const stdin = (server.transport as unknown as { _process: { stdin: { writableNeedDrain: boolean } } })._process.stdin;
    expect(stdin.writableNeedDrain).toBe(true);
    controller.abort();
    expect(await settled).toBeInstanceOf(CallCancelledError);
    // While the line waits behind the full pipe, the record does not claim it went out.
    expect(server.mcp.records()[0]!.cancel).toMatchObject({ mechanism: "notification", sentAt: null, undelivered: null });
    const blockedAt = server.receivedAt().find((m) => m.message.params?.name === "block")!.at;
    const id = server.received().find((m) => m.params?.name === "silent")!.id;
    const cancelRead = () =>
      server.receivedAt().filter((m) => m.message.method === "notifications/cancelled" && m.message.params?.requestId === id);
    await until(() => cancelRead().length > 0, 10_000);
    const record = server.mcp.records()[0]!;
    expect(record.cancel).toMatchObject({ trigger: "aborted", mechanism: "notification", undelivered: null });
    const sentAt = Date.parse(record.cancel!.sentAt!);
    // The pipe drained only once the 600 ms block was over; the server read the line after it left
    // (ms: the record's time is whole milliseconds).
    expect(sentAt).toBeGreaterThanOrEqual(Math.floor(blockedAt + 600) - 1);
    expect(sentAt).toBeLessThanOrEqual(Math.ceil(cancelRead()[0]!.at) + 1);
    expect(Date.parse(record.settledAt)).toBeLessThan(Math.floor(blockedAt + 600)); // released at the abort, not at the drain
    expect(cancelRead()).toHaveLength(1);
  }, 30_000);

  it("a call aborted while its cancel line waits behind the full pipe, answered before the server reads again: the server never gets the line; the record says why", async () => {
    const server = await spawnServer("scripted-server.mjs");
    cleanup.push(() => server.client.close());
    const controller = new AbortController();
    // Sent together, read together: the answer's 50 ms timer cannot fire before the 1,000 ms block ends.
    const call = server.mcp.callTool({ name: "late", arguments: { ms: 50 } }, { signal: controller.signal, timeoutMs: 20_000 });
    const settled = call.catch((error: unknown) => error);
    void server.mcp.callTool({ name: "block", arguments: { ms: 1_000 } }, { timeoutMs: 20_000 }).catch(() => {});
    await until(() => server.received().some((m) => m.params?.name === "block"));
    // The server is blocked: a 256 KB request fills the pipe, then the abort's cancel line waits.
    void server.mcp.callTool({ name: "silent", arguments: { pad: "x".repeat(256 * 1024) } }, { timeoutMs: 20_000 }).catch(() => {});
    const stdin = (server.transport as unknown as { _process: { stdin: { writableNeedDrain: boolean } } })._process.stdin;
    expect(stdin.writableNeedDrain).toBe(true);
    controller.abort();
    expect(await settled).toBeInstanceOf(CallCancelledError); // released at once, not after the pipe
    const id = server.received().find((m) => m.params?.name === "late")!.id;
    // The block ends: the server writes its answers (the late one's timer is overdue), then reads.
    await until(() => server.mcp.records()[0]!.late.results === 1, 10_000);
    await until(() => server.received().some((m) => m.params?.name === "silent"), 10_000);
    await sleep(100);
    expect(server.cancelsReceived().filter((m) => m.params?.requestId === id)).toEqual([]);
    const record = server.mcp.records()[0]!;
    expect(record.cancel).toMatchObject({
      trigger: "aborted",
      mechanism: "none",
      sentAt: null,
      undelivered: { mechanism: "notification", error: "not sent: the response arrived first (rule 7 in docs/spec-rules.md)" },
    });
    expect(record.outcome).toBe("late-result-discarded");
    // Not sent by choice (rule 7), not a failed delivery: the summary says the late result, no "not delivered".
    expect(record.summary).toBe("cancelled (aborted), late result discarded");
  }, 30_000);
});

describe("a timer-fired cancel line's time (its record's sentAt)", () => {
  it("is read before the line is written, not after: a send that holds the thread (a busy machine) lets the server read the line first (an outside tester's: sentAt 1 to 6 ms after the server's read)", async () => {
    let writing = 0;
    const { queue, sent } = fakeStdioQueue({
      onSend: (message) => {
        if (message.method !== "notifications/cancelled") return;
        writing = Date.now();
        busy(5);
      },
    });
    const { request, delivery } = cancelRequest(1);
    expect(queue.cancel({ ...request, byTimer: true })).toBe("notification"); // it goes at the check phase
    busy(2); // which comes 1 ms or more after the settle: the record learns when it left
    await checkPhase();
    expect(cancelled(sent)).toEqual([1]);
    const reports = delivery.mock.calls.map(([report]) => report as { sentWall?: number | null });
    expect(reports).toEqual([{ sent: "notification", failed: null, sentWall: expect.any(Number) }]);
    expect(reports[0]!.sentWall).toBeLessThanOrEqual(writing);
  });
});
