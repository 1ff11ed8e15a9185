// The client closes its connection while a task-augmented call is under way (found from outside,
// pinned and 2025-era alike): a poll whose timer fires during the close could not go out, and the
// call failed with a bare `Error` ("tasks/get not sent: the connection is closed"), recorded
// `failed`; and a CreateTaskResult that came during the close (the SDK's close waits for the
// server to exit) was recorded as cancelled with `tasks/cancel` though nothing could go out.
// The v1 SDK's own stdio server with a task store (it lives on after stdin ends while its task
// timers run, so the close waits for it): real child process, real time; orders and counts.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { isConnectionClosedError, withCancellation } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { stdioCancellation } from "../../src/adapters/stdio/index.js";
import { until } from "../helpers/timing.js";

const script = new URL("../fixtures/tasks/v1-stdio-task-server.mjs", import.meta.url).pathname;

async function connect() {
  const transport = new StdioClientTransport({ command: process.execPath, args: [script], stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const received = (method: string) =>
    stderr
      .split("\n")
      .filter((line) => line.startsWith("RECV "))
      .map((line) => JSON.parse(line.slice(5)) as { method?: string })
      .filter((m) => m.method === method);
  const client = new Client({ name: "close-while-tasks", version: "1.0.0" });
  const records: RunRecord[] = [];
  const mcp = withCancellation(client, stdioCancellation(transport), { onRecord: (r) => records.push(r) });
  await client.connect(mcp.transport);
  return { client, mcp, records, received, stderr: () => stderr };
}

describe("client.close() while a task-augmented call is under way (v1 SDK stdio server, 2025-11-25 tasks)", () => {
  it("a task being polled (every 20 ms, the server alive for seconds after stdin ends): the call ends connection-closed, never a failed call", async () => {
    const { client, mcp, records, received } = await connect();
    const call = mcp.callTool({ name: "report", arguments: { ms: 3_000 } }, { task: true, timeoutMs: 10_000 });
    call.catch(() => {});
    await until(() => received("tasks/get").length >= 2, 5_000);
    await client.close(); // the SDK waits for the server to exit (2 s at most): polls fall due meanwhile
    const error = await call.catch((e: unknown) => e);
    expect(isConnectionClosedError(error)).toBe(true);
    const record = records.at(-1)!;
    expect(record).toMatchObject({ status: "cancelled", cancel: { trigger: "connection-closed", mechanism: "none" } });
    // The client's close, not a lost connection (an outside tester's: "when its connection was lost").
    expect(record.cancel!.reason).toBe("The client closed the connection");
    expect((error as Error).message).toMatch(/was pending when the client closed its connection/);
    expect(records.filter((r) => r.status === "failed")).toEqual([]);
    expect(received("tasks/cancel")).toEqual([]); // the task outlives the connection (no cancel at a close)
  }, 15_000);

  it("a CreateTaskResult that comes while the client closes: no tasks/cancel can go, and the record says the task was not cancelled", async () => {
    const { client, mcp, records, received } = await connect();
    const controller = new AbortController();
    const call = mcp.callTool({ name: "report", arguments: { ms: 2_000, createDelayMs: 400 } }, { task: true, signal: controller.signal });
    call.catch(() => {});
    await until(() => received("tools/call").length === 1, 5_000);
    controller.abort(); // before the task exists: nothing goes out yet (rules 2, 35)
    await call.catch(() => {});
    expect(records.at(-1)!.cancel).toMatchObject({ mechanism: "none" });
    await client.close(); // the CreateTaskResult comes at 400 ms, while the close waits for the server
    const last = records.at(-1)!;
    expect(last.task).toMatchObject({ createdAfterCancel: true });
    expect(last.cancel).toMatchObject({
      mechanism: "none",
      undelivered: { mechanism: "tasks/cancel", error: "not sent: the connection was closed (the task was not cancelled)" },
    });
    expect(last.cancel!.mechanism).not.toBe("tasks/cancel");
    expect(received("tasks/cancel")).toEqual([]);
  }, 15_000);
});
