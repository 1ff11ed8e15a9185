// Answers about a task that the driver must not take as they come (outside testers' findings): a
// tasks/get answered about another task, a CreateTaskResult with no task id, a status none of the
// five (rules 35, 36), one task id given to two calls, and a completed task's tasks/result given up
// with the call or cut by a lost connection. 2025-11-25 shapes against a scripted in-memory peer, then the 2026-07-28 ones
// against the scripted stdio server (test/fixtures/tasks/raw-2026-task-server.mjs).
import { afterEach, describe, expect, it } from "vitest";
import { TaskRequestError, isCallCancelledError } from "../../src/index.js";
import type { Anomaly, RunRecord } from "../../src/index.js";
import type { Message } from "../../src/core.js";
import { connectPeer } from "../helpers/peer.js";
import { until } from "../helpers/timing.js";
import { connectRaw2026Stdio } from "./servers.js";

const task = (status: string, taskId = "t1") => ({ taskId, status, ttl: 60_000, createdAt: "", lastUpdatedAt: "", pollInterval: 20 });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("task answers that are not trusted (2025-11-25)", () => {
  it("a tasks/get answered about another task (completed): the call fails naming tasks/get and both ids, the record keeps its own task working, and that task gets one tasks/cancel", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task("completed", "someone-else"));
      if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled"));
    });
    const error = await mcp
      .callTool({ name: "report" }, { task: true, timeoutMs: 5_000, maxTotalTimeoutMs: 2_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskRequestError);
    expect(error).toMatchObject({ method: "tasks/get", code: null });
    expect((error as Error).message).toBe(
      'tasks/get for task "t1" was answered about another task, "someone-else" (status "completed"): the answer is not trusted',
    );
    await until(() => peer.requests("tasks/cancel").length === 1);
    expect(peer.requests("tasks/cancel")[0]!.params).toEqual({ taskId: "t1" });
    expect(peer.requests("tasks/result")).toHaveLength(0);
    expect(records.at(-1)).toMatchObject({ status: "failed", outcome: "error", task: { taskId: "t1", status: "working" } });
    expect(mcp.pendingCount).toBe(0);
    await client.close();
  });

  for (const [name, created, fault] of [
    ["missing", { status: "working", ttl: 60_000, createdAt: "", lastUpdatedAt: "" }, "task.taskId is missing"],
    ["a number", { ...task("working"), taskId: 42 }, "task.taskId is not a string (42)"],
    ["empty", { ...task("working"), taskId: "" }, "task.taskId is empty"],
  ] as const) {
    it(`a CreateTaskResult whose task.taskId is ${name}: the call fails naming it, nothing claimed completed, nothing polled or cancelled`, async () => {
      const { client, mcp, peer, records } = await connectPeer();
      peer.onRequest((m: Message) => {
        if (m.method === "tools/call") void peer.result(m.id, { task: created });
      });
      const error = await mcp.callTool({ name: "report" }, { task: true, timeoutMs: 5_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TaskRequestError);
      expect(error).toMatchObject({ method: "tools/call", code: null });
      expect((error as Error).message).toBe(
        `malformed CreateTaskResult: ${fault}: the task the server may have made can be neither followed nor cancelled (no tasks/get, no tasks/cancel was sent); whether it runs is unknown`,
      );
      await sleep(60);
      expect(records.at(-1)).toMatchObject({ status: "failed", outcome: "error" });
      expect(records.some((r) => r.status === "succeeded")).toBe(false);
      expect(peer.requests("tasks/get")).toHaveLength(0);
      expect(peer.requests("tasks/cancel")).toHaveLength(0);
      expect(mcp.pendingCount).toBe(0);
      await client.close();
    });
  }

  it("a tasks/get status none of the five: the call fails at once naming it (no sign of life kept until the maximum total timeout), and the task gets one tasks/cancel", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task("bogus"));
      if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled"));
    });
    const started = Date.now();
    const error = await mcp
      .callTool({ name: "report" }, { task: true, timeoutMs: 300, maxTotalTimeoutMs: 10_000 })
      .catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error).toBeInstanceOf(TaskRequestError);
    expect((error as Error).message).toBe(
      'tasks/get for task "t1" answered status "bogus", which is none of the task statuses (working, input_required, completed, failed, cancelled; rules 35, 36)',
    );
    expect(peer.requests("tasks/get")).toHaveLength(1);
    await until(() => peer.requests("tasks/cancel").length === 1);
    expect(records.at(-1)).toMatchObject({ status: "failed", outcome: "error", task: { status: "working" } });
    await client.close();
  });

  it("a CreateTaskResult status none of the five: the call fails naming it, and the task gets one tasks/cancel", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("bogus") });
      if (m.method === "tasks/get") void peer.result(m.id, task("working"));
      if (m.method === "tasks/cancel") void peer.result(m.id, task("cancelled"));
    });
    const error = await mcp
      .callTool({ name: "report" }, { task: true, timeoutMs: 300, maxTotalTimeoutMs: 10_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskRequestError);
    expect((error as Error).message).toBe(
      'the CreateTaskResult of task "t1" has status "bogus", which is none of the task statuses (working, input_required, completed, failed, cancelled; rules 35, 36)',
    );
    await until(() => peer.requests("tasks/cancel").length === 1);
    expect(peer.requests("tasks/get")).toHaveLength(0);
    expect(records.at(-1)).toMatchObject({ status: "failed", outcome: "error" });
    await client.close();
  });

  it("one task id given to two calls: an anomaly when the second CreateTaskResult comes, and the second call's failure names this connection's tasks/cancel (the first call's), not another client", async () => {
    const anomalies: Anomaly[] = [];
    const { client, mcp, peer } = await connectPeer({ onAnomaly: (a) => void anomalies.push(a) });
    let status = "working";
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working", "dup") });
      if (m.method === "tasks/get") void peer.result(m.id, task(status, "dup"));
      if (m.method === "tasks/cancel") {
        status = "cancelled";
        void peer.result(m.id, task("cancelled", "dup"));
      }
    });
    const controller = new AbortController();
    const a = mcp.callTool({ name: "report" }, { task: true, signal: controller.signal }).catch((e: unknown) => e);
    await until(() => peer.requests("tasks/get").length > 0);
    const b = mcp.callTool({ name: "report" }, { task: true }).catch((e: unknown) => e);
    await until(() => anomalies.length > 0);
    expect(anomalies[0]).toMatchObject({ kind: "invalid-message" });
    expect(anomalies[0]!.message).toMatch(
      /names task "dup", which another call on this connection follows already: the server reused a task id/,
    );
    controller.abort();
    expect(isCallCancelledError(await a)).toBe(true);
    const error = await b;
    expect(error).toBeInstanceOf(TaskRequestError);
    expect((error as Error).message).toBe(
      'task dup ended with status "cancelled" (this call did not cancel it, but this connection sent a tasks/cancel for task dup for another call: the server gave two calls one task id)',
    );
    expect(peer.requests("tasks/cancel")).toHaveLength(1);
    await client.close();
  });

  it("a task cancelled by no call on this connection: the failure says so", async () => {
    const { client, mcp, peer } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task("cancelled"));
    });
    const error = await mcp.callTool({ name: "report" }, { task: true }).catch((e: unknown) => e);
    expect((error as Error).message).toBe(
      'task t1 ended with status "cancelled" (this call did not cancel it, nor did any other call on this connection: the server, or another client, did)',
    );
    await client.close();
  });

  it("a completed task whose tasks/result hangs, cut by the maximum total timeout: the record names the cancel of that read that went on the wire, with the trigger's reason, and claims no result", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task("completed"));
      // tasks/result: never answered
    });
    const error = await mcp.callTool({ name: "report" }, { task: true, timeoutMs: 5_000, maxTotalTimeoutMs: 300 }).catch((e: unknown) => e);
    expect((error as { code?: unknown }).code).toBe("MAX_TOTAL_TIMEOUT");
    const read = peer.requests("tasks/result");
    expect(read).toHaveLength(1);
    await until(() => peer.cancels().length === 1);
    const cancel = peer.cancels()[0]!;
    expect(cancel.params).toMatchObject({ requestId: read[0]!.id });
    const record = records.at(-1) as RunRecord & { cancel: { reason: string; mechanism: string; sentAt: string | null } };
    expect(cancel.params!.reason).toBe(record.cancel.reason);
    expect(record.cancel.reason).not.toBe("Cancelled by the client");
    expect(record).toMatchObject({
      outcome: "task-completed-anyway",
      cancel: { trigger: "max-total-timeout", mechanism: "notification" },
      summary: "cancelled (max-total-timeout), task completed anyway, result not returned",
    });
    expect(record.cancel.sentAt).not.toBeNull();
    expect(peer.requests("tasks/cancel")).toHaveLength(0); // terminal (rule 7)
    await client.close();
  });

  it("the connection lost while a completed task's tasks/result is awaited: the first record and the error say the task completed, as the maximum total timeout's do", async () => {
    const { client, mcp, peer, records } = await connectPeer();
    peer.onRequest((m: Message) => {
      if (m.method === "tools/call") void peer.result(m.id, { task: task("working") });
      if (m.method === "tasks/get") void peer.result(m.id, task("completed"));
      // tasks/result: never answered
    });
    const call = mcp.callTool({ name: "report" }, { task: true, timeoutMs: 5_000 }).catch((e: unknown) => e);
    await until(() => peer.requests("tasks/result").length === 1);
    await peer.close();
    const error = (await call) as Error & { record: RunRecord };
    expect(error.message).toMatch(/it ran: its task had completed as the call was given up, and its result was not returned/);
    expect(error.record).toMatchObject({ revision: 0, outcome: "task-completed-anyway", task: { status: "completed" } });
    expect(records.at(-1)).toMatchObject({
      outcome: "task-completed-anyway",
      summary: "cancelled (connection-closed), task completed anyway, result not returned",
    });
    await client.close();
  });
});

let closeClient: (() => Promise<void>) | undefined;
afterEach(async () => {
  await closeClient?.();
  closeClient = undefined;
});

async function connect2026() {
  const connection = await connectRaw2026Stdio("untrusted-2026");
  closeClient = connection.close;
  return connection;
}

describe("task answers that are not trusted (2026-07-28, scripted stdio server)", () => {
  it("a tasks/get answered about another task, completed with its result inline: the call fails, never resolves with that result", async () => {
    const { mcp, records, read } = await connect2026();
    const outcome = await mcp.callTool({ name: "report", arguments: { ms: 60_000, otherId: true } }, { task: true, timeoutMs: 5_000 }).then(
      (result) => ({ resolved: result }),
      (error: unknown) => ({ rejected: error }),
    );
    expect(outcome).not.toHaveProperty("resolved");
    const error = (outcome as { rejected: unknown }).rejected;
    expect(error).toBeInstanceOf(TaskRequestError);
    expect((error as Error).message).toMatch(
      /^tasks\/get for task "[^"]+" was answered about another task, "someone-else" \(status "completed"\)/,
    );
    await until(() => read("tasks/cancel").length === 1);
    expect(records.at(-1)).toMatchObject({ status: "failed", task: { status: "working", revision: "2026-07-28" } });
  }, 20_000);

  it("a CreateTaskResult in the 2025-11-25 nested shape: followed the 2026-07-28 way (the _meta protocol version on each request, revision 2026-07-28)", async () => {
    const { mcp, records, read } = await connect2026();
    const error = await mcp
      .callTool({ name: "report", arguments: { ms: 60_000, nested: true } }, { task: true, timeoutMs: 5_000, maxTotalTimeoutMs: 300 })
      .catch((e: unknown) => e);
    expect((error as { code?: unknown }).code).toBe("MAX_TOTAL_TIMEOUT");
    await until(() => records.at(-1)?.outcome === "task-cancelled");
    expect(records.at(-1)).toMatchObject({ cancel: { mechanism: "tasks/cancel" }, task: { status: "cancelled", revision: "2026-07-28" } });
    const followUps = [...read("tasks/get"), ...read("tasks/cancel")];
    expect(read("tasks/get").length).toBeGreaterThan(0);
    expect(read("tasks/cancel")).toHaveLength(1);
    for (const m of followUps) expect(m.params?._meta?.["io.modelcontextprotocol/protocolVersion"]).toBe("2026-07-28");
  }, 20_000);
});
