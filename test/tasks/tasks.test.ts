// Task-augmented calls against real peers: the v1 SDK server with a task store over Streamable
// HTTP (2025-11-25 core tasks, rule 35) and a scripted 2026-07-28 server following the tasks
// extension (rule 36) with the v2 client pinned to 2026-07-28. Each asserts what went on the
// wire (exactly one tasks/cancel naming the task, no notifications/cancelled for a task) and
// the record.
import { afterEach, describe, expect, it } from "vitest";
import { isCallTimeoutError, isCallCancelledError, isInvalidOptionError } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { connectV1, connectV2 } from "../http/clients.js";
import { startRaw2026TaskServer, startV1TaskServer, methods } from "./servers.js";
import type { TaskServer } from "./servers.js";
import { until } from "../helpers/timing.js";
import { otelRecorder } from "../../src/otel/index.js";
import { otelHarness } from "../otel/harness.js";

let server: TaskServer | undefined;
let closeClient: (() => Promise<void>) | undefined;
afterEach(async () => {
  await closeClient?.();
  await server?.stop();
  server = undefined;
  closeClient = undefined;
});

describe("2025-11-25 core tasks: v1 SDK client and the v1 SDK server with a task store (Streamable HTTP)", () => {
  it("polls the task to its end and resolves with the final result; task progress keeps it alive (the 2025-11-25 Tasks specification)", async () => {
    server = await startV1TaskServer();
    const records: RunRecord[] = [];
    const peer = await connectV1(server.url, { onRecord: (r) => records.push(r) });
    closeClient = peer.close;
    // The server sends a task's progress on the standalone GET stream: wait until it is open.
    await until(() => methods(server!, "GET").length > 0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const progress: number[] = [];
    // Idle timeout 1,200 ms, task runs 3,000 ms: only its progress (every 600 ms) keeps it alive.
    const result = await peer.mcp.callTool(
      { name: "report", arguments: { ms: 3_000 } },
      { task: { ttlMs: 60_000 }, timeoutMs: 1_200, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p.progress) },
    );
    expect(result.content).toEqual([{ type: "text", text: "report done in 3000 ms" }]);
    expect(progress.length).toBeGreaterThanOrEqual(3);
    const record = records.at(-1)!;
    expect(record.status).toBe("succeeded");
    expect(record.task).toMatchObject({ status: "completed", revision: "2025-11-25" });
    expect(methods(server, "tools/call")[0]!.params!.task).toEqual({ ttl: 60_000 });
    expect(methods(server, "tasks/get").length).toBeGreaterThanOrEqual(1);
    expect(methods(server, "tasks/result")).toHaveLength(1);
    expect(methods(server, "tasks/cancel")).toHaveLength(0);
    expect(peer.anomalies.filter((a) => a.kind === "unknown-progress-token")).toEqual([]);
    expect(peer.mcp.pendingCount).toBe(0);
  });

  it("a 900 ms task with a 300 ms idle timeout and no progress completes: each answered poll is a sign of life (issue 20)", async () => {
    server = await startV1TaskServer({ pollInterval: 20 });
    const records: RunRecord[] = [];
    const peer = await connectV1(server.url, { onRecord: (r) => records.push(r) });
    closeClient = peer.close;
    // No onprogress, no resetTimeoutOnProgress: the request carries no progress token, so the
    // server sends no progress; only the polls' answers say the task lives.
    const result = await peer.mcp.callTool({ name: "report", arguments: { ms: 900 } }, { task: true, timeoutMs: 300 });
    expect(result.content).toEqual([{ type: "text", text: "report done in 900 ms" }]);
    expect(records.at(-1)).toMatchObject({ status: "succeeded", task: { status: "completed" }, progress: { count: 0 } });
    expect(methods(server, "tasks/get").length).toBeGreaterThanOrEqual(3);
    expect(methods(server, "tasks/cancel")).toHaveLength(0);
  });

  it("the server's notifications/tasks/status when the task ends is looked at at once: the result comes long before the next poll", async () => {
    server = await startV1TaskServer({ pollInterval: 10_000 }); // a server that asks for slow polling
    const peer = await connectV1(server.url);
    closeClient = peer.close;
    // The SDK server sends status notifications on the standalone GET stream: wait until it is open.
    await until(() => methods(server!, "GET").length > 0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const t0 = performance.now();
    const result = await peer.mcp.callTool({ name: "report", arguments: { ms: 300 } }, { task: true, timeoutMs: 5_000 });
    const elapsed = performance.now() - t0;
    expect(result.content).toEqual([{ type: "text", text: "report done in 300 ms" }]);
    expect(elapsed).toBeGreaterThanOrEqual(300);
    expect(elapsed).toBeLessThan(3_000); // the first poll was due at 10,000 ms
    expect(methods(server, "tasks/get")).toHaveLength(1); // one look, on the notification
    expect(methods(server, "tasks/result")).toHaveLength(1);
    expect(peer.mcp.pendingCount).toBe(0);
  });

  it("on its maximum total timeout sends exactly one tasks/cancel for its task, no notifications/cancelled, and records what became of it", async () => {
    server = await startV1TaskServer();
    const records: RunRecord[] = [];
    const peer = await connectV1(server.url, { onRecord: (r) => records.push(r) });
    closeClient = peer.close;
    const started = Date.now();
    const error = await peer.mcp
      .callTool({ name: "report", arguments: { ms: 2_000 } }, { task: true, maxTotalTimeoutMs: 200 })
      .catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_500); // released at once, not at the task's end
    await until(() => records.at(-1)?.outcome === "task-cancelled");
    const record = records.at(-1)!;
    const taskId = record.task!.taskId;
    expect(record.cancel).toMatchObject({ trigger: "max-total-timeout", mechanism: "tasks/cancel" });
    expect(record.summary).toBe("cancelled (max-total-timeout), task cancelled by the server");
    expect(record.task).toMatchObject({ status: "cancelled" });
    const cancels = methods(server, "tasks/cancel");
    expect(cancels).toHaveLength(1);
    expect(cancels[0]!.params).toMatchObject({ taskId });
    expect(methods(server, "notifications/cancelled")).toHaveLength(0);
    await until(() => server!.fates.get(taskId) === "cancelled");
    // Polling stopped: no tasks/get after the cancel's answer settles down.
    const polls = methods(server, "tasks/get").length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(methods(server, "tasks/get").length).toBe(polls);
    expect(peer.mcp.pendingCount).toBe(0);
  });

  it("the caller's signal cancels the task the same way (CANCELLED, never a timeout)", async () => {
    server = await startV1TaskServer();
    const peer = await connectV1(server.url);
    closeClient = peer.close;
    const controller = new AbortController();
    const pending = peer.mcp.callTool({ name: "report", arguments: { ms: 2_000 } }, { task: true, signal: controller.signal });
    await until(() => methods(server!, "tasks/get").length > 0);
    controller.abort();
    const error = await pending.catch((e: unknown) => e);
    expect(isCallCancelledError(error)).toBe(true);
    await until(() => methods(server!, "tasks/cancel").length === 1);
    expect(methods(server, "notifications/cancelled")).toHaveLength(0);
  });

  it("a tool whose execution.taskSupport is required, called without the task option, is refused naming the option", async () => {
    server = await startV1TaskServer();
    const peer = await connectV1(server.url);
    closeClient = peer.close;
    await peer.client.listTools(); // the v1 SDK learns execution.taskSupport from tools/list
    const error = await peer.mcp.callTool({ name: "report", arguments: { ms: 10 } }).catch((e: unknown) => e);
    expect(isInvalidOptionError(error)).toBe(true);
    expect(String((error as Error).message)).toMatch(/requires task-augmented execution.*task option/);
    expect(methods(server, "tools/call")).toHaveLength(0);
  });

  it("the same call through the SDK's own callTool (sdkClient, what LangChain calls) is refused by the SDK: recorded never sent, not as a server's error", async () => {
    server = await startV1TaskServer();
    const records: RunRecord[] = [];
    const otel = otelHarness();
    const peer = await connectV1(server.url, {
      onRecord: (r) => records.push(r),
      observer: otelRecorder({ tracer: otel.tracer, meter: otel.meter }),
    });
    closeClient = async () => {
      await peer.close();
      await otel.shutdown();
    };
    await peer.client.listTools();
    const error = await peer.mcp.sdkClient.callTool({ name: "report", arguments: { ms: 10 } }).catch((e: unknown) => e);
    expect((error as { code?: unknown }).code).toBe(-32600); // the SDK's own McpError, untouched
    expect(methods(server, "tools/call")).toHaveLength(0);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ status: "failed", outcome: "not-sent", requestId: null, error: { code: -32600 } });
    // The span: no request id, and no rpc.response.status_code (no server answered).
    const span = otel.spans().find((s) => s.name === "tools/call report")!;
    expect(span.attributes).toMatchObject({ "mcp_cancellable.call.outcome": "not-sent", "error.type": "-32600" });
    expect(span.attributes).not.toHaveProperty("rpc.response.status_code");
    expect(span.attributes).not.toHaveProperty("jsonrpc.request.id");
  });
});

describe("2026-07-28 tasks extension: v2 client pinned to 2026-07-28 and a scripted extension server (Streamable HTTP)", () => {
  it("declares the extension, polls tasks/get with Mcp-Name = taskId, and resolves with the inlined result", async () => {
    server = await startRaw2026TaskServer();
    const records: RunRecord[] = [];
    const peer = await connectV2(server.url, { pin: true, onRecord: (r) => records.push(r) });
    closeClient = peer.close;
    const result = await peer.mcp.callTool({ name: "report", arguments: { ms: 150 } }, { task: true, timeoutMs: 2_000 });
    expect(result.content).toEqual([{ type: "text", text: "report done in 150 ms" }]);
    const record = records.at(-1)!;
    expect(record.status).toBe("succeeded");
    expect(record.task).toMatchObject({ status: "completed", revision: "2026-07-28" });
    const gets = methods(server, "tasks/get");
    expect(gets.length).toBeGreaterThanOrEqual(2);
    for (const get of gets) {
      expect(get.mcpName).toBe(record.task!.taskId);
      expect(get.params!._meta).toMatchObject({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" });
    }
    expect(methods(server, "tasks/result")).toHaveLength(0); // removed in the extension
    expect(peer.mcp.pendingCount).toBe(0);
  });

  it("on its maximum total timeout sends exactly one tasks/cancel (empty acknowledgement), watches with tasks/get, records the cancelled task", async () => {
    server = await startRaw2026TaskServer();
    const records: RunRecord[] = [];
    const peer = await connectV2(server.url, { pin: true, onRecord: (r) => records.push(r) });
    closeClient = peer.close;
    const error = await peer.mcp
      .callTool({ name: "report", arguments: { ms: 5_000 } }, { task: true, maxTotalTimeoutMs: 120 })
      .catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    await until(() => records.at(-1)?.outcome === "task-cancelled");
    const record = records.at(-1)!;
    expect(record.summary).toBe("cancelled (max-total-timeout), task cancelled by the server");
    expect(record.cancel).toMatchObject({ mechanism: "tasks/cancel" });
    const cancels = methods(server, "tasks/cancel");
    expect(cancels).toHaveLength(1);
    expect(cancels[0]!).toMatchObject({ mcpName: record.task!.taskId, params: { taskId: record.task!.taskId } });
    expect(methods(server, "notifications/cancelled")).toHaveLength(0);
    expect(peer.mcp.pendingCount).toBe(0);
  });

  it("a 900 ms task with a 300 ms idle timeout completes: each answered tasks/get is a sign of life (issue 20)", async () => {
    server = await startRaw2026TaskServer();
    const peer = await connectV2(server.url, { pin: true });
    closeClient = peer.close;
    const result = await peer.mcp.callTool({ name: "report", arguments: { ms: 900 } }, { task: true, timeoutMs: 300 });
    expect(result.content).toEqual([{ type: "text", text: "report done in 900 ms" }]);
    expect(methods(server, "tasks/get").length).toBeGreaterThanOrEqual(3);
    expect(methods(server, "tasks/cancel")).toHaveLength(0);
  });

  it("a task that completes anyway after the cancel is recorded so, its result not returned", async () => {
    server = await startRaw2026TaskServer();
    const records: RunRecord[] = [];
    const peer = await connectV2(server.url, { pin: true, onRecord: (r) => records.push(r) });
    closeClient = peer.close;
    // The cancel goes at 100 ms; the server acknowledges it but lets the task go on (ignoreCancel),
    // so it completes at 300 ms whatever the load: the one outcome to record is "completed anyway"
    // (the cancel winning is the test above).
    const error = await peer.mcp
      .callTool({ name: "report", arguments: { ms: 300, ignoreCancel: true } }, { task: true, maxTotalTimeoutMs: 100 })
      .catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    await until(() => (records.at(-1)?.outcome ?? "").startsWith("task-"));
    expect(records.at(-1)!.outcome).toBe("task-completed-anyway");
    expect(records.at(-1)!.summary).toBe("cancelled (max-total-timeout), task completed anyway, result not returned");
    expect(methods(server, "tasks/cancel")).toHaveLength(1);
  });

  it("a verification that found the work not applied, then the task completed anyway: the record says it ran after all, not both", async () => {
    server = await startRaw2026TaskServer();
    const records: RunRecord[] = [];
    const peer = await connectV2(server.url, { pin: true, onRecord: (r) => records.push(r) });
    closeClient = peer.close;
    // The read comes at the cancel (100 ms), before the task completes (400 ms).
    const error = await peer.mcp
      .callTool(
        { name: "report", arguments: { ms: 400, ignoreCancel: true } },
        { task: { watchMs: 3_000 }, maxTotalTimeoutMs: 100, verify: () => "not-applied" },
      )
      .catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    await until(() => records.at(-1)?.task?.status === "completed");
    const last = records.at(-1)!;
    expect(last.outcome).toBe("task-completed-anyway");
    expect(last.summary).toBe(
      "cancelled (max-total-timeout), task completed anyway, result not returned: it ran after all (a verification had found it not applied)",
    );
    expect(last.verification?.reads.at(-1)?.found).toBe("not-applied"); // what the read found stays
    expect(records.some((r) => r.outcome === "verified-not-applied")).toBe(true); // an earlier revision said it
  });

  it("every revision says something new: a task watch that learned nothing more adds none", async () => {
    server = await startRaw2026TaskServer();
    const records: RunRecord[] = [];
    const peer = await connectV2(server.url, { pin: true, onRecord: (r) => records.push(r) });
    closeClient = peer.close;
    const error = await peer.mcp
      .callTool({ name: "report", arguments: { ms: 400, ignoreCancel: true } }, { task: { watchMs: 3_000 }, maxTotalTimeoutMs: 100 })
      .catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    await until(() => records.at(-1)?.outcome === "task-completed-anyway");
    await new Promise((resolve) => setTimeout(resolve, 200));
    const strip = ({ revision: _revision, ...rest }: RunRecord) => JSON.stringify(rest);
    for (let i = 1; i < records.length; i++) expect(strip(records[i]!)).not.toBe(strip(records[i - 1]!));
    expect(records.map((r) => r.revision)).toEqual(records.map((_, i) => i));
  });
});

describe("2025-11-25 core tasks over stdio: v1 SDK client and demo/task-server.ts (v1 McpServer, InMemoryTaskStore)", () => {
  async function connectStdio(dir: string, workMs: number) {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const { stdioCancellation } = await import("../../src/adapters/stdio/index.js");
    const { withCancellation } = await import("../../src/index.js");
    const script = new URL("../../demo/task-server.ts", import.meta.url).pathname;
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--import", import.meta.resolve("tsx"), script, "--dir", dir, "--work-ms", String(workMs)],
      stderr: "pipe",
    });
    const stderr: string[] = [];
    transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
    const client = new Client({ name: "stdio-task-test", version: "1.0.0" });
    const records: RunRecord[] = [];
    const mcp = withCancellation(client, stdioCancellation(transport), { onRecord: (r) => records.push(r) });
    await client.connect(mcp.transport);
    return { mcp, records, stderr: () => stderr.join(""), close: () => client.close() };
  }

  it("task progress keeps the task alive past the idle timeout; then the maximum total timeout sends one tasks/cancel and no notification", async () => {
    const { mkdtemp, rm } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = await mkdtemp(join(tmpdir(), "mcp-cancellable-task-test-"));
    const peer = await connectStdio(dir, 2_400);
    closeClient = async () => {
      await peer.close();
      await rm(dir, { recursive: true, force: true });
    };
    // 8 steps of 300 ms with progress; idle timeout 1,000 ms: only progress keeps it alive.
    const result = await peer.mcp.callTool(
      { name: "generate_quarterly_summary", arguments: { quarter: "Q1" } },
      { task: true, timeoutMs: 1_000, resetTimeoutOnProgress: true },
    );
    expect(JSON.stringify(result.content)).toContain("Q1-summary.md");
    expect(peer.records.at(-1)).toMatchObject({ status: "succeeded", task: { status: "completed" } });
    expect(peer.records.at(-1)!.progress.count).toBeGreaterThanOrEqual(3);

    const error = await peer.mcp
      .callTool({ name: "generate_quarterly_summary", arguments: { quarter: "Q2" } }, { task: true, maxTotalTimeoutMs: 500 })
      .catch((e: unknown) => e);
    expect(isCallTimeoutError(error)).toBe(true);
    await until(() => peer.records.at(-1)?.outcome === "task-cancelled");
    const taskId = peer.records.at(-1)!.task!.taskId;
    const lines = peer
      .stderr()
      .split("\n")
      .filter((line) => /read (tasks\/cancel|notifications\/cancelled)/.test(line));
    expect(lines).toEqual([`[task-server] read tasks/cancel {"taskId":"${taskId}"}`]);
    expect(peer.mcp.pendingCount).toBe(0);
  }, 20_000);

  it("a 900 ms task with no progress and a 300 ms idle timeout completes: the answered polls keep it alive (issue 20)", async () => {
    const { mkdtemp, rm } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = await mkdtemp(join(tmpdir(), "mcp-cancellable-task-test-"));
    const peer = await connectStdio(dir, 900);
    closeClient = async () => {
      await peer.close();
      await rm(dir, { recursive: true, force: true });
    };
    const result = await peer.mcp.callTool(
      { name: "generate_quarterly_summary", arguments: { quarter: "Q4" } },
      { task: true, timeoutMs: 300 },
    );
    expect(JSON.stringify(result.content)).toContain("Q4-summary.md");
    expect(peer.records.at(-1)).toMatchObject({ status: "succeeded", task: { status: "completed" }, progress: { count: 0 } });
    expect(peer.stderr()).not.toContain("read tasks/cancel");
  }, 20_000);
});
