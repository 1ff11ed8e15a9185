// The task driver against a scripted in-memory peer (v1 client, 2025-11-25 shapes): what it does
// when tasks/cancel fails (-32602: the task is already terminal, rule 35), when the server never
// settles the task within the watch bound, and when a poll is never answered. A task whose polls
// answer is never cut by the idle timeout (test/tasks/idle.test.ts), so these cancel on the
// maximum total timeout.
import { describe, expect, it, vi } from "vitest";
import { isCallTimeoutError, isInvalidOptionError } from "../../src/index.js";
import { TaskRequestError } from "../../src/errors/TaskRequestError.js";
import type { Message } from "../../src/core.js";
import { connectPeer } from "../helpers/peer.js";
import { otelRecorder } from "../../src/otel/index.js";
import { otelHarness } from "../otel/harness.js";
import { until } from "../helpers/timing.js";

const task = (status: string) => ({ taskId: "t1", status, ttl: 60_000, createdAt: "", lastUpdatedAt: "", pollInterval: 20 });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("task driver", () => {
  it("a tasks/cancel refused with -32602 is no error for the caller; one tasks/get says the task completed anyway", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    let status = "working";
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task(status));
      if (m.method === "tasks/cancel") {
        status = "completed"; // it finished just before the cancel arrived
        void peer.error(m.id, -32602, "Cannot cancel task: already in terminal status 'completed'");
      }
    });
    const error = await mcp.callTool({ name: "report" }, { task: true, maxTotalTimeoutMs: 150 }).catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    await until(() => records.at(-1)?.outcome === "task-completed-anyway");
    expect(records.at(-1)!.summary).toBe("cancelled (max-total-timeout), task completed anyway, result not returned");
    expect(peer.requests("tasks/cancel")).toHaveLength(1);
    expect(peer.cancels()).toHaveLength(0);
    await client.close();
  });

  for (const [code, cancels] of [
    [-32603, 1],
    [-32602, 0],
  ] as const) {
    it(`a poll answered with a JSON-RPC error (${code}) fails the call with it; a task the server did not say is gone gets one tasks/cancel (${cancels})`, async () => {
      // An outside tester's: one -32603 on a poll failed the call and left its task running, followed by nobody.
      const { client, mcp, peer, records } = await connectPeer();
      peer.onRequest((m: Message) => {
        if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
        if (m.method === "tasks/get") void peer.error(m.id, code, code === -32602 ? "unknown task" : "transient internal error");
        if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled"));
      });
      const error = await mcp.callTool({ name: "report" }, { task: true }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TaskRequestError);
      expect((error as TaskRequestError).code).toBe(code);
      await sleep(50);
      expect(peer.requests("tasks/cancel")).toHaveLength(cancels);
      if (cancels === 1) expect(peer.requests("tasks/cancel")[0]!.params).toEqual({ taskId: "t1" });
      expect(peer.cancels()).toHaveLength(0);
      expect(records.at(-1)).toMatchObject({ status: "failed", outcome: "error" });
      expect(mcp.pendingCount).toBe(0);
      await client.close();
    });
  }

  const revoked = (): unknown => {
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    return revocable.proxy;
  };
  for (const [name, refusal] of [
    ["an Error", () => new Error("write EPIPE")],
    ["a revoked Proxy", revoked],
  ] as const) {
    it(`a tasks/cancel the transport refuses (${name}): the record says it was not sent, and nothing is unhandled (outside testers')`, async () => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
      process.on("unhandledRejection", onUnhandled);
      try {
        const otel = otelHarness();
        const { client, mcp, peer, records, transport } = await connectPeer({
          observer: otelRecorder({ tracer: otel.tracer, meter: otel.meter }),
        });
        const send = transport.send.bind(transport);
        transport.send = (message, options) =>
          "method" in message && message.method === "tasks/cancel" ? Promise.reject(refusal()) : send(message, options);
        peer.onRequest((m: Message) => {
          if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
          if (m.method === "tasks/get") void peer.result(m.id, task("working"));
        });
        const error = await mcp.callTool({ name: "report" }, { task: { watchMs: 300 }, maxTotalTimeoutMs: 100 }).catch((e: unknown) => e);
        expect(isCallTimeoutError(error)).toBe(true);
        await until(() => records.at(-1)?.cancel?.mechanism === "none");
        expect(records.at(-1)!.cancel!.undelivered).toMatchObject({ mechanism: "tasks/cancel" });
        expect(records.at(-1)!.cancel!.undelivered!.error).toMatch(
          /^not sent: the transport refused it \(.+\); the task was not cancelled$/,
        );
        expect(peer.requests("tasks/cancel")).toHaveLength(0);
        // The trace says it too: a cancel span with what did not get through, status ERROR (an
        // outside tester's: the revision went to a task span only, and no span carried it).
        const cancelSpan = otel.spans().find((span) => span.name === "cancel tools/call report");
        expect(cancelSpan?.attributes["mcp_cancellable.cancel.undelivered"]).toMatch(/^tasks\/cancel: not sent: the transport refused it/);
        expect(cancelSpan?.status.code).toBe(2);
        await otel.shutdown();
        await sleep(50);
        expect(unhandled).toEqual([]);
        expect(mcp.pendingCount).toBe(0);
        await client.close();
      } finally {
        process.off("unhandledRejection", onUnhandled);
      }
    });
  }

  it("a task the server never settles after the cancel stays unverified once watchMs is over, and polling stops", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get" || m.method === "tasks/cancel") void peer.result(m.id, task("working"));
    });
    const error = await mcp.callTool({ name: "report" }, { task: { watchMs: 200 }, maxTotalTimeoutMs: 100 }).catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    await sleep(400);
    const polls = peer.requests("tasks/get").length;
    await sleep(150);
    expect(peer.requests("tasks/get").length).toBe(polls);
    expect(records.at(-1)).toMatchObject({ outcome: "unverified", cancel: { mechanism: "tasks/cancel" }, task: { status: "working" } });
    expect(peer.requests("tasks/cancel")).toHaveLength(1);
    expect(mcp.pendingCount).toBe(0);
    await client.close();
  });

  it("a tasks/get given up unanswered (its own timeout) is cancelled the transport's way, once each (rule 15); the task-augmented tools/call never is (rule 35)", async () => {
    // An outside tester's: the unanswered poll was simply dropped, nothing said to the server.
    const { client, mcp, peer } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled"));
      // tasks/get: never answered
    });
    const error = await mcp.callTool({ name: "report" }, { task: { watchMs: 300 }, maxTotalTimeoutMs: 150 }).catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    await until(
      () =>
        peer.requests("tasks/get").length > 0 &&
        peer.requests("tasks/get").every((get) => peer.cancels().some((c) => (c.params as { requestId?: unknown }).requestId === get.id)),
      3_000,
    );
    await sleep(100);
    const gets = peer.requests("tasks/get").map((get) => get.id);
    const cancelled = peer.cancels().map((c) => (c.params as { requestId?: unknown }).requestId);
    expect(cancelled).toEqual(gets); // one each, in order, and nothing else
    expect(peer.cancels()[0]!.params).toMatchObject({ reason: expect.stringMatching(/^Request timed out after \d+ ms$/) });
    expect(peer.requests("tasks/cancel")).toHaveLength(1);
    await client.close();
  });

  it("a task that ends cancelled while the call is live (not its cancel): a TaskRequestError saying the status, not who cancelled it", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task("cancelled"));
    });
    const error = await mcp.callTool({ name: "report" }, { task: true, timeoutMs: 2_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskRequestError);
    expect((error as Error).message).toMatch(
      /^task \S+ ended with status "cancelled" \(this call did not cancel it, nor did any other call on this connection: the server, or another client, did\)$/,
    );
    expect(records.at(-1)).toMatchObject({ status: "failed", task: { status: "cancelled" } });
    expect(peer.requests("tasks/cancel")).toHaveLength(0);
    await client.close();
  });

  it("a task that fails resolves nothing: the caller gets the task's error from tasks/result", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task("failed"));
      if (m.method === "tasks/result") void peer.error(m.id, -32603, "report generator crashed");
    });
    const error = await mcp.callTool({ name: "report" }, { task: true, timeoutMs: 2_000 }).catch((e: unknown) => e);
    // The task's error, as on the other paths: method tools/call, not the tasks/result that carried it (an outside tester's).
    expect(error).toBeInstanceOf(TaskRequestError);
    expect(error).toMatchObject({ method: "tools/call", code: -32603, message: "report generator crashed" });
    expect(records.at(-1)).toMatchObject({ status: "failed", task: { status: "failed" } });
    expect(peer.requests("tasks/cancel")).toHaveLength(0);
    await client.close();
  });

  it("a completed task's tasks/result is bounded by the call's own limits, not watchMs: a result slower than watchMs still resolves the call (an outside tester's: lost at watchMs with timeoutMs time left)", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task("completed"));
      if (m.method === "tasks/result") setTimeout(() => void peer.result(m.id, { content: [{ type: "text", text: "report" }] }), 400);
    });
    const result = await mcp.callTool({ name: "report" }, { task: { watchMs: 100 }, timeoutMs: 2_000 });
    expect(result).toMatchObject({ content: [{ type: "text", text: "report" }] });
    expect(peer.requests("tasks/result")).toHaveLength(1);
    expect(records.at(-1)).toMatchObject({ status: "succeeded", task: { status: "completed" } });
    await client.close();
  });

  it("a call aborted after a poll said its task completed (its result on the way): the first record and the caller's error say so, not 'whether it ran is unknown' (an outside tester's)", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task("completed"));
      // tasks/result: never answered here
    });
    const controller = new AbortController();
    const call = mcp.callTool({ name: "report" }, { task: true, timeoutMs: 5_000, signal: controller.signal });
    await until(() => peer.requests("tasks/result").length === 1);
    controller.abort();
    const error = (await call.catch((e: unknown) => e)) as Error & { record: { revision: number; outcome: string } };
    expect(error.record).toMatchObject({ revision: 0, outcome: "task-completed-anyway" });
    expect(error.message).toMatch(
      /; it ran: its task had completed as the call was given up, and its result was not returned \(task completed anyway\)/,
    );
    expect(error.message).not.toMatch(/whether it ran is unknown/);
    expect(peer.requests("tasks/cancel")).toHaveLength(0); // terminal (rule 7)
    await sleep(50);
    expect(records.at(-1)).toMatchObject({
      outcome: "task-completed-anyway",
      summary: "cancelled (aborted), task completed anyway, result not returned",
    });
    await client.close();
  });

  it("a completed task whose tasks/result never comes: the call's idle timeout ends it, and the read is given up with it (no timer left)", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task("completed"));
    });
    // The read's timer is the longest a timer may be (the call's own limits bound the read): it must be cleared with the call.
    const longest = new Set<unknown>();
    const cleared = new Set<unknown>();
    const realSet = globalThis.setTimeout;
    const realClear = globalThis.clearTimeout;
    const setSpy = vi.spyOn(globalThis, "setTimeout").mockImplementation(((callback: () => void, ms?: number) => {
      const handle = realSet(callback, ms);
      if (ms === 2_147_483_647) longest.add(handle);
      return handle;
    }) as typeof setTimeout);
    const clearSpy = vi.spyOn(globalThis, "clearTimeout").mockImplementation(((handle?: unknown) => {
      cleared.add(handle);
      realClear(handle as never);
    }) as typeof clearTimeout);
    try {
      const started = performance.now();
      const error = await mcp.callTool({ name: "report" }, { task: { watchMs: 100 }, timeoutMs: 300 }).catch((e: unknown) => e);
      expect(isCallTimeoutError(error)).toBe(true);
      expect(performance.now() - started).toBeGreaterThanOrEqual(300);
      expect(peer.requests("tasks/result")).toHaveLength(1);
      expect(peer.requests("tasks/cancel")).toHaveLength(0); // terminal already (rule 7)
      expect(records.at(-1)).toMatchObject({ status: "cancelled", task: { status: "completed" } });
      await sleep(50);
      expect(longest.size).toBe(1);
      expect([...longest].every((handle) => cleared.has(handle))).toBe(true); // the read went with the call
    } finally {
      setSpy.mockRestore();
      clearSpy.mockRestore();
    }
    await client.close();
  });

  it("a task that fails with a result (isError), its tasks/result sent early on input_required: the call fails with a TaskRequestError carrying that result, after one tasks/get tells failed from completed", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    let status = "input_required";
    const failure = { content: [{ type: "text", text: "the person declined" }], isError: true };
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task(status));
      if (m.method === "tasks/result") {
        status = "failed";
        void peer.result(m.id, failure);
      }
    });
    const error = await mcp.callTool({ name: "report" }, { task: true, timeoutMs: 2_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskRequestError);
    expect(error).toMatchObject({ code: null, message: expect.stringMatching(/ failed: the person declined$/), data: failure });
    expect(records.at(-1)).toMatchObject({ status: "failed", task: { status: "failed" } });
    expect(peer.requests("tasks/result")).toHaveLength(1);
    expect(peer.requests("tasks/cancel")).toHaveLength(0);
    await client.close();
  });

  it("a status notification (2025-11-25 notifications/tasks/status) makes the driver look now; the same status again does not", async () => {
    const { client, mcp, peer } = await connectPeer();
    const slow = (status: string) => ({ ...task(status), pollInterval: 10_000 });
    let status = "working";
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: slow("working") });
      if (m.method === "tasks/get") void peer.result(m.id, slow(status));
      if (m.method === "tasks/result") void peer.result(m.id, { content: [{ type: "text", text: "report" }] });
    });
    const call = mcp.callTool({ name: "report" }, { task: true, timeoutMs: 30_000 });
    await until(() => peer.requests("tools/call").length === 1);
    await sleep(50);
    const notify = (s: string) =>
      peer.send({ jsonrpc: "2.0", method: "notifications/tasks/status", params: { ...task(s), pollInterval: 10_000 } });
    await notify("working"); // what the driver saw already: no request
    await sleep(100);
    expect(peer.requests("tasks/get")).toHaveLength(0);
    await notify("input_required"); // changed, not terminal: one look, then the server's interval again
    await until(() => peer.requests("tasks/get").length === 1);
    status = "completed";
    await notify("completed");
    await expect(call).resolves.toMatchObject({ content: [{ text: "report" }] });
    expect(peer.requests("tasks/get")).toHaveLength(2);
    expect(peer.requests("tasks/result")).toHaveLength(1);
    await notify("completed"); // after the end: nothing follows the task any more
    await sleep(100);
    expect(peer.requests("tasks/get")).toHaveLength(2);
    await client.close();
  });

  it("after a cancel, a status notification ends the watch at once with what became of the task", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    const slow = (status: string) => ({ ...task(status), pollInterval: 10_000 });
    let status = "working";
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: slow("working") });
      if (m.method === "tasks/get") void peer.result(m.id, slow(status));
      if (m.method === "tasks/cancel") void peer.result(m.id, slow("working")); // not yet stopped
    });
    // The maximum total timeout: the idle timeout counts from the first poll, 10 s away.
    const error = await mcp.callTool({ name: "report" }, { task: { watchMs: 20_000 }, maxTotalTimeoutMs: 100 }).catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    await until(() => peer.requests("tasks/cancel").length === 1);
    await sleep(50);
    status = "cancelled";
    const t0 = Date.now();
    await peer.send({ jsonrpc: "2.0", method: "notifications/tasks/status", params: slow("cancelled") });
    await until(() => records.at(-1)?.outcome === "task-cancelled");
    expect(Date.now() - t0).toBeLessThan(1_000); // the next poll was due in 10 s
    expect(peer.requests("tasks/get")).toHaveLength(1);
    await client.close();
  });

  it("verify works for task calls: its answer outranks what the task watch learned", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task("working"));
      if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled"));
    });
    const error = await mcp
      .callTool({ name: "report" }, { task: true, maxTotalTimeoutMs: 100, verifyDelayMs: 100, verify: () => "not-applied" })
      .catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    const verified = await (error as { verification: Promise<{ outcome: string }> }).verification;
    expect(verified.outcome).toBe("verified-not-applied");
    await until(() => records.at(-1)?.task?.status === "cancelled");
    expect(records.at(-1)).toMatchObject({ outcome: "verified-not-applied", cancel: { mechanism: "tasks/cancel" } });
    await client.close();
  });
});

describe("the task option, refused when it is neither true, false nor an object of task options", () => {
  it("names task, or task.<option>, and sends nothing; false is a plain call", async () => {
    const { client, mcp, peer } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { content: [{ type: "text", text: "plain" }] });
    });
    const cases: Array<[unknown, string, RegExp]> = [
      [
        5,
        "task",
        /task must be true \(every default\), an object such as \{ ttlMs: 60_000 \}, or false or undefined for a plain call; received 5/,
      ],
      ["yes", "task", /received "yes"/],
      [null, "task", /received null/],
      [[], "task", /received an array/],
      [new Date(0), "task", /received a Date/], // not taken for {} (every default)
      [{ bogus: 1 }, "task.bogus", /unknown option "bogus"/],
      [{ pollIntervalMs: 5 }, "task.pollIntervalMs", /"task.pollIntervalMs" must be an integer number of ms from 10/],
    ];
    for (const [task, option, message] of cases) {
      const error = await mcp.callTool({ name: "report" }, { task: task as never }).catch((e: unknown) => e);
      expect(isInvalidOptionError(error), JSON.stringify(task)).toBe(true);
      expect((error as { option: string }).option).toBe(option);
      expect((error as Error).message).toMatch(message);
    }
    // A ttl of the params' own task beside the option's: refused when they differ (an outside tester's: the option's was dropped).
    const twoTtls = await mcp.callTool({ name: "report", task: { ttl: 5 } } as never, { task: { ttlMs: 1_000 } }).catch((e: unknown) => e);
    expect(isInvalidOptionError(twoTtls)).toBe(true);
    expect(twoTtls).toMatchObject({ option: "task.ttlMs" });
    expect((twoTtls as Error).message).toBe(
      'call options: "task.ttlMs" (1000) and params.task.ttl (5) disagree: give the task\'s ttl in one of them',
    );
    expect(peer.requests("tools/call")).toHaveLength(0);
    await expect(mcp.callTool({ name: "report" }, { task: false })).resolves.toMatchObject({ content: [{ text: "plain" }] });
    expect(mcp.records().at(-1)).toMatchObject({ status: "succeeded" });
    expect((peer.requests("tools/call")[0]!.params as { task?: unknown }).task).toBeUndefined();
    await client.close();
  });
});
