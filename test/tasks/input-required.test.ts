// 2025-11-25 input_required (issue 20, item 3): the v1 SDK server with a task store and a task
// message queue over Streamable HTTP on 127.0.0.1; its `ask` task asks the client with
// elicitation/create, queued for the task's tasks/result stream. The library calls tasks/result as
// soon as tasks/get says input_required; the elicitation reaches the v1 client's own handler and
// its answer completes the task; a cancel while the handler waits sends tasks/cancel and aborts it.
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { isCallCancelledError, withCancellation } from "../../src/index.js";
import type { RunRecord } from "../../src/index.js";
import { cancellableFetch, streamableHttpCancellation } from "../../src/adapters/streamable-http/index.js";
import { startV1TaskServer, methods } from "./servers.js";
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

async function connect(url: URL, onElicit: (message: string, signal: AbortSignal) => Promise<string>) {
  const client = new Client({ name: "input-required", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => ({
    action: "accept" as const,
    content: { reply: await onElicit(request.params.message, extra.signal) },
  }));
  const records: RunRecord[] = [];
  const adapter = streamableHttpCancellation(new StreamableHTTPClientTransport(url, { fetch: cancellableFetch() }));
  const mcp = withCancellation(client, adapter, { onRecord: (r) => records.push(r) });
  await client.connect(mcp.transport);
  closeClient = () => client.close();
  return { client, mcp, records };
}

describe("2025-11-25 input_required: v1 SDK client and the v1 SDK server with a task message queue (Streamable HTTP)", () => {
  it("tasks/result goes out on input_required; the elicitation reaches the client's handler; its answer resolves the call", async () => {
    server = await startV1TaskServer();
    const asked: string[] = [];
    const { mcp, records } = await connect(server.url, async (message) => {
      asked.push(message);
      return "yes";
    });
    const result = await mcp.callTool({ name: "ask", arguments: { question: "Proceed?" } }, { task: true, timeoutMs: 5_000 });
    expect(result.content).toEqual([{ type: "text", text: 'answered: {"reply":"yes"}' }]);
    expect(asked).toEqual(["Proceed?"]); // once, to the SDK's own handler
    // tasks/result was sent while the task waited (the server answers it only at the end).
    const results = methods(server, "tasks/result");
    expect(results.length).toBeGreaterThanOrEqual(1);
    const elicitAnswered = server.seen.findIndex((m) => m.method === undefined && m.id !== undefined);
    expect(server.seen.indexOf(results[0]!)).toBeLessThan(elicitAnswered); // asked for before the answer existed
    expect(records.at(-1)).toMatchObject({ status: "succeeded", task: { status: "completed", revision: "2025-11-25" } });
    expect(methods(server, "tasks/cancel")).toHaveLength(0);
    expect(mcp.pendingCount).toBe(0);
  });

  it("a cancel while the handler waits for a person: one tasks/cancel, the handler's signal aborts, the task never completes", async () => {
    server = await startV1TaskServer();
    let waiting: AbortSignal | undefined;
    let first = true;
    const { mcp, records } = await connect(server.url, (_message, signal) => {
      if (first) {
        // The v1 client ignores a cancel for request id 0 (SDK issue #2283): the first ask spends it.
        first = false;
        return Promise.resolve("first");
      }
      waiting = signal;
      return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true }));
    });
    await mcp.callTool({ name: "ask", arguments: { question: "warm-up" } }, { task: true, timeoutMs: 5_000 });
    const controller = new AbortController();
    const call = mcp
      .callTool({ name: "ask", arguments: { question: "Delete everything?" } }, { task: true, signal: controller.signal })
      .catch((error: unknown) => error);
    await until(() => waiting !== undefined);
    expect(waiting!.aborted).toBe(false);
    controller.abort();
    expect(isCallCancelledError(await call)).toBe(true);
    expect(waiting!.aborted).toBe(true); // at the cancel, before any answer from the server
    await until(() => records.at(-1)?.outcome === "task-cancelled");
    const cancels = methods(server, "tasks/cancel");
    expect(cancels).toHaveLength(1);
    expect(records.at(-1)).toMatchObject({ cancel: { mechanism: "tasks/cancel" }, task: { status: "cancelled" } });
    expect(cancels[0]!.params!.taskId).toBe(records.at(-1)!.task!.taskId);
    // The server's task store: the warm-up completed, the cancelled task stays cancelled (it is never answered).
    expect(server.statuses().sort()).toEqual(["cancelled", "completed"]);
    expect(server.fates.get(records.at(-1)!.task!.taskId)).toBeUndefined();
    expect(methods(server, "notifications/cancelled")).toHaveLength(0); // rule 35: never for a task
  });
});
