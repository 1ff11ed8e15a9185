// The idle timeout of a task-augmented call measures the server's silence (issue 20, item 2;
// rule 37): once the task exists, each answered tasks/get (any status), each status notification
// and each progress notification resets it; the maximum total timeout always holds. A scripted
// in-memory peer (v1 client, 2025-11-25 shapes) with fake timers fixes every time.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { isCallTimeoutError } from "../../src/index.js";
import type { Message } from "../../src/core.js";
import { connectPeer, flush, settleOf } from "../helpers/peer.js";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const task = (status: string, pollInterval = 50) => ({ taskId: "t1", status, ttl: 60_000, createdAt: "", lastUpdatedAt: "", pollInterval });
const done = { content: [{ type: "text", text: "report" }] };

/** Settles the promise's state and the fake time at which it settled. */
function timed<T>(promise: Promise<T>) {
  const state = settleOf(promise);
  const at = { ms: -1 };
  promise.then(
    () => (at.ms = Date.now()),
    () => (at.ms = Date.now()),
  );
  return { state, at };
}

describe("idle timeout of a task: answers keep it alive, silence cuts it, the maximum total timeout holds", () => {
  it("a task whose every poll answers working runs 900 ms past a 300 ms idle timeout and completes: no tasks/cancel", async () => {
    const { client, mcp, peer } = await connectPeer();
    const t0 = Date.now();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task(Date.now() - t0 >= 900 ? "completed" : "working"));
      if (m.method === "tasks/result") void peer.result(m.id, done);
    });
    const call = timed(mcp.callTool({ name: "report" }, { task: true, timeoutMs: 300 }));
    await vi.advanceTimersByTimeAsync(2_000);
    expect(call.state.status).toBe("fulfilled");
    expect(call.at.ms - t0).toBeGreaterThanOrEqual(900);
    expect(peer.requests("tasks/get").length).toBeGreaterThanOrEqual(18); // every 50 ms
    expect(peer.requests("tasks/cancel")).toHaveLength(0);
    expect(mcp.records().at(-1)).toMatchObject({ status: "succeeded", task: { status: "completed" } });
    await client.close();
  });

  it("a server suggesting polls 1 s apart, with a 300 ms idle timeout: the wait for the next poll is the client's own, so the task is polled and completes", async () => {
    const { client, mcp, peer } = await connectPeer();
    const t0 = Date.now();
    const polls: number[] = [];
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working", 1_000) });
      if (m.method === "tasks/get") {
        polls.push(Date.now() - t0);
        void peer.result(m.id, task(Date.now() - t0 >= 3_000 ? "completed" : "working", 1_000));
      }
      if (m.method === "tasks/result") void peer.result(m.id, done);
    });
    const call = timed(mcp.callTool({ name: "report" }, { task: true, timeoutMs: 300, maxTotalTimeoutMs: 10_000 }));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(call.state.status).toBe("fulfilled");
    expect(polls).toEqual([1_000, 2_000, 3_000]);
    expect(peer.requests("tasks/cancel")).toHaveLength(0);
    await client.close();
  });

  it("a poll the server leaves unanswered is cut one idle timeout after it went, however long the poll interval", async () => {
    const { client, mcp, peer } = await connectPeer();
    const t0 = Date.now();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working", 1_000) });
      // tasks/get: never answered
    });
    const call = timed(mcp.callTool({ name: "report" }, { task: { watchMs: 200 }, timeoutMs: 300 }));
    await vi.advanceTimersByTimeAsync(3_000);
    expect(call.state.status).toBe("rejected");
    expect(isCallTimeoutError(call.state.error)).toBe(true);
    expect(call.at.ms - t0).toBe(1_300); // the first poll at 1,000 ms, silence from there
    expect(peer.requests("tasks/cancel")).toHaveLength(1);
    await client.close();
  });

  it("a server that stops answering polls is cut one idle timeout after the first poll it left unanswered, with one tasks/cancel", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    const t0 = Date.now();
    let lastAnswer = -1;
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get" && Date.now() - t0 < 400) {
        lastAnswer = Date.now();
        void peer.result(m.id, task("working"));
      }
      // From 400 ms on: polls and the cancel go unanswered.
    });
    const call = timed(mcp.callTool({ name: "report" }, { task: { watchMs: 200 }, timeoutMs: 300 }));
    await vi.advanceTimersByTimeAsync(2_000);
    expect(call.state.status).toBe("rejected");
    expect(isCallTimeoutError(call.state.error)).toBe(true);
    expect(lastAnswer - t0).toBeGreaterThanOrEqual(350); // polls did answer until 400 ms
    // The poll after the last answer went an interval (50 ms) later: the silence counts from it.
    expect(call.at.ms - lastAnswer).toBeGreaterThanOrEqual(350);
    expect(call.at.ms - lastAnswer).toBeLessThanOrEqual(360);
    expect(peer.requests("tasks/cancel")).toHaveLength(1);
    expect(records.at(-1)).toMatchObject({ cancel: { trigger: "timeout", mechanism: "tasks/cancel" }, outcome: "unverified" });
    await client.close();
  });

  const signs = [
    {
      name: "status notifications (same status: no poll)",
      options: {},
      tick: (peer: Awaited<ReturnType<typeof connectPeer>>["peer"]) =>
        peer.send({ jsonrpc: "2.0", method: "notifications/tasks/status", params: task("working", 10_000) }),
    },
    {
      name: "progress, with resetTimeoutOnProgress off",
      options: { onprogress: () => {} },
      tick: (peer: Awaited<ReturnType<typeof connectPeer>>["peer"], token: unknown, n: number) => peer.progress(token, n),
    },
  ];
  for (const sign of signs) {
    // Polls 10 s apart; the one at 10 s goes unanswered: from then on the server is silent, but
    // for the signs of life.
    it(`${sign.name} keep a task alive whose poll goes unanswered; the end comes with the poll's answer`, async () => {
      const { client, mcp, peer } = await connectPeer();
      let token: unknown;
      const polls: Message[] = [];
      peer.onRequest((m: Message) => {
        if (m.method === "tools/call") {
          token = (m.params as { _meta?: { progressToken?: unknown } })._meta?.progressToken;
          void peer.result(m.id, { task: task("working", 10_000) });
        }
        if (m.method === "tasks/get") polls.push(m);
        if (m.method === "tasks/result") void peer.result(m.id, done);
      });
      const call = timed(
        mcp.callTool({ name: "report" }, { task: { watchMs: 5_000 }, timeoutMs: 300, resetTimeoutOnProgress: false, ...sign.options }),
      );
      await vi.advanceTimersByTimeAsync(10_000);
      expect(polls).toHaveLength(1);
      for (let n = 1; n <= 5; n++) {
        await vi.advanceTimersByTimeAsync(200);
        await sign.tick(peer, token, n);
      }
      expect(call.state.status).toBe("pending"); // 1,000 ms after the poll, idle timeout 300 ms
      await peer.result(polls[0]!.id, task("completed", 10_000));
      await vi.advanceTimersByTimeAsync(10);
      expect(call.state.status).toBe("fulfilled");
      expect(peer.requests("tasks/cancel")).toHaveLength(0);
      await client.close();
    });

    it(`without ${sign.name} the same task is cut one idle timeout after the poll it left unanswered`, async () => {
      const { client, mcp, peer } = await connectPeer();
      const t0 = Date.now();
      peer.onRequest((m: Message) => {
        if (m.method === "tools/call") void peer.result(m.id, { task: task("working", 10_000) });
        if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled", 10_000));
      });
      const call = timed(mcp.callTool({ name: "report" }, { task: { watchMs: 5_000 }, timeoutMs: 300, ...sign.options }));
      await vi.advanceTimersByTimeAsync(11_000);
      expect(call.state.status).toBe("rejected");
      expect(isCallTimeoutError(call.state.error)).toBe(true);
      expect(call.at.ms - t0).toBe(10_300);
      expect(peer.requests("tasks/cancel")).toHaveLength(1);
      await client.close();
    });
  }

  it("status notifications with a status none of the five are no sign of life: the task is cut one idle timeout after the poll it left unanswered", async () => {
    const { client, mcp, peer } = await connectPeer();
    const t0 = Date.now();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working", 10_000) });
      if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled", 10_000));
    });
    const call = timed(mcp.callTool({ name: "report" }, { task: { watchMs: 5_000 }, timeoutMs: 300 }));
    await vi.advanceTimersByTimeAsync(10_000);
    for (let n = 1; n <= 5; n++) {
      await vi.advanceTimersByTimeAsync(100);
      await peer.send({ jsonrpc: "2.0", method: "notifications/tasks/status", params: task("bogus", 10_000) });
    }
    await vi.advanceTimersByTimeAsync(1_000);
    expect(call.state.status).toBe("rejected");
    expect(isCallTimeoutError(call.state.error)).toBe(true);
    expect(call.at.ms - t0).toBe(10_300);
    await client.close();
  });

  it("the maximum total timeout holds over answered polls, status notifications and progress", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    let token: unknown;
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") {
        token = (m.params as { _meta?: { progressToken?: unknown } })._meta?.progressToken;
        void peer.result(m.id, { task: task("working") });
      }
      if (m.method === "tasks/get") void peer.result(m.id, task("working"));
      if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled"));
    });
    const t0 = Date.now();
    const call = timed(
      mcp.callTool(
        { name: "report" },
        { task: true, timeoutMs: 300, maxTotalTimeoutMs: 1_000, resetTimeoutOnProgress: true, onprogress: () => {} },
      ),
    );
    await flush();
    for (let n = 1; n <= 15; n++) {
      await vi.advanceTimersByTimeAsync(100);
      await peer.progress(token, n);
      await peer.send({ jsonrpc: "2.0", method: "notifications/tasks/status", params: task("working") });
    }
    expect(call.state.status).toBe("rejected");
    expect((call.state.error as { code?: unknown }).code).toBe("MAX_TOTAL_TIMEOUT");
    expect(call.at.ms - t0).toBeGreaterThanOrEqual(1_000);
    expect(call.at.ms - t0).toBeLessThanOrEqual(1_010);
    expect(peer.requests("tasks/cancel")).toHaveLength(1);
    expect(records.at(-1)).toMatchObject({
      cancel: { trigger: "max-total-timeout", mechanism: "tasks/cancel" },
      outcome: "task-cancelled",
    });
    await client.close();
  });
});
