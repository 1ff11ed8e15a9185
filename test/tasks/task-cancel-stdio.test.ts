// Issue 28, item 6: a task-augmented request is cancelled as the specification says (2025-11-25:
// `tasks/cancel`, never `notifications/cancelled`, rules 2 and 35), on the v1 SDK's own stdio
// server with a task store (test/fixtures/tasks/v1-stdio-task-server.mjs). Ten calls aborted right
// after their tools/call went out, before their CreateTaskResult: the SDK server would drop the
// CreateTaskResult of a request it was told to cancel, and the task would run to completion with
// its id never known. Here no notification goes out; each CreateTaskResult arrives, each task gets
// one tasks/cancel, and none completes. Real child process, real time: orders and counts.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, describe, expect, it } from "vitest";
import { TaskRequestError, isCallCancelledError, withCancellation } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { until } from "../helpers/timing.js";
import { otelRecorder } from "../../src/otel/index.js";
import { otelHarness } from "../otel/harness.js";

const script = new URL("../fixtures/tasks/v1-stdio-task-server.mjs", import.meta.url).pathname;
let closeClient: (() => Promise<void>) | undefined;
afterEach(async () => {
  await closeClient?.();
  closeClient = undefined;
});

describe("2025-11-25, the v1 SDK's own stdio server with a task store: calls cancelled before their task id was known", () => {
  it("10 calls aborted right after sending: no notifications/cancelled, each task created gets one tasks/cancel, none completes", async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [script], stderr: "pipe" });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const lines = () => stderr.split("\n");
    const read = (method: string) =>
      lines()
        .filter((line) => line.startsWith("RECV "))
        .map((line) => JSON.parse(line.slice(5)) as { method?: string; id?: unknown; params?: Record<string, unknown> })
        .filter((m) => m.method === method);
    const client = new Client({ name: "task-cancel", version: "1.0.0" });
    const records: RunRecord[] = [];
    const mcp = withCancellation(client, stdioCancellation(transport), { onRecord: (r) => records.push(r) });
    await client.connect(mcp.transport);
    closeClient = () => client.close();
    const errors: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const controller = new AbortController();
      const call = mcp.callTool({ name: "report", arguments: { ms: 1_000 } }, { task: true, signal: controller.signal });
      // Aborted right after the send (the line is written by then), before the server could answer.
      setImmediate(() => controller.abort());
      errors.push(await call.catch((error: unknown) => error));
      await until(() => read("tools/call").length > i); // the server read it: the request was sent
    }
    expect(errors.every((error) => isCallCancelledError(error))).toBe(true);
    const created = () =>
      lines()
        .filter((line) => line.startsWith("CREATED "))
        .map((line) => line.slice("CREATED ".length));
    await until(() => created().length === 10);
    const fates = () => lines().filter((line) => line.startsWith("FATE "));
    await until(() => fates().length === 10, 5_000);
    expect(fates().filter((line) => !line.endsWith(" cancelled"))).toEqual([]); // none ran to completion
    expect(read("notifications/cancelled")).toEqual([]); // never for a task-augmented request (rules 2, 35)
    const cancels = read("tasks/cancel").map((m) => m.params?.taskId);
    expect([...cancels].sort()).toEqual([...created()].sort()); // exactly one each
    await until(() => [...new Map(records.map((r) => [r.callId, r])).values()].every((r) => r.outcome === "task-cancelled"));
    const last = [...new Map(records.map((r) => [r.callId, r])).values()];
    for (const record of last) {
      expect(record).toMatchObject({
        status: "cancelled",
        cancel: { trigger: "aborted", mechanism: "tasks/cancel", undelivered: null },
        task: { status: "cancelled", revision: "2025-11-25" },
      });
    }
    // Most aborts beat the CreateTaskResult (the server may answer within the same millisecond):
    // those records say the task was cancelled after it was created.
    expect(last.filter((r) => r.task?.createdAfterCancel === true).length).toBeGreaterThan(0);
    expect(mcp.pendingCount).toBe(0);
  }, 30_000);

  it("a task that ends failed, its tasks/result a result with isError (as the SDK's servers store a failure): the call rejects with a TaskRequestError carrying that result, recorded failed", async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [script], stderr: "pipe" });
    const client = new Client({ name: "task-failed", version: "1.0.0" });
    const mcp = withCancellation(client, stdioCancellation(transport));
    await client.connect(mcp.transport);
    closeClient = () => client.close();
    const error = await mcp.callTool({ name: "report", arguments: { ms: 100, fail: true } }, { task: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskRequestError);
    const taskId = mcp.records().at(-1)!.task!.taskId;
    expect(error).toMatchObject({
      method: "tools/call",
      code: null,
      message: `task ${taskId} failed: report generator crashed`,
      data: { content: [{ type: "text", text: "report generator crashed" }], isError: true },
    });
    expect(mcp.records().at(-1)).toMatchObject({
      status: "failed",
      outcome: "error",
      task: { status: "failed" },
      error: { message: `task ${taskId} failed: report generator crashed` },
    });
    // The same tool ending well still resolves with its result.
    const ok = await mcp.callTool({ name: "report", arguments: { ms: 100 } }, { task: true });
    expect(ok).toMatchObject({ content: [{ type: "text", text: "report done in 100 ms" }] });
    expect(mcp.records().at(-1)).toMatchObject({ status: "succeeded", task: { status: "completed" } });
  }, 30_000);

  it("OpenTelemetry: the call span ends at the abort; a `task` follow-up span says what became of the task (outcome task-cancelled, mechanism tasks/cancel, the task id)", async () => {
    const otel = otelHarness();
    const transport = new StdioClientTransport({ command: process.execPath, args: [script], stderr: "pipe" });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const client = new Client({ name: "task-otel", version: "1.0.0" });
    const records: RunRecord[] = [];
    const mcp = withCancellation(client, stdioCancellation(transport), {
      onRecord: (r) => records.push(r),
      observer: otelRecorder({ tracer: otel.tracer, meter: otel.meter }),
    });
    await client.connect(mcp.transport);
    closeClient = async () => {
      await client.close();
      await otel.shutdown();
    };
    const controller = new AbortController();
    const call = mcp.callTool({ name: "report", arguments: { ms: 1_000 } }, { task: true, signal: controller.signal });
    setImmediate(() => controller.abort()); // before the CreateTaskResult: the task id is not known yet
    expect(isCallCancelledError(await call.catch((error: unknown) => error))).toBe(true);
    await until(() => records.at(-1)?.outcome === "task-cancelled", 5_000);
    const last = records.at(-1)!;
    const spans = otel.spans();
    const callSpan = spans.find((s) => s.name === "tools/call report")!;
    expect(callSpan.attributes).toMatchObject({
      "mcp_cancellable.call.outcome": "unverified",
      "mcp_cancellable.cancel.trigger": "aborted",
    });
    const taskSpans = spans.filter((s) => s.name === "task tools/call report");
    expect(taskSpans.length).toBeGreaterThanOrEqual(1);
    const final = taskSpans.at(-1)!;
    expect(final.parentSpanId).toBe(callSpan.spanId);
    expect(final.attributes).toMatchObject({
      "mcp_cancellable.call.outcome": "task-cancelled",
      "mcp_cancellable.cancel.mechanism": "tasks/cancel",
      "mcp_cancellable.task.id": last.task!.taskId,
      "mcp_cancellable.task.status": "cancelled",
      "mcp_cancellable.record.revision": last.revision,
    });
    expect(final.events.map((e) => [e.name, e.attributes])).toEqual([
      ["mcp_cancellable.task", { "mcp_cancellable.call.outcome": "task-cancelled", "mcp_cancellable.task.status": "cancelled" }],
    ]);
    // One `task` span per revision after the settle, none for the settle itself; and one `cancel`
    // span for the revision whose tasks/cancel left (the late CreateTaskResult's task), at that time.
    const children = spans.filter((s) => s.parentSpanId === callSpan.spanId);
    expect(children.filter((s) => s.name === "task tools/call report")).toHaveLength(last.revision);
    expect(
      children.filter((s) => s.name === "cancel tools/call report").map((s) => s.attributes["mcp_cancellable.cancel.mechanism"]),
    ).toEqual(["tasks/cancel"]);
  }, 30_000);
});
