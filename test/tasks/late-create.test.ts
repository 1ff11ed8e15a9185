// A CreateTaskResult that arrives after its call was cancelled names a task to cancel (issue 20,
// item 1): exactly one tasks/cancel at once, the task watched within watchMs, and the record names
// the task and what became of it. A scripted in-memory peer (v1 client, 2025-11-25 shapes) with
// fake timers fixes the order: the cancel goes out first, then the CreateTaskResult arrives.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { attachCancellation, isCallCancelledError, isCallTimeoutError } from "../../src/index.js";
import type { Message } from "../../src/core.js";
import type { RunRecord } from "../../src/index.js";
import { connectPeer, flush, settleOf } from "../helpers/peer.js";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const task = (status: string) => ({ taskId: "t1", status, ttl: 60_000, createdAt: "", lastUpdatedAt: "", pollInterval: 20 });

/** A task-augmented `report` call (watchMs 500) aborted right after its request went out: it has rejected. */
async function abortedAfterSending(mcp: { callTool: (params: { name: string }, options: object) => Promise<unknown> }): Promise<void> {
  const controller = new AbortController();
  const call = settleOf(mcp.callTool({ name: "report" }, { task: { watchMs: 500 }, signal: controller.signal }));
  await flush();
  controller.abort();
  await flush();
  expect(call.status).toBe("rejected");
}

describe("a late CreateTaskResult after a cancel: one tasks/cancel for its task, and the record names it", () => {
  const triggers = [
    { trigger: "aborted", options: (signal: AbortSignal) => ({ signal }), at: 10, isError: isCallCancelledError },
    { trigger: "timeout", options: () => ({ timeoutMs: 10 }), at: 10, isError: isCallTimeoutError },
    { trigger: "max-total-timeout", options: () => ({ maxTotalTimeoutMs: 10 }), at: 10, isError: isCallTimeoutError },
  ];
  for (const { trigger, options, at, isError } of triggers) {
    it(`cancelled (${trigger}) before its task id was known: the late CreateTaskResult's task gets exactly one tasks/cancel`, async () => {
      const { client, mcp, peer, records } = await connectPeer();
      let status = "working";
      peer.onRequest((m: Message) => {
        if (m.method === "tasks/cancel") {
          status = "cancelled";
          void peer.result(m.id, task("cancelled"));
        }
        if (m.method === "tasks/get") void peer.result(m.id, task(status));
      });
      const controller = new AbortController();
      const call = settleOf(mcp.callTool({ name: "report" }, { task: true, ...options(controller.signal) }));
      await flush();
      const [create] = peer.requests("tools/call");
      expect(create).toBeDefined();
      if (trigger === "aborted") controller.abort();
      await vi.advanceTimersByTimeAsync(at);
      expect(call.status).toBe("rejected");
      expect(isError(call.error)).toBe(true);
      // A task-augmented request is never cancelled with notifications/cancelled (rules 2, 35, 36):
      // its CreateTaskResult is awaited instead.
      expect(peer.cancels()).toHaveLength(0);
      expect(peer.requests("tasks/cancel")).toHaveLength(0); // no task id yet
      // The server created the task anyway (it ignored the cancel, rule 10, or the reply crossed it).
      await peer.result(create!.id, { task: task("working") });
      await flush();
      expect(peer.requests("tasks/cancel")).toHaveLength(1);
      expect(peer.requests("tasks/cancel")[0]!.params).toEqual({ taskId: "t1" });
      await vi.advanceTimersByTimeAsync(100);
      const record = records.at(-1)!;
      expect(record).toMatchObject({
        status: "cancelled",
        outcome: "task-cancelled",
        cancel: { trigger, mechanism: "tasks/cancel", undelivered: null },
        task: { taskId: "t1", status: "cancelled", revision: "2025-11-25", createdAfterCancel: true },
        late: { results: 0 },
      });
      expect(record.summary).toBe(`cancelled (${trigger}), task cancelled by the server`);
      expect(peer.requests("tasks/cancel")).toHaveLength(1); // exactly one, ever
      expect(mcp.pendingCount).toBe(0);
      await client.close();
    });
  }

  it("no CreateTaskResult within watchMs: nothing was sent for it, and the record says the task may exist uncancelled, naming what tasks/list lists", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tasks/list")
        void peer.result(m.id, {
          tasks: [
            { ...task("working"), taskId: "t9", createdAt: new Date().toISOString() },
            { ...task("completed"), taskId: "t8" },
          ],
        });
    });
    await abortedAfterSending(mcp);
    expect(records.at(-1)).toMatchObject({ cancel: { mechanism: "none", undelivered: null }, outcome: "unverified" });
    await vi.advanceTimersByTimeAsync(499);
    expect(peer.requests("tasks/list")).toHaveLength(0); // still waiting for it
    await vi.advanceTimersByTimeAsync(50);
    expect(peer.requests("tasks/list")).toHaveLength(1);
    expect(records.at(-1)!.cancel).toMatchObject({
      mechanism: "none",
      undelivered: {
        mechanism: "tasks/cancel",
        error:
          "no CreateTaskResult came within 500 ms (watchMs): the task may exist and was not cancelled; tasks/list names 1 task not terminal, created since the request: t9",
      },
    });
    expect(records.at(-1)!.summary).toBe("cancelled (aborted), outcome unverified, cancel tasks/cancel not delivered");
    expect(peer.cancels()).toHaveLength(0);
    expect(peer.requests("tasks/cancel")).toHaveLength(0);
    // It comes after all: its task is cancelled then, and the record says so.
    peer.onRequest((m: Message) => {
      if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled"));
    });
    await peer.result(peer.requests("tools/call")[0]!.id, { task: task("working") });
    await vi.advanceTimersByTimeAsync(50);
    expect(peer.requests("tasks/cancel")).toHaveLength(1);
    expect(records.at(-1)).toMatchObject({ cancel: { mechanism: "tasks/cancel", undelivered: null }, outcome: "task-cancelled" });
    await client.close();
  });

  it("the client closes while a CreateTaskResult is awaited: the wait ends at once (no timer left), and the record names the close, not watchMs", async () => {
    // An outside tester's: the wait's timer kept the process alive watchMs after the close, and
    // its revision then blamed watchMs.
    const { client, mcp, peer, records } = await connectPeer();
    await abortedAfterSending(mcp);
    expect(vi.getTimerCount()).toBeGreaterThan(0);
    await client.close();
    await flush();
    expect(records.at(-1)!.cancel).toMatchObject({
      mechanism: "none",
      undelivered: {
        mechanism: "tasks/cancel",
        error: "the connection closed before a CreateTaskResult came: the task may exist and was not cancelled",
      },
    });
    const revisions = records.length;
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(records).toHaveLength(revisions); // no watchMs revision after the close
    expect(peer.requests("tasks/cancel")).toHaveLength(0);
    expect(mcp.pendingCount).toBe(0);
  });

  it('a late CreateTaskResult under its id written as a string ("2" for request 2) still gets its one tasks/cancel, and the record names the task', async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled"));
    });
    await abortedAfterSending(mcp);
    // The server answers under the id as a string: the SDKs match it to the request, and so does
    // the tasks layer below the wire (an outside tester's: the task was left running).
    await peer.result(String(peer.requests("tools/call")[0]!.id) as never, { task: task("working") });
    await vi.advanceTimersByTimeAsync(50);
    expect(peer.requests("tasks/cancel")).toHaveLength(1);
    expect(records.at(-1)).toMatchObject({
      cancel: { mechanism: "tasks/cancel" },
      outcome: "task-cancelled",
      task: { taskId: "t1", createdAfterCancel: true },
    });
    await client.close();
  });

  it("answered without a task after the cancel (a plain result): a late result, and no word of a task that may exist", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    await abortedAfterSending(mcp);
    await peer.result(peer.requests("tools/call")[0]!.id, { content: [] });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(records.at(-1)).toMatchObject({ cancel: { mechanism: "none", undelivered: null }, outcome: "late-result-discarded" });
    expect(peer.requests("tasks/list")).toHaveLength(0);
    expect(peer.cancels()).toHaveLength(0);
    await client.close();
  });

  it("the record is named at once, then learns the task's end: completed anyway (tasks/cancel refused -32602, one tasks/get)", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tasks/cancel") void peer.error(m.id, -32602, "Cannot cancel task: already in terminal status 'completed'");
      if (m.method === "tasks/get") void peer.result(m.id, task("completed"));
    });
    const controller = new AbortController();
    const call = settleOf(mcp.callTool({ name: "report" }, { task: true, signal: controller.signal }));
    await flush();
    const [create] = peer.requests("tools/call");
    controller.abort();
    await flush();
    expect(call.status).toBe("rejected");
    await peer.result(create!.id, { task: task("working") });
    await vi.advanceTimersByTimeAsync(50);
    expect(records.at(-1)).toMatchObject({
      outcome: "task-completed-anyway",
      task: { taskId: "t1", status: "completed", createdAfterCancel: true },
    });
    expect(peer.requests("tasks/cancel")).toHaveLength(1);
    await client.close();
  });

  it("a late CreateTaskResult for a task already terminal gets no tasks/cancel (rule 7); one that is never settled stays unverified after watchMs", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tasks/cancel" || m.method === "tasks/get") void peer.result(m.id, task("working")); // never stops
    });
    const first = new AbortController();
    settleOf(mcp.callTool({ name: "report" }, { task: true, signal: first.signal }));
    await flush();
    first.abort();
    await flush();
    await peer.result(peer.requests("tools/call")[0]!.id, { task: { ...task("completed"), taskId: "done" } });
    await flush();
    expect(peer.requests("tasks/cancel")).toHaveLength(0);
    expect(records.at(-1)).toMatchObject({ outcome: "task-completed-anyway", task: { taskId: "done", createdAfterCancel: true } });

    const second = new AbortController();
    settleOf(mcp.callTool({ name: "report" }, { task: { watchMs: 200 }, signal: second.signal }));
    await flush();
    second.abort();
    await flush();
    await peer.result(peer.requests("tools/call")[1]!.id, { task: task("working") });
    await vi.advanceTimersByTimeAsync(500);
    const polls = peer.requests("tasks/get").length;
    await vi.advanceTimersByTimeAsync(500);
    expect(peer.requests("tasks/get").length).toBe(polls); // the watch ended
    expect(records.at(-1)).toMatchObject({ outcome: "unverified", task: { taskId: "t1", status: "working", createdAfterCancel: true } });
    expect(peer.requests("tasks/cancel")).toHaveLength(1);
    await client.close();
  });

  it("a late plain result after a cancel is still a late result discarded: no tasks/cancel", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    const controller = new AbortController();
    settleOf(mcp.callTool({ name: "report" }, { task: true, signal: controller.signal }));
    await flush();
    controller.abort();
    await flush();
    await peer.result(peer.requests("tools/call")[0]!.id); // the server answered at once, no task
    await flush();
    expect(records.at(-1)).toMatchObject({ outcome: "late-result-discarded", late: { results: 1 } });
    expect(peer.requests("tasks/cancel")).toHaveLength(0);
    await client.close();
  });
});

describe("a task-augmented call to a server that declared no task support: cancelled as any request (an outside tester's)", () => {
  it("aborted before its answer: one notifications/cancelled at once, no wait for a CreateTaskResult, and its plain answer after is late", async () => {
    const { client, mcp, peer, records } = await connectPeer({}, undefined, { tools: {} });
    await abortedAfterSending(mcp);
    // The server cannot make a task of it (no tasks.requests.tools.call): it runs it as a plain
    // call, which only notifications/cancelled stops (rules 2, 6).
    const [create] = peer.requests("tools/call");
    expect(peer.cancels()).toHaveLength(1);
    expect(peer.cancels()[0]!.params).toMatchObject({ requestId: create!.id });
    expect(records.at(-1)!.cancel).toMatchObject({ trigger: "aborted", mechanism: "notification", undelivered: null });
    await peer.result(create!.id, { content: [{ type: "text", text: "done anyway" }] });
    await vi.advanceTimersByTimeAsync(1_000); // past watchMs: nothing was awaited, nothing more said
    expect(peer.requests("tasks/cancel")).toHaveLength(0);
    expect(records.at(-1)).toMatchObject({ outcome: "late-result-discarded", late: { results: 1 }, cancel: { undelivered: null } });
    expect(mcp.pendingCount).toBe(0);
    await client.close();
  });
});

describe("the SDK's own task-augmented requests: a late CreateTaskResult after a cancel is a task to cancel too", () => {
  /** A v1 client connected to a scripted peer; `attach` routes its own calls through attachCancellation. */
  async function sdkPeer(attach: boolean) {
    if (!attach) {
      const { client, mcp, peer, records } = await connectPeer();
      return { client, peer, records: () => records, pending: () => mcp.pendingCount };
    }
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const received: Message[] = [];
    serverTransport.onmessage = (raw) => {
      const message = raw as Message;
      received.push(message);
      if (message.method === "initialize") {
        void serverTransport.send({
          jsonrpc: "2.0",
          id: message.id as number,
          result: {
            protocolVersion: (message.params as { protocolVersion: string }).protocolVersion,
            capabilities: { tools: {}, tasks: { requests: { tools: { call: {} } }, cancel: {} } },
            serverInfo: { name: "peer", version: "1.0.0" },
          },
        });
      }
      if (message.method === "tasks/cancel")
        void serverTransport.send({ jsonrpc: "2.0", id: message.id as number, result: task("cancelled") } as never);
    };
    await serverTransport.start();
    const client = new Client({ name: "test-bot", version: "1.0.0" });
    await client.connect(clientTransport);
    const records: RunRecord[] = [];
    const mcp = attachCancellation(client, { clock: () => Date.now(), onRecord: (r) => records.push(r) });
    const peer = {
      requests: (method: string) => received.filter((m) => m.method === method && m.id !== undefined),
      cancels: () => received.filter((m) => m.method === "notifications/cancelled"),
      result: (id: unknown, result: object) => serverTransport.send({ jsonrpc: "2.0", id: id as number, result } as never),
      onRequest: (_: (m: Message) => void) => {},
    };
    return { client, peer, records: () => records, pending: () => mcp.pendingCount };
  }

  for (const attach of [true, false]) {
    it(`${attach ? "through attachCancellation (a run record)" : "made on the SDK under withCancellation (no record)"}: aborted before its CreateTaskResult, its task gets one tasks/cancel`, async () => {
      const { client, peer, records, pending } = await sdkPeer(attach);
      peer.onRequest((m: Message) => {
        if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled"));
      });
      const controller = new AbortController();
      // The v1 SDK's own task-augmented request: params.task, as client.experimental.tasks sends it.
      const sent = settleOf(
        client.request({ method: "tools/call", params: { name: "report", arguments: {}, task: { ttl: 60_000 } } }, CreateTaskResultSchema, {
          signal: controller.signal,
        }),
      );
      await flush();
      const [create] = peer.requests("tools/call");
      expect(create).toBeDefined();
      controller.abort();
      await flush();
      expect(sent.status).toBe("rejected");
      expect(peer.cancels()).toHaveLength(0); // never for a task-augmented request (rules 2, 35, 36)
      await peer.result(create!.id, { task: task("working") });
      await vi.advanceTimersByTimeAsync(50);
      expect(peer.requests("tasks/cancel")).toHaveLength(1);
      expect(peer.requests("tasks/cancel")[0]!.params).toEqual({ taskId: "t1" });
      if (attach) {
        expect(records().at(-1)).toMatchObject({
          status: "cancelled",
          outcome: "task-cancelled",
          task: { taskId: "t1", status: "cancelled", createdAfterCancel: true },
        });
      }
      expect(pending()).toBe(0);
      await client.close();
    });
  }
});
