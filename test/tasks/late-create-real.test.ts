// Calls cancelled right after sending, before their task id was known, against real servers
// (issue 20, item 1): every task the server created for them ends cancelled, none is left
// `working`. The v1 SDK server with a task store over Streamable HTTP (2025-11-25: the cancel is
// the POSTed notification, then the stream closes; the CreateTaskResult crosses it).
import { afterEach, describe, expect, it } from "vitest";
import { isCallCancelledError } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { connectV1 } from "../http/clients.js";
import { connectRaw2026Stdio, startV1TaskServer, methods } from "./servers.js";
import type { TaskServer } from "./servers.js";
import { until } from "../helpers/timing.js";

let server: TaskServer | undefined;
let closeClient: (() => Promise<void>) | undefined;
afterEach(async () => {
  await closeClient?.();
  await server?.stop();
  server = undefined;
  closeClient = undefined;
});

describe("2025-11-25, v1 SDK server with a task store over Streamable HTTP: calls aborted right after sending", () => {
  it("10 calls aborted as their tools/call goes out: every task created is cancelled (one tasks/cancel each), none left working", async () => {
    // Right after sending: each call is aborted as the server has read its tools/call, before the
    // server answers it (its CreateTaskResult is not back yet).
    const controllers: AbortController[] = [];
    let read = 0;
    server = await startV1TaskServer({ onToolCall: () => controllers[read++]?.abort() });
    const records: RunRecord[] = [];
    const peer = await connectV1(server.url, { onRecord: (r) => records.push(r) });
    closeClient = peer.close;
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 10; i++) {
      const controller = new AbortController();
      controllers.push(controller);
      calls.push(
        peer.mcp
          .callTool({ name: "report", arguments: { ms: 3_000 } }, { task: true, signal: controller.signal })
          .catch((error: unknown) => error),
      );
      await until(() => read > i); // one at a time, so the i-th request read is the i-th call's
    }
    const errors = await Promise.all(calls);
    expect(errors.every((error) => isCallCancelledError(error))).toBe(true);
    expect(methods(server, "tools/call")).toHaveLength(10);
    // Every task the server created gets its tasks/cancel, and ends cancelled.
    await until(() => server!.statuses().length > 0 && server!.statuses().every((status) => status === "cancelled"));
    const created = server.statuses().length;
    expect(created).toBe(10); // the server answered every tools/call with its task
    const cancels = methods(server, "tasks/cancel").map((m) => m.params!.taskId);
    expect(new Set(cancels).size).toBe(cancels.length); // at most one per task
    expect(cancels).toHaveLength(created);
    await until(() => records.filter((r) => r.outcome === "task-cancelled").length === created);
    const last = [...new Map(records.map((r) => [r.callId, r])).values()]; // each call's latest revision
    expect(last).toHaveLength(10);
    expect(last.filter((r) => r.task !== undefined)).toHaveLength(created);
    for (const record of last.filter((r) => r.task !== undefined)) {
      expect(record).toMatchObject({
        status: "cancelled",
        outcome: "task-cancelled",
        task: { status: "cancelled", createdAfterCancel: true },
      });
    }
    expect(server.statuses().filter((status) => status === "working")).toEqual([]);
    expect(methods(server, "notifications/cancelled")).toHaveLength(0); // never for a task-augmented request (rules 2, 36)
    expect(peer.mcp.pendingCount).toBe(0);
  }, 20_000);
});

describe("2026-07-28 extension over stdio: the v2 client pinned to 2026-07-28 and a scripted extension server", () => {
  it("10 calls aborted right after sending, whose server ignores the cancel: each task gets one tasks/cancel with the _meta the extension requires; none left working", async () => {
    const { mcp, records, read, lines, close } = await connectRaw2026Stdio("late-create-2026");
    closeClient = close;
    const errors = await Promise.all(
      Array.from({ length: 10 }, () => {
        const controller = new AbortController();
        // The server answers 50 ms after it read the request: the abort (at once) goes first.
        const call = mcp.callTool(
          { name: "report", arguments: { ms: 3_000, createDelayMs: 50 } },
          { task: true, signal: controller.signal },
        );
        setImmediate(() => controller.abort());
        return call.catch((error: unknown) => error);
      }),
    );
    expect(errors.every((error) => isCallCancelledError(error))).toBe(true);
    await until(() => lines().filter((line) => line.startsWith("CREATED ")).length === 10);
    await until(() => lines().filter((line) => / cancelled$/.test(line) && line.startsWith("FATE ")).length === 10);
    const created = lines()
      .filter((line) => line.startsWith("CREATED "))
      .map((line) => line.slice("CREATED ".length));
    const cancels = read("tasks/cancel");
    expect(cancels.map((m) => m.params?.taskId).sort()).toEqual([...created].sort()); // exactly one each
    for (const cancel of cancels) expect(cancel.params?._meta).toMatchObject({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" });
    expect(read("notifications/cancelled")).toHaveLength(0); // never for a task-augmented request (rules 2, 36)
    expect(lines().filter((line) => line.startsWith("FATE ") && !line.endsWith(" cancelled"))).toEqual([]);
    await until(() => [...new Map(records.map((r) => [r.callId, r])).values()].every((r) => r.outcome === "task-cancelled"));
    const last = [...new Map(records.map((r) => [r.callId, r])).values()];
    expect(last).toHaveLength(10);
    for (const record of last) {
      expect(record).toMatchObject({
        cancel: { mechanism: "tasks/cancel", undelivered: null },
        task: { status: "cancelled", revision: "2026-07-28", createdAfterCancel: true },
      });
    }
    expect(mcp.pendingCount).toBe(0);
  }, 20_000);
});
